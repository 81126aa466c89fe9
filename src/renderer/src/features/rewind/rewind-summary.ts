import type { RewindChange } from '../../../../shared/events'
import { shownTurn } from '../../lib/turn-numbers'
import type { RewindState, SessionState, TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle, formatClock } from '../../lib/format'

/**
 * An undo or rewind in words, for the places that show one after it happened: its transcript row, its mark on
 * the timeline, the note on a change it took back. One home for these words, so the row, the mark and the
 * note never describe the same rewind differently.
 */

/** The transcript row of a rewind (what links to it scroll to). */
export const rewindRowKey = (rewindId: string): string => `rewind-${rewindId}`

/** A call and the turn it belongs to, when the session has it. */
export function findCallTurn(
  state: SessionState,
  callId: string,
): { call: ToolCallState; turn: TurnState } | undefined {
  for (let i = state.turns.length - 1; i >= 0; i--) {
    const turn = state.turns[i]
    const call = turn?.calls[callId]
    if (turn && call) return { call, turn }
  }
  return undefined
}

const titleOf = (state: SessionState, callId: string): string => {
  const found = findCallTurn(state, callId)
  return found ? callTitle(found.call) : `call ${callId}`
}

/** "Undo" or "Rewind": the short name of what it was (the timeline mark, links to it). */
export const rewindKind = (rewind: RewindState): string => (rewind.mode === 'undo' ? 'Undo' : 'Rewind')

/**
 * The label of its mark on the timeline, in the past tense (or as it stands), so that it reads as something
 * that happened and not as an Undo button.
 */
export function rewindMarkLabel(rewind: RewindState): string {
  const undo = rewind.mode === 'undo'
  switch (rewind.status) {
    case 'done':
      return undo ? 'Undone' : 'Rewound'
    case 'applying':
      return undo ? 'Undoing…' : 'Rewinding…'
    case 'rolled-back':
      return undo ? 'Undo failed' : 'Rewind failed'
  }
}

/** What it was: "Undid Write f.txt", "Rewound to before turn 3: files and conversation". */
export function rewindHeadline(rewind: RewindState, state: SessionState): string {
  if (rewind.mode === 'undo') {
    const title = titleOf(state, rewind.callId)
    switch (rewind.status) {
      case 'done':
        return `Undid ${title}`
      case 'applying':
        return `Undoing ${title}`
      case 'rolled-back':
        return `Could not undo ${title}`
    }
  }
  // "Rewind to here" goes back to a turn's first call; a rewind to a later call (`lanes rewind --to`) names it.
  const found = findCallTurn(state, rewind.callId)
  const point = !found
    ? `before call ${rewind.callId}`
    : found.turn.callIds[0] === rewind.callId
      ? `before turn ${shownTurn(state.turns, found.turn.turn)}`
      : `before ${callTitle(found.call)} (turn ${shownTurn(state.turns, found.turn.turn)})`
  const what =
    rewind.turn === undefined
      ? 'files only (Claude still sees every turn)'
      : `files and conversation (Claude no longer sees turn ${shownTurn(state.turns, rewind.turn)} or later)`
  switch (rewind.status) {
    case 'done':
      return `Rewound to ${point}: ${what}`
    case 'applying':
      return `Rewinding to ${point}: ${what}`
    case 'rolled-back':
      return `Could not rewind to ${point}`
  }
}

/** Its outcome, in a sentence a newcomer can act on. */
export function rewindStatusText(rewind: RewindState): string {
  switch (rewind.status) {
    case 'done':
      return rewind.recovered
        ? 'Done. Lanes stopped in the middle of it and finished it when the session was opened again.'
        : 'Done.'
    case 'applying':
      return 'Not finished yet. If Lanes stopped in the middle of it, it is finished or rolled back when the session is opened again.'
    case 'rolled-back':
      return `Rolled back: the files are as they were before it.${rewind.error ? ` ${rewind.error}` : ''}`
  }
}

/** What it did (or does) to one file. */
export function changeText(change: RewindChange): string {
  if (change.to === null) return 'removed (it did not exist at that point)'
  if (change.from === null) return 'created again, as it was at that point'
  return 'put back as it was at that point'
}

/**
 * Why the rewind left this call's file as it was (changed since by someone else, and kept), if it did: then it
 * took nothing back from the file, and the change must not read as undone.
 */
export function keptReason(rewind: RewindState | undefined, call: ToolCallState): string | undefined {
  if (!rewind || rewind.skipped.length === 0) return undefined
  const preview = call.approval?.preview
  const input = call.input as { path?: unknown } | undefined
  const path = preview?.kind === 'write' ? preview.path : input?.path
  if (typeof path !== 'string') return undefined
  const relPath = path.replace(/^\.\//, '')
  return rewind.skipped.find((s) => s.relPath === relPath)?.reason
}

/** "the undo at 14:03": how a change it took back refers to it. */
export const rewindReference = (rewind: RewindState): string =>
  `the ${rewind.mode === 'undo' ? 'undo' : 'rewind'} at ${formatClock(rewind.startedAt)}`

/** The rewind with this id among `rewinds`. */
export const findRewindIn = (
  rewinds: readonly RewindState[],
  rewindId: string | undefined,
): RewindState | undefined =>
  rewindId === undefined ? undefined : rewinds.find((r) => r.rewindId === rewindId)

/** The rewind with this id, in the state shown. */
export const findRewind = (
  state: SessionState | null,
  rewindId: string | undefined,
): RewindState | undefined => (state ? findRewindIn(state.rewinds, rewindId) : undefined)

/**
 * The calls whose changes it took back, with their titles, for links to them: not those whose file it left as it was
 * (changed since, and kept), which it took nothing back from.
 */
export function undoneCalls(rewind: RewindState, state: SessionState): { callId: string; title: string }[] {
  return rewind.callIds.flatMap((callId) => {
    const found = findCallTurn(state, callId)
    if (found && keptReason(rewind, found.call) !== undefined) return []
    return [{ callId, title: found ? callTitle(found.call) : `call ${callId}` }]
  })
}

/**
 * The turn the conversation was rewound to, while the session waits to go on from there (nothing happened since
 * the rewind): it is paused, but not for a review.
 */
export function rewoundToTurn(state: SessionState): number | undefined {
  if (state.status !== 'paused' || state.pendingApprovals.length > 0) return undefined
  const last = state.rewinds.at(-1)
  if (last?.status !== 'done' || last.turn === undefined) return undefined
  return state.turns.some((t) => t.startedAt > last.startedAt) ? undefined : last.turn
}
