import { useShallow } from 'zustand/react/shallow'
import { useAppStore } from '../../store/app-store'

/**
 * "Continue the run": one button for both places that offer it (the paused banner over the session and the
 * end of a failed run in the transcript), so its test id, label and busy rule cannot drift apart.
 */
export function ContinueRunButton() {
  const { busy, continueRun } = useAppStore(useShallow((s) => ({ busy: s.busy, continueRun: s.continueRun })))
  return (
    <button
      type="button"
      className="button primary small"
      data-testid="session-continue"
      disabled={busy}
      onClick={() => void continueRun()}
    >
      Continue the run
    </button>
  )
}
