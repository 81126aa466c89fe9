import type {
  AssistantMessage,
  EventOf,
  GrantedRule,
  InstructionFile,
  RunEndReason,
  RewindChange,
  RewindSkip,
  RunFailureKind,
  SessionSettings,
  StopDetails,
  ThinkingBlock,
  Usage,
} from '../events'
import type { ToolCallState, ToolCallStatus } from '../tool-call'

/** The shape of the UI state the reducer builds (see `../reducer.ts`), and the state before any event. */

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
  /** "Allow for the rest of this session" rules in force, in the order they were granted (issue 21 §3). */
  sessionRules: readonly GrantedRule[]
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
    sessionRules: [],
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
