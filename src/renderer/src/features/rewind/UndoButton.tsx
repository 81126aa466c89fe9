import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'
import { useAppStore } from '../../store/app-store'
import './rewind.css'
import { useRewindStore } from './rewind-store'
import { Button } from '../../components/Button'

/** A finished write or edit whose previous content was kept, and not already taken back. */
export function canUndo(call: ToolCallState): boolean {
  return call.status === 'ok' && call.undoable === true && call.rewoundBy === undefined
}

/**
 * Whether undo and rewind are offered now: not in a replay (what is shown there is the past; the files are as
 * the session left them now), nor while the agent works or waits for a review (the app refuses then: stop it
 * or answer it first).
 */
function useRewindOffered(): boolean {
  return useAppStore((s) => {
    const head = s.timeline?.head
    const busy = head?.status === 'running' || (head?.status === 'paused' && head.pendingApprovals.length > 0)
    return !s.replay.active && !busy
  })
}

/** "Undo" on a write or edit (its card, its bar on the timeline): opens the rewind dialog for that call. */
export function UndoButton({ call, className = '' }: { call: ToolCallState; className?: string }) {
  const open = useRewindStore((s) => s.open)
  const offered = useRewindOffered()
  if (!canUndo(call) || !offered) return null
  return (
    <Button
      look="small"
      className={`undo-button ${className}`}
      testId="undo-button"
      data-call-id={call.callId}
      title="Put this file back as it was before this change (you see the diff first)"
      onClick={(e) => {
        e.stopPropagation()
        open({ mode: 'undo', callId: call.callId, label: callTitle(call) })
      }}
    >
      Undo
    </Button>
  )
}

/** "Rewind to here" on a turn: everything from its first call on goes back, the conversation too. */
export function RewindToHereButton({
  callId,
  turn,
  shown,
}: {
  callId: string
  /** The engine's turn number (data-turn), and the number the user sees (lib/turn-numbers.ts). */
  turn: number
  shown: number
}) {
  const open = useRewindStore((s) => s.open)
  const offered = useRewindOffered()
  if (!offered) return null
  return (
    <Button
      look="link"
      className="rewind-here"
      testId="rewind-to-here"
      data-turn={turn}
      title="Put the files back as they were before this turn, and optionally the conversation too"
      onClick={(e) => {
        e.stopPropagation()
        open({ mode: 'rewind', callId, label: `turn ${shown}` })
      }}
    >
      Rewind to here
    </Button>
  )
}
