import type { EventOf } from '../events'
import type { ToolCallState, ToolCallStatus } from '../tool-call'
import { setOwn } from '../own'
import { anomaly, describe, edit, made, type CallDraft, type Mutable, type Reduction } from './draft'
import type { SessionState, TurnState } from './state'

/** Finding a turn or a call in the state, and taking it out for editing (shared by every event family). */

export function findTurn(state: SessionState, turn: number): number {
  for (let i = state.turns.length - 1; i >= 0; i--) if ((state.turns[i] as TurnState).turn === turn) return i
  return -1
}

/** Position of the turn holding the call, newest first. */
export function callTurn(state: SessionState, callId: string): number {
  for (let i = state.turns.length - 1; i >= 0; i--)
    if (Object.hasOwn((state.turns[i] as TurnState).calls, callId)) return i
  return -1
}

/** Lookups a reduction makes by scanning before it indexes the calls (a live frame's few events never do). */
const INDEX_AFTER_LOOKUPS = 32

/** callTurn for the reduction's state, through its index once it has one. */
export function callPos(r: Reduction, callId: string): number {
  if (r.callTurns === undefined) {
    r.lookups = (r.lookups ?? 0) + 1
    if (r.lookups <= INDEX_AFTER_LOOKUPS) return callTurn(r.state, callId)
    const index = new Map<string, number>()
    // Oldest first, so an id queued in two turns maps to the newer, as callTurn finds it.
    for (const turn of r.state.turns) for (const id of turn.callIds) index.set(id, turn.turn)
    r.callTurns = index
  }
  const turn = r.callTurns.get(callId)
  if (turn === undefined) return -1
  const pos = findTurn(r.state, turn)
  // Turn numbers are stable where positions are not (a turn can be inserted before others).
  return pos >= 0 && Object.hasOwn((r.state.turns[pos] as TurnState).calls, callId)
    ? pos
    : callTurn(r.state, callId)
}

export function insertTurn(r: Reduction, turn: number, runId: string | undefined, at: number): number {
  const turns = (r.state.turns = edit(r, r.state.turns))
  let pos = turns.length
  while (pos > 0 && (turns[pos - 1] as TurnState).turn > turn) pos--
  turns.splice(
    pos,
    0,
    made(r, {
      turn,
      runId,
      startedAt: at,
      blocks: made(r, []),
      callIds: made(r, []),
      calls: made(r, {}),
      message: undefined,
      stopReason: undefined,
      usage: undefined,
      retry: undefined,
    }),
  )
  return pos
}

/**
 * Position of the event's turn. A turn whose turn.started was lost is created so what follows is not lost.
 */
export function turnFor(
  r: Reduction,
  event: EventOf<
    'assistant.delta' | 'assistant.thinking' | 'model.retrying' | 'assistant.message' | 'tool.queued'
  >,
): number {
  const pos = findTurn(r.state, event.turn)
  if (pos >= 0) return pos
  anomaly(r, `${describe(event)}: turn ${event.turn} never started`)
  return insertTurn(r, event.turn, r.state.currentRunId, event.at)
}

export function editTurn(r: Reduction, pos: number): Mutable<TurnState> {
  const turns = (r.state.turns = edit(r, r.state.turns))
  const turn = edit(r, turns[pos] as TurnState)
  turns[pos] = turn
  return turn
}

/**
 * The event's call, ready to edit; undefined (and an anomaly counted) when it is unknown or `fits` says no.
 */
export function editCall(
  r: Reduction,
  event: EventOf<
    | 'approval.requested'
    | 'approval.decided'
    | 'tool.started'
    | 'tool.output'
    | 'tool.finished'
    | 'tool.skipped'
    | 'tool.cancelled'
    | 'file.preimage'
    | 'command.landed'
    | 'command.held'
  >,
  fits: (call: ToolCallState) => boolean,
): CallDraft | undefined {
  const pos = callPos(r, event.callId)
  if (pos < 0) {
    anomaly(r, `${describe(event)}: unknown call ${event.callId}`)
    return undefined
  }
  const current = (r.state.turns[pos] as TurnState).calls[event.callId] as ToolCallState
  if (!fits(current)) {
    anomaly(r, `${describe(event)} does not fit call ${event.callId} (${current.status})`)
    return undefined
  }
  const turn = editTurn(r, pos)
  const calls = (turn.calls = edit(r, turn.calls))
  const call = edit(r, current) as CallDraft
  setOwn(calls, event.callId, call as ToolCallState)
  return call
}

export function setStatus(r: Reduction, call: CallDraft, status: ToolCallStatus): void {
  if (call.status === status) return
  const counts = (r.state.counts = edit(r, r.state.counts))
  const byStatus = (counts.byStatus = edit(r, counts.byStatus))
  byStatus[call.status] -= 1
  byStatus[status] += 1
  call.status = status
}
