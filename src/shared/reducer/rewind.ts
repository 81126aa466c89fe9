import type { EventOf } from '../events'
import { setOwn } from '../own'
import type { ToolCallState } from '../tool-call'
import { anomaly, describe, edit, made, type CallDraft, type Reduction } from './draft'
import { callPos, editTurn } from './lookup'
import type { RewindState, TurnState } from './state'

/** Undo and rewind (issue 14): rewind.started logs the intent, rewind.finished its outcome. */

export function onRewindStarted(r: Reduction, event: EventOf<'rewind.started'>): void {
  const s = r.state
  const rewinds = (s.rewinds = edit(r, s.rewinds))
  rewinds.push(
    made(r, {
      rewindId: event.rewindId,
      mode: event.mode,
      callId: event.callId,
      callIds: event.callIds,
      changes: event.changes,
      skipped: event.skipped,
      turn: event.turn,
      status: 'applying',
      startedAt: event.at,
    }),
  )
}

/**
 * A rewind's outcome. Done: its calls are marked rewound (the timeline strikes them through) and, when the
 * conversation went back too, so are the turns from its turn on, and the session can be continued from there.
 */
export function onRewindFinished(r: Reduction, event: EventOf<'rewind.finished'>): void {
  const s = r.state
  const at = s.rewinds.findLastIndex((w) => w.rewindId === event.rewindId)
  if (at < 0) return anomaly(r, `${describe(event)}: rewind ${event.rewindId} never started`)
  const rewinds = (s.rewinds = edit(r, s.rewinds))
  const rewind = edit(r, rewinds[at] as RewindState)
  rewinds[at] = rewind
  rewind.status = event.outcome
  rewind.finishedAt = event.at
  if (event.recovered) rewind.recovered = true
  if (event.error !== undefined) rewind.error = event.error
  if (event.outcome !== 'done') return
  // The model has not read what the rewind put back: a change to such a file without reading it first is
  // refused like any change to an unread file (the conversation tells it to read them again).
  const putBack = rewind.changes.filter((c) => Object.hasOwn(s.snapshots, c.path))
  if (putBack.length > 0) {
    const snapshots = (s.snapshots = edit(r, s.snapshots))
    for (const change of putBack) Reflect.deleteProperty(snapshots, change.path)
  }
  for (const callId of rewind.callIds) {
    const pos = callPos(r, callId)
    if (pos < 0) continue
    const turn = editTurn(r, pos)
    const calls = (turn.calls = edit(r, turn.calls))
    const call = edit(r, calls[callId] as ToolCallState) as CallDraft
    call.rewoundBy = rewind.rewindId
    setOwn(calls, callId, call as ToolCallState)
  }
  if (rewind.turn === undefined) return
  s.turns.forEach((turn, pos) => {
    if (turn.turn >= (rewind.turn as number) && turn.rewoundBy === undefined)
      editTurn(r, pos).rewoundBy = rewind.rewindId
  })
  // The conversation now ends before that turn: the session waits to be continued from there, and what the
  // rewound turns were waiting for is no longer asked. (The engine never rewinds while a run works: a run
  // still "running" here is one a crash cut short.)
  s.status = 'paused'
  const runAt = s.runs.length - 1
  const run = s.runs[runAt]
  if (run) {
    const runs = (s.runs = edit(r, s.runs))
    const paused = edit(r, run)
    paused.status = 'paused'
    paused.pausedFor = undefined
    runs[runAt] = paused
  }
  const stillAsked = s.pendingApprovals.filter((callId) => {
    const pos = callPos(r, callId)
    return pos < 0 || (s.turns[pos] as TurnState).rewoundBy === undefined
  })
  if (stillAsked.length !== s.pendingApprovals.length) s.pendingApprovals = stillAsked
}
