import type { SessionEvent } from './events'
import type { ToolCallState } from './tool-call'
import { onContextCompacted, onInstructionsLoaded } from './reducer/context'
import { anomaly, describe, edit, FewObjects, type Draft, type Reduction } from './reducer/draft'
import { onCommandHeld, onCommandLanded, onFileSnapshot, onFilePreimage } from './reducer/files'
import { callTurn } from './reducer/lookup'
import { onMcpServer } from './reducer/mcp'
import { onRuleGranted, onRuleRevoked } from './reducer/session-rules'
import {
  onAssistantDelta,
  onAssistantMessage,
  onAssistantThinking,
  onModelRetrying,
  onTurnStarted,
} from './reducer/model-stream'
import { onRewindFinished, onRewindStarted } from './reducer/rewind'
import {
  onRunFailed,
  onRunFinished,
  onRunPaused,
  onRunResumed,
  onRunStarted,
  onRunStopped,
  onSessionCreated,
} from './reducer/session-run'
import { initialSessionState, type CallIndex, type SessionState, type TurnState } from './reducer/state'
import {
  onApprovalDecided,
  onApprovalRequested,
  onToolCancelled,
  onToolFinished,
  onToolOutput,
  onToolQueued,
  onToolSkipped,
  onToolStarted,
} from './reducer/tool-calls'

/**
 * The UI state as a pure function of the events: the live view applies them one by one as they arrive, the
 * replay view reduces a prefix of the log; both use this file, so what a replay shows is what the user saw.
 *
 * Cost: applying one event copies only what it touches (the state object, the turns array's spine, one turn
 * and that turn's small call table), never the whole history; calls therefore live in their turn
 * (`turns[i].calls`) and `getCall(state, callId)` finds one from the newest turn back, which is the turn
 * nearly every event is about. Within one `reduceEvents` call an object is copied at most once and then
 * edited in place (nobody can see it before the call returns), so replaying a whole log allocates little more
 * than the final state.
 *
 * Nothing here throws: an event that does not fit (a result for an unknown call, a second result, a run id
 * never started) is ignored or applied best-effort and counted in `counts.anomalies`, with `lastAnomaly`
 * saying what it was. A log damaged in the middle still renders.
 *
 * This file is the reducer's one entry (import from here, not from `./reducer/`): the reductions and lookups
 * below, and the dispatch of each event type to its family's file in `./reducer/`.
 */

export type {
  AssistantBlock,
  CallIndex,
  CompactionState,
  FileSnapshotState,
  McpServerState,
  RetryState,
  RewindState,
  RunState,
  RunStatus,
  SessionCounts,
  SessionInfo,
  SessionState,
  SessionStatus,
  TurnState,
} from './reducer/state'
export { initialSessionState } from './reducer/state'
export { contextTokensOf } from './reducer/model-stream'

/** The state after `events`, starting from `state` (which is not modified). */
export function reduceEvents(
  events: Iterable<SessionEvent>,
  state: SessionState = initialSessionState(),
  calls?: CallIndex,
): SessionState {
  const r: Reduction = { state: state as Draft, owned: new WeakSet(), callTurns: calls }
  for (const event of events) applyEvent(r, event)
  return r.state
}

/** The state after one more event: a new object; `state` and everything in it stay as they were. */
export function reduceEvent(state: SessionState, event: SessionEvent): SessionState {
  const r: Reduction = { state: state as Draft, owned: new FewObjects() }
  applyEvent(r, event)
  return r.state
}

/** The state a replay shows at `atMs`: every event with `at <= atMs`. */
export function stateAt(events: Iterable<SessionEvent>, atMs: number): SessionState {
  const r: Reduction = { state: initialSessionState() as Draft, owned: new WeakSet() }
  for (const event of events) if (event.at <= atMs) applyEvent(r, event)
  return r.state
}

/** The call with this id, searching from the newest turn (where live events point) back. */
export function getCall(state: SessionState, callId: string): ToolCallState | undefined {
  const pos = callTurn(state, callId)
  return pos < 0 ? undefined : (state.turns[pos] as TurnState).calls[callId]
}

/** Every call of the session in order. Allocates: meant for summaries, not for per-event work. */
export function allCalls(state: SessionState): ToolCallState[] {
  const out: ToolCallState[] = []
  for (const turn of state.turns) for (const id of turn.callIds) out.push(turn.calls[id] as ToolCallState)
  return out
}

function applyEvent(r: Reduction, event: SessionEvent): void {
  const s = (r.state = edit(r, r.state))
  const counts = (s.counts = edit(r, s.counts))
  counts.events += 1
  try {
    if (typeof event.seq === 'number' && event.seq > s.lastSeq) s.lastSeq = event.seq
    else anomaly(r, `${describe(event)} arrived after #${s.lastSeq}`)
    if (typeof event.at === 'number') {
      s.firstEventAt ??= event.at
      s.lastEventAt = Math.max(s.lastEventAt ?? event.at, event.at)
    }
    apply(r, event)
  } catch (e) {
    // A malformed event that slipped past validation (the reducer also runs on IPC payloads) must not take
    // the renderer down with it.
    anomaly(r, `${describe(event)}: ${e instanceof Error ? e.message : String(e)}`)
  }
}

function apply(r: Reduction, event: SessionEvent): void {
  switch (event.type) {
    case 'session.created':
      return onSessionCreated(r, event)
    case 'run.started':
      return onRunStarted(r, event)
    case 'run.paused':
      return onRunPaused(r, event)
    case 'run.resumed':
      return onRunResumed(r, event)
    case 'run.finished':
      return onRunFinished(r, event)
    case 'run.failed':
      return onRunFailed(r, event)
    case 'run.stopped':
      return onRunStopped(r, event)

    case 'turn.started':
      return onTurnStarted(r, event)
    case 'assistant.delta':
      return onAssistantDelta(r, event)
    case 'assistant.thinking':
      return onAssistantThinking(r, event)
    case 'model.retrying':
      return onModelRetrying(r, event)
    case 'assistant.message':
      return onAssistantMessage(r, event)

    case 'tool.queued':
      return onToolQueued(r, event)
    case 'approval.requested':
      return onApprovalRequested(r, event)
    case 'approval.decided':
      return onApprovalDecided(r, event)
    case 'tool.started':
      return onToolStarted(r, event)
    case 'tool.output':
      return onToolOutput(r, event)
    case 'tool.finished':
      return onToolFinished(r, event)
    case 'tool.skipped':
      return onToolSkipped(r, event)
    case 'tool.cancelled':
      return onToolCancelled(r, event)

    case 'file.snapshot':
      return onFileSnapshot(r, event)
    case 'file.preimage':
      return onFilePreimage(r, event)
    case 'command.landing':
      return
    case 'command.landed':
      return onCommandLanded(r, event)
    case 'command.held':
      return onCommandHeld(r, event)

    case 'rewind.started':
      return onRewindStarted(r, event)
    case 'rewind.finished':
      return onRewindFinished(r, event)

    case 'context.compacted':
      return onContextCompacted(r, event)
    case 'instructions.loaded':
      return onInstructionsLoaded(r, event)

    case 'mcp.server':
      return onMcpServer(r, event)

    case 'rule.granted':
      return onRuleGranted(r, event)
    case 'rule.revoked':
      return onRuleRevoked(r, event)

    default: {
      const unknown: never = event
      return anomaly(r, `unknown event type ${JSON.stringify((unknown as { type?: unknown })?.type)}`)
    }
  }
}
