import type { SessionState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'

/**
 * What else the turns of an undo or rewind touched, which it leaves as it is: the other writes and edits of
 * those turns (an undo takes back one call; a file written beside it may refer to what it removes) and the
 * commands that ran in them (their changes are not tracked). The dialog names them so the user can check.
 */
export interface Touch {
  callId: string
  /** The file, for a write or an edit; undefined for a command. */
  path?: string
  title: string
}

const pathOf = (call: ToolCallState): string | undefined => {
  const input = call.input as Record<string, unknown> | null
  return typeof input?.path === 'string' ? input.path : undefined
}

export function turnTouches(
  view: SessionState | null | undefined,
  callIds: readonly string[],
  rewoundPaths: readonly string[],
): Touch[] {
  if (!view) return []
  const going = new Set(callIds)
  const paths = new Set(rewoundPaths)
  const turns = view.turns.filter((t) => callIds.some((id) => t.calls[id] !== undefined))
  const touches: Touch[] = []
  const seen = new Set<string>()
  for (const turn of turns) {
    for (const callId of turn.callIds) {
      const call = turn.calls[callId]
      if (!call || going.has(callId) || call.rewoundBy !== undefined) continue
      const ran = call.startedAt !== undefined && (call.status === 'ok' || call.status === 'error')
      if (!ran) continue
      if (call.name === 'write_file' || call.name === 'edit_file') {
        const path = pathOf(call)
        if (call.status !== 'ok' || path === undefined || paths.has(path) || seen.has(path)) continue
        seen.add(path)
        touches.push({ callId, path, title: callTitle(call) })
      } else if (call.name === 'bash') {
        touches.push({ callId, title: callTitle(call) })
      }
    }
  }
  return touches
}
