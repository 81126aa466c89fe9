import { useShallow } from 'zustand/react/shallow'
import { useAppStore } from '../../store/app-store'
import { Button } from '../../components/Button'

/**
 * "Continue the run": one button for both places that offer it (the paused banner over the session and the
 * end of a failed run in the transcript), so its test id, label and busy rule cannot drift apart.
 */
export function ContinueRunButton() {
  const { busy, continueRun } = useAppStore(useShallow((s) => ({ busy: s.busy, continueRun: s.continueRun })))
  return (
    <Button
      look="primary"
      className="small"
      testId="session-continue"
      disabled={busy}
      onClick={() => void continueRun()}
    >
      Continue the run
    </Button>
  )
}
