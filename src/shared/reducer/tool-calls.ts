import { rejectsEveryHunk } from '../approval-preview'
import type { EventOf } from '../events'
import { setOwn } from '../own'
import { LIVE_OUTPUT_TAIL_CHARS, type ToolCallState } from '../tool-call'
import { anomaly, describe, edit, made, type CallDraft, type Reduction } from './draft'
import { callPos, editCall, editTurn, setStatus, turnFor } from './lookup'
import { blockPosition } from './model-stream'

/** A tool call's life: tool.queued, approval.requested and .decided, tool.started, .output and its one result. */

export function onToolQueued(r: Reduction, event: EventOf<'tool.queued'>): void {
  const s = r.state
  if (callPos(r, event.callId) >= 0) {
    return anomaly(r, `${describe(event)}: call ${event.callId} already queued`)
  }
  const turn = editTurn(r, turnFor(r, event))
  turn.retry = undefined
  const blocks = (turn.blocks = edit(r, turn.blocks))
  const at = blockPosition(blocks, event.index)
  blocks.splice(
    at,
    blocks[at]?.index === event.index ? 1 : 0,
    made(r, { kind: 'tool', index: event.index, callId: event.callId }),
  )
  const callIds = (turn.callIds = edit(r, turn.callIds))
  callIds.push(event.callId)
  const calls = (turn.calls = edit(r, turn.calls))
  setOwn(calls, event.callId, made(r, newCall(event, s.currentRunId)))
  r.callTurns?.set(event.callId, turn.turn)
  const counts = (s.counts = edit(r, s.counts))
  counts.calls += 1
  const byStatus = (counts.byStatus = edit(r, counts.byStatus))
  byStatus.queued += 1
}

export function onApprovalRequested(r: Reduction, event: EventOf<'approval.requested'>): void {
  const s = r.state
  const call = editCall(
    r,
    event,
    (c) => c.finishedAt === undefined && c.status !== 'running' && c.status !== 'rejected',
  )
  if (!call) return
  setStatus(r, call, 'awaiting-approval')
  // Asking again (a continued session re-asks what was never run) starts a fresh decision.
  call.approval = {
    preview: event.preview,
    requestedAt: event.at,
    ...(event.sessionRule ? { sessionRule: event.sessionRule } : {}),
  }
  if (!s.pendingApprovals.includes(event.callId)) {
    const pending = (s.pendingApprovals = edit(r, s.pendingApprovals))
    pending.push(event.callId)
  }
}

export function onApprovalDecided(r: Reduction, event: EventOf<'approval.decided'>): void {
  const call = editCall(
    r,
    event,
    (c) => c.approval?.decision === undefined && c.finishedAt === undefined && c.status !== 'rejected',
  )
  if (!call) return
  call.approval = {
    ...call.approval,
    decision: event.decision,
    note: event.note,
    always: event.always,
    network: event.network,
    outsideSandbox: event.outsideSandbox,
    by: event.by,
    decidedAt: event.at,
    hunks: event.hunks,
  }
  // Rejected is final for the user at once; the engine's rejection result (tool.finished) follows and
  // keeps this status. Approved goes back to queued until the scheduler starts it; approved with every
  // hunk left out is a rejection. A policy decision may come without a request.
  if (event.decision === 'rejected' || rejectsEveryHunk(call.approval.preview, event.hunks))
    setStatus(r, call, 'rejected')
  else if (call.status === 'awaiting-approval') setStatus(r, call, 'queued')
  return withoutPending(r, event.callId)
}

export function onToolStarted(r: Reduction, event: EventOf<'tool.started'>): void {
  const call = editCall(
    r,
    event,
    (c) => c.finishedAt === undefined && c.status !== 'rejected' && c.status !== 'running',
  )
  if (!call) return
  setStatus(r, call, 'running')
  call.startedAt = event.at
}

export function onToolOutput(r: Reduction, event: EventOf<'tool.output'>): void {
  const call = editCall(r, event, () => true)
  if (call) appendLive(r, call, event.chunk)
}

export function onToolFinished(r: Reduction, event: EventOf<'tool.finished'>): void {
  const call = settle(r, event)
  if (!call) return
  call.durationMs = event.durationMs
  call.metadata = event.metadata
  if (event.title !== undefined) call.title = event.title
  if (call.status === 'rejected') call.isError = true
  else {
    call.isError = event.isError
    setStatus(r, call, event.isError ? 'error' : 'ok')
  }
}

export function onToolSkipped(r: Reduction, event: EventOf<'tool.skipped'>): void {
  const call = settle(r, event)
  if (!call) return
  call.isError = true
  if (call.status !== 'rejected') {
    call.causeCallId = event.causeCallId
    setStatus(r, call, 'skipped')
  }
}

export function onToolCancelled(r: Reduction, event: EventOf<'tool.cancelled'>): void {
  const call = settle(r, event)
  if (!call) return
  call.isError = true
  if (event.durationMs !== undefined) call.durationMs = event.durationMs
  if (call.status !== 'rejected') setStatus(r, call, 'cancelled')
}

function newCall(event: EventOf<'tool.queued'>, runId: string | undefined): ToolCallState {
  return {
    status: 'queued',
    callId: event.callId,
    runId,
    turn: event.turn,
    index: event.index,
    name: event.name,
    input: event.input,
    rawInput: event.rawInput,
    title: event.title,
    server: event.server,
    safe: event.safe,
    lane: event.lane,
    queuedAt: event.at,
    approval: undefined,
    startedAt: undefined,
    finishedAt: undefined,
    durationMs: undefined,
    isError: undefined,
    output: undefined,
    metadata: undefined,
    causeCallId: undefined,
    live: undefined,
  }
}

/** The call's one result: a second one is an anomaly and is ignored (the model saw only the first). */
function settle(
  r: Reduction,
  event: EventOf<'tool.finished' | 'tool.skipped' | 'tool.cancelled'>,
): CallDraft | undefined {
  const call = editCall(r, event, (c) => c.finishedAt === undefined)
  withoutPending(r, event.callId)
  if (!call) return undefined
  call.finishedAt = event.at
  call.output = event.output
  return call
}

function withoutPending(r: Reduction, callId: string): void {
  const at = r.state.pendingApprovals.indexOf(callId)
  if (at < 0) return
  const pending = (r.state.pendingApprovals = edit(r, r.state.pendingApprovals))
  pending.splice(at, 1)
}

function appendLive(r: Reduction, call: CallDraft, chunk: string): void {
  const live = call.live
    ? edit(r, call.live)
    : made(r, { tail: '', totalChars: 0, droppedChars: 0, chunks: 0 })
  call.live = live
  live.tail += chunk
  live.totalChars += chunk.length
  live.chunks += 1
  // Trim only past 1.25x the cap so that a stream of small chunks costs amortized O(chunk), not O(cap) each.
  if (live.tail.length > LIVE_OUTPUT_TAIL_CHARS * 1.25) {
    let cut = live.tail.length - LIVE_OUTPUT_TAIL_CHARS
    const code = live.tail.charCodeAt(cut)
    // Never start the tail with the second half of a surrogate pair.
    if (code >= 0xdc00 && code <= 0xdfff) cut++
    live.tail = live.tail.slice(cut)
    live.droppedChars += cut
  }
}
