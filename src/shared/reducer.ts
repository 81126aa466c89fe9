import { rejectsEveryHunk } from './approval-preview'
import type {
  AssistantMessage,
  EventOf,
  InstructionFile,
  RunEndReason,
  RewindChange,
  RewindSkip,
  RunFailureKind,
  SessionEvent,
  SessionSettings,
  StopDetails,
  ThinkingBlock,
  Usage,
} from './events'
import { LIVE_OUTPUT_TAIL_CHARS, type ToolCallState, type ToolCallStatus } from './tool-call'
import { own, setOwn } from './own'

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
 */

export type SessionStatus = 'idle' | 'running' | 'paused' | 'finished' | 'failed' | 'stopped'
export type RunStatus = Exclude<SessionStatus, 'idle'>

export interface SessionInfo {
  sessionId: string
  workspace: string
  title?: string
  settings: SessionSettings
  createdAt: number
}

export interface RunState {
  runId: string
  task: string
  status: RunStatus
  startedAt: number
  endedAt?: number
  reason?: RunEndReason
  error?: string
  errorKind?: RunFailureKind
  usage?: Usage
  /** While paused: the calls waiting for a decision. */
  pausedFor?: string[]
  /** The model's own stop reason, when the run ended on one Lanes does not know (`unknown_stop`). */
  stopReason?: string
  /** A refusal's explanation from the API. */
  stopDetails?: StopDetails
  /** A failure the API asked to wait out: the run can be continued after this time (epoch ms). */
  retryAt?: number
}

/** A model request being tried again, until the turn's first content arrives. */
export interface RetryState {
  attempt: number
  of: number
  delayMs: number
  reason: EventOf<'model.retrying'>['reason']
  /** When the retry was announced (epoch ms): the attempt starts at `at + delayMs`. */
  at: number
}

/** The model's message of one turn in block order: thinking, text (accumulated from deltas) and tool calls. */
export type AssistantBlock =
  | { kind: 'text'; index: number; text: string }
  | { kind: 'tool'; index: number; callId: string }
  | { kind: 'thinking'; index: number; block: ThinkingBlock }

export interface TurnState {
  /** 1-based, across the session. */
  turn: number
  runId?: string
  startedAt: number
  blocks: readonly AssistantBlock[]
  /** In the order the calls were queued (their block order). */
  callIds: readonly string[]
  calls: Readonly<Record<string, ToolCallState>>
  /** The complete message, once it arrived (what a continued session sends back to the model). */
  message?: AssistantMessage
  stopReason?: string | null
  usage?: Usage
  /** Set while the model request is being retried; cleared by the turn's first content. */
  retry?: RetryState
  /** A rewind took the conversation back to before this turn: the model no longer sees it. */
  rewoundBy?: string
}

/** A rewind or undo (issue 14), from its intent to its outcome. */
export interface RewindState {
  rewindId: string
  mode: 'undo' | 'rewind'
  /** The call it goes back to (rewind) or undoes (undo). */
  callId: string
  callIds: readonly string[]
  changes: readonly RewindChange[]
  skipped: readonly RewindSkip[]
  /** Set when the conversation went back too. */
  turn?: number
  /** applying: intent logged, outcome not yet (or a crash came first: resumed on the next start). */
  status: 'applying' | 'done' | 'rolled-back'
  startedAt: number
  finishedAt?: number
  recovered?: boolean
  error?: string
}

export interface FileSnapshotState {
  mtimeMs: number
  hash: string
  at: number
}

export interface SessionCounts {
  events: number
  calls: number
  anomalies: number
  byStatus: Readonly<Record<ToolCallStatus, number>>
}

export type CompactionState = Omit<EventOf<'context.compacted'>, 'type' | 'seq'>

export interface SessionState {
  session?: SessionInfo
  status: SessionStatus
  runs: readonly RunState[]
  /** The latest run started. */
  currentRunId?: string
  turns: readonly TurnState[]
  /** Calls awaiting the user's decision, in the order they were asked. */
  pendingApprovals: readonly string[]
  /** Latest snapshot per absolute path (conflict checks on continue). */
  snapshots: Readonly<Record<string, FileSnapshotState>>
  /** Model tokens over the whole session. */
  usage: Usage
  /** Undos and rewinds, in order. */
  rewinds: readonly RewindState[]
  /** Compactions of the conversation, in order (issue 21). */
  compactions: readonly CompactionState[]
  /**
   * Context tokens of the latest model request as the API reported them (input, cache reads and writes), and
   * the turn they were reported for; 0 before the first answer. A compaction sets its estimate until the next
   * answer says exactly.
   */
  contextTokens: number
  /** Project-instruction files in use: the root's latest reading, then each nested folder's. */
  instructions: readonly (InstructionFile & { scope: 'root' | 'nested' })[]
  /** The session's MCP servers by name, as their latest `mcp.server` event left them. */
  mcpServers: Readonly<Record<string, McpServerState>>
  counts: SessionCounts
  /** -1 before the first event. */
  lastSeq: number
  firstEventAt?: number
  lastEventAt?: number
  lastAnomaly?: string
}

const emptyByStatus: Record<ToolCallStatus, number> = {
  queued: 0,
  'awaiting-approval': 0,
  running: 0,
  ok: 0,
  error: 0,
  rejected: 0,
  skipped: 0,
  cancelled: 0,
}

export type McpServerState = Omit<EventOf<'mcp.server'>, 'type' | 'seq'>

export function initialSessionState(): SessionState {
  // Every key present from the start (also the undefined ones) so that every state object has one shape and
  // the copies made per event stay on V8's fast path.
  return {
    session: undefined,
    status: 'idle',
    runs: [],
    currentRunId: undefined,
    turns: [],
    pendingApprovals: [],
    snapshots: {},
    mcpServers: {},
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
    rewinds: [],
    compactions: [],
    contextTokens: 0,
    instructions: [],
    counts: { events: 0, calls: 0, anomalies: 0, byStatus: emptyByStatus },
    lastSeq: -1,
    firstEventAt: undefined,
    lastEventAt: undefined,
    lastAnomaly: undefined,
  }
}

/**
 * Where each call was queued (call id to turn number), kept across many reductions of one session by a
 * caller that reduces it in pieces (the renderer's timeline): without it, each piece that looks up many calls
 * indexes them again. It only ever gains entries, and every lookup is checked against the state at hand, so
 * states older than the index (a replay's checkpoints) are read correctly. Start it empty with the initial
 * state and pass it to every reduction of that state's descendants.
 */
export type CallIndex = Map<string, number>

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

type Mutable<T> = { -readonly [K in keyof T]: T[K] }
type Draft = Mutable<SessionState>
/** A call being edited: every field of the union, without the per-status guarantees the edits restore. */
type CallDraft = Mutable<{ [K in keyof ToolCallState]: ToolCallState[K] }>

interface Reduction {
  state: Draft
  /**
   * Objects copied or created during this reduction. Nobody else has seen them, so they are edited in place.
   */
  owned: { has(value: object): boolean; add(value: object): unknown }
  /**
   * Call id to turn number, built once this reduction has looked up many calls (a whole log reduced at once):
   * a new call's "queued already?" check would otherwise scan every turn, quadratic over a long session.
   */
  callTurns?: Map<string, number>
  lookups?: number
}

/** The few objects one event touches (under ten): a list beats a hash set's allocation for that. */
class FewObjects {
  private readonly items: object[] = []
  has(value: object): boolean {
    return this.items.includes(value)
  }
  add(value: object): void {
    this.items.push(value)
  }
}

/** `value` itself if this reduction made it, else a shallow copy that it now owns. */
function edit<T extends object>(r: Reduction, value: T): Mutable<T> {
  if (r.owned.has(value)) return value as Mutable<T>
  const copy = (Array.isArray(value) ? value.slice() : { ...value }) as Mutable<T>
  r.owned.add(copy)
  return copy
}

function made<T extends object>(r: Reduction, value: T): T {
  r.owned.add(value)
  return value
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

function describe(event: SessionEvent): string {
  const type = typeof event?.type === 'string' ? event.type : 'event'
  return typeof event?.seq === 'number' ? `${type} #${event.seq}` : type
}

function anomaly(r: Reduction, what: string): void {
  const counts = (r.state.counts = edit(r, r.state.counts))
  counts.anomalies += 1
  r.state.lastAnomaly = what
}

function apply(r: Reduction, event: SessionEvent): void {
  const s = r.state
  switch (event.type) {
    case 'session.created':
      if (s.session) return anomaly(r, `${describe(event)}: the session was already created`)
      s.session = {
        sessionId: event.sessionId,
        workspace: event.workspace,
        title: event.title,
        settings: event.settings,
        createdAt: event.at,
      }
      return

    case 'run.started': {
      if (findRun(s, event.runId) >= 0)
        return anomaly(r, `${describe(event)}: run ${event.runId} already started`)
      const runs = (s.runs = edit(r, s.runs))
      runs.push(
        made(r, {
          runId: event.runId,
          task: event.task,
          status: 'running',
          startedAt: event.at,
          endedAt: undefined,
          reason: undefined,
          error: undefined,
          errorKind: undefined,
          usage: undefined,
          pausedFor: undefined,
          stopReason: undefined,
          stopDetails: undefined,
          retryAt: undefined,
        }),
      )
      s.currentRunId = event.runId
      s.status = 'running'
      return
    }

    case 'run.paused':
      return updateRun(r, event, 'paused', (run) => {
        run.pausedFor = event.callIds
      })

    case 'run.resumed':
      return updateRun(r, event, 'running', (run) => {
        run.pausedFor = undefined
      })

    case 'run.finished':
      return endRun(r, event, 'finished', (run) => {
        run.reason = event.reason
        run.usage = event.usage
        run.stopReason = event.stopReason
        run.stopDetails = event.stopDetails
      })

    case 'run.failed':
      return endRun(r, event, 'failed', (run) => {
        run.error = event.error
        run.errorKind = event.kind
        run.retryAt = event.retryAt
      })

    case 'run.stopped':
      return endRun(r, event, 'stopped')

    case 'turn.started':
      if (findTurn(s, event.turn) >= 0)
        return anomaly(r, `${describe(event)}: turn ${event.turn} already started`)
      insertTurn(r, event.turn, event.runId, event.at)
      return

    case 'assistant.delta': {
      const pos = turnFor(r, event)
      const at = blockPosition((s.turns[pos] as TurnState).blocks, event.index)
      const existing = (s.turns[pos] as TurnState).blocks[at]
      if (existing?.index === event.index && existing.kind !== 'text') {
        return anomaly(r, `${describe(event)}: block ${event.index} of turn ${event.turn} is a tool call`)
      }
      const turn = editTurn(r, pos)
      turn.retry = undefined
      const blocks = (turn.blocks = edit(r, turn.blocks))
      if (existing?.index === event.index) {
        const block = edit(r, existing) as Mutable<Extract<AssistantBlock, { kind: 'text' }>>
        block.text += event.text
        blocks[at] = block
      } else {
        blocks.splice(at, 0, made(r, { kind: 'text', index: event.index, text: event.text }))
      }
      return
    }

    case 'assistant.thinking': {
      const turn = editTurn(r, turnFor(r, event))
      turn.retry = undefined
      const blocks = (turn.blocks = edit(r, turn.blocks))
      const at = blockPosition(blocks, event.index)
      const block = made(r, { kind: 'thinking' as const, index: event.index, block: event.block })
      blocks.splice(at, blocks[at]?.index === event.index ? 1 : 0, block)
      return
    }

    case 'model.retrying': {
      const turn = editTurn(r, turnFor(r, event))
      turn.retry = made(r, {
        attempt: event.attempt,
        of: event.of,
        delayMs: event.delayMs,
        reason: event.reason,
        at: event.at,
      })
      return
    }

    case 'assistant.message': {
      const turn = editTurn(r, turnFor(r, event))
      turn.retry = undefined
      // The complete message is authoritative for text and thinking: deltas may have been throttled or lost.
      // Its block positions are the message's own (a dropped empty block shifts them): indexes follow it.
      const blocks = (turn.blocks = edit(r, turn.blocks))
      event.message.content.forEach((block, index) => {
        const next = isTextBlock(block)
          ? made(r, { kind: 'text' as const, index, text: block.text })
          : isThinkingBlock(block)
            ? made(r, { kind: 'thinking' as const, index, block })
            : undefined
        if (!next) return
        const at = blockPosition(blocks, index)
        blocks.splice(at, blocks[at]?.index === index ? 1 : 0, next)
      })
      turn.message = event.message
      turn.stopReason = event.stopReason
      turn.usage = event.usage
      if (event.usage) {
        s.usage = addUsage(s.usage, event.usage)
        s.contextTokens = contextTokensOf(event.usage)
      }
      return
    }

    case 'tool.queued': {
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
      return
    }

    case 'approval.requested': {
      const call = editCall(
        r,
        event,
        (c) => c.finishedAt === undefined && c.status !== 'running' && c.status !== 'rejected',
      )
      if (!call) return
      setStatus(r, call, 'awaiting-approval')
      // Asking again (a continued session re-asks what was never run) starts a fresh decision.
      call.approval = { preview: event.preview, requestedAt: event.at }
      if (!s.pendingApprovals.includes(event.callId)) {
        const pending = (s.pendingApprovals = edit(r, s.pendingApprovals))
        pending.push(event.callId)
      }
      return
    }

    case 'approval.decided': {
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

    case 'tool.started': {
      const call = editCall(
        r,
        event,
        (c) => c.finishedAt === undefined && c.status !== 'rejected' && c.status !== 'running',
      )
      if (!call) return
      setStatus(r, call, 'running')
      call.startedAt = event.at
      return
    }

    case 'tool.output': {
      const call = editCall(r, event, () => true)
      if (call) appendLive(r, call, event.chunk)
      return
    }

    case 'tool.finished': {
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
      return
    }

    case 'tool.skipped': {
      const call = settle(r, event)
      if (!call) return
      call.isError = true
      if (call.status !== 'rejected') {
        call.causeCallId = event.causeCallId
        setStatus(r, call, 'skipped')
      }
      return
    }

    case 'tool.cancelled': {
      const call = settle(r, event)
      if (!call) return
      call.isError = true
      if (event.durationMs !== undefined) call.durationMs = event.durationMs
      if (call.status !== 'rejected') setStatus(r, call, 'cancelled')
      return
    }

    case 'file.snapshot': {
      const snapshots = (s.snapshots = edit(r, s.snapshots))
      setOwn(snapshots, event.path, { mtimeMs: event.mtimeMs, hash: event.hash, at: event.at })
      return
    }

    case 'file.preimage': {
      const call = editCall(r, event, () => true)
      if (call) call.undoable = true
      return
    }

    case 'command.landing':
      return

    case 'command.landed': {
      // Rolled back: nothing of the command is in the workspace, so there is nothing to undo.
      const call = editCall(r, event, () => true)
      if (call && event.outcome === 'rolled-back') call.undoable = false
      return
    }

    case 'command.held': {
      const call = editCall(r, event, () => true)
      if (call)
        call.held = {
          paths: event.paths,
          count: event.count,
          landed: event.landed,
          ...(event.review ? { review: event.review, pending: true } : {}),
        }
      return
    }

    case 'command.reviewed': {
      const call = editCall(r, event, (c) => c.held?.pending === true)
      if (call?.held)
        call.held = {
          ...call.held,
          pending: false,
          accepted: event.accepted,
          rejected: event.rejected,
          acceptedCount: event.acceptedCount,
          rejectedCount: event.rejectedCount,
          landed: event.acceptedCount > 0,
        }
      return
    }

    case 'rewind.started': {
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
      return
    }

    case 'rewind.finished':
      return finishRewind(r, event)

    case 'context.compacted': {
      const { type: _type, seq: _seq, ...compaction } = event
      const compactions = (s.compactions = edit(r, s.compactions))
      compactions.push(made(r, compaction))
      if (event.tokensAfter !== undefined) s.contextTokens = event.tokensAfter
      return
    }

    case 'instructions.loaded': {
      // A root reading replaces the root's files (a compaction re-reads them); nested folders add theirs.
      const kept = s.instructions.filter((f) => f.scope === 'nested' || event.scope === 'nested')
      const known = new Set(kept.map((f) => f.path))
      const added = event.files.filter((f) => !known.has(f.path)).map((f) => ({ ...f, scope: event.scope }))
      s.instructions = made(r, [...kept, ...added])
      return
    }

    case 'mcp.server': {
      const { type: _type, seq: _seq, ...server } = event
      const servers = (s.mcpServers = edit(r, s.mcpServers))
      // A server's tools and sandbox stay known while it restarts or stops.
      const before = own(servers, event.server)
      setOwn(servers, event.server, {
        ...(before?.tools ? { tools: before.tools } : {}),
        ...(before?.sandboxed !== undefined ? { sandboxed: before.sandboxed } : {}),
        ...server,
      })
      return
    }

    default: {
      const unknown: never = event
      return anomaly(r, `unknown event type ${JSON.stringify((unknown as { type?: unknown })?.type)}`)
    }
  }
}

/**
 * How full the context was for a request: everything the API read (new, cached and cache-written input) and
 * what it wrote back, which the next request carries.
 */
export function contextTokensOf(usage: Usage): number {
  if (usage.contextTokens !== undefined) return usage.contextTokens
  return (
    usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheCreationTokens ?? 0) + usage.outputTokens
  )
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

function isThinkingBlock(block: unknown): block is ThinkingBlock {
  if (typeof block !== 'object' || block === null) return false
  const b = block as Record<string, unknown>
  return (
    (b.type === 'thinking' && typeof b.thinking === 'string' && typeof b.signature === 'string') ||
    (b.type === 'redacted_thinking' && typeof b.data === 'string')
  )
}

function isTextBlock(block: unknown): block is { type: 'text'; text: string } {
  return (
    typeof block === 'object' &&
    block !== null &&
    (block as { type?: unknown }).type === 'text' &&
    typeof (block as { text?: unknown }).text === 'string'
  )
}

/**
 * Where a block with this index is or belongs; blocks nearly always arrive in order, so search from the end.
 */
function blockPosition(blocks: readonly AssistantBlock[], index: number): number {
  let pos = blocks.length
  while (pos > 0 && (blocks[pos - 1] as AssistantBlock).index >= index) pos--
  return pos
}

function findRun(state: SessionState, runId: string): number {
  for (let i = state.runs.length - 1; i >= 0; i--) if ((state.runs[i] as RunState).runId === runId) return i
  return -1
}

function findTurn(state: SessionState, turn: number): number {
  for (let i = state.turns.length - 1; i >= 0; i--) if ((state.turns[i] as TurnState).turn === turn) return i
  return -1
}

/** Position of the turn holding the call, newest first. */
function callTurn(state: SessionState, callId: string): number {
  for (let i = state.turns.length - 1; i >= 0; i--)
    if (Object.hasOwn((state.turns[i] as TurnState).calls, callId)) return i
  return -1
}

/** Lookups a reduction makes by scanning before it indexes the calls (a live frame's few events never do). */
const INDEX_AFTER_LOOKUPS = 32

/** callTurn for the reduction's state, through its index once it has one. */
function callPos(r: Reduction, callId: string): number {
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

function updateRun(
  r: Reduction,
  event: EventOf<'run.paused' | 'run.resumed' | 'run.finished' | 'run.failed' | 'run.stopped'>,
  status: RunStatus,
  change: (run: Mutable<RunState>) => void,
): void {
  const s = r.state
  const pos = findRun(s, event.runId)
  // A run's end may be logged while its start was lost (damaged log): the session's status still follows it.
  const isCurrent = s.currentRunId === undefined || s.currentRunId === event.runId
  if (isCurrent) s.status = status
  if (pos < 0) return anomaly(r, `${describe(event)}: run ${event.runId} never started`)
  const runs = (s.runs = edit(r, s.runs))
  const run = edit(r, runs[pos] as RunState)
  runs[pos] = run
  run.status = status
  change(run)
  if (!isCurrent) anomaly(r, `${describe(event)}: run ${event.runId} is not the current run`)
}

/** A run ends (finished, failed, stopped): it records when, and is no longer paused for anything. */
function endRun(
  r: Reduction,
  event: EventOf<'run.finished' | 'run.failed' | 'run.stopped'>,
  status: RunStatus,
  change: (run: Mutable<RunState>) => void = () => undefined,
): void {
  updateRun(r, event, status, (run) => {
    run.endedAt = event.at
    change(run)
    run.pausedFor = undefined
  })
}

function insertTurn(r: Reduction, turn: number, runId: string | undefined, at: number): number {
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
function turnFor(
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

function editTurn(r: Reduction, pos: number): Mutable<TurnState> {
  const turns = (r.state.turns = edit(r, r.state.turns))
  const turn = edit(r, turns[pos] as TurnState)
  turns[pos] = turn
  return turn
}

/**
 * The event's call, ready to edit; undefined (and an anomaly counted) when it is unknown or `fits` says no.
 */
function editCall(
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
    | 'command.reviewed'
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

function setStatus(r: Reduction, call: CallDraft, status: ToolCallStatus): void {
  if (call.status === status) return
  const counts = (r.state.counts = edit(r, r.state.counts))
  const byStatus = (counts.byStatus = edit(r, counts.byStatus))
  byStatus[call.status] -= 1
  byStatus[status] += 1
  call.status = status
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

/**
 * A rewind's outcome. Done: its calls are marked rewound (the timeline strikes them through) and, when the
 * conversation went back too, so are the turns from its turn on, and the session can be continued from there.
 */
function finishRewind(r: Reduction, event: EventOf<'rewind.finished'>): void {
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

function addUsage(total: Usage, usage: Usage): Usage {
  return {
    inputTokens: total.inputTokens + usage.inputTokens,
    outputTokens: total.outputTokens + usage.outputTokens,
    cacheReadTokens: (total.cacheReadTokens ?? 0) + (usage.cacheReadTokens ?? 0),
    cacheCreationTokens: (total.cacheCreationTokens ?? 0) + (usage.cacheCreationTokens ?? 0),
  }
}
