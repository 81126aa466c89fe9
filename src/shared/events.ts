import { z } from 'zod'
import { ApprovalPreview, HunkDecision, WritePreview } from './approval-preview'
import { ContentFacts } from './file-content'
import { Count, EpochMs, Millis } from './schema-units'
import { SessionRule } from './session-rules'

export {
  ApprovalPreview,
  BashPreview,
  canReviewByHunk,
  capWritePreview,
  DiffHunk,
  HunkDecision,
  isPartialReview,
  OtherPreview,
  rejectsEveryHunk,
  PREVIEW_MAX_CHARS,
  WritePreview,
} from './approval-preview'
export {
  describeSessionRule,
  rulesAllowCommand,
  rulesAllowEdits,
  rulesAllowTool,
  sameRule,
  SessionRule,
  type GrantedRule,
} from './session-rules'

/**
 * The session's events (DESIGN 6): the one record of what happened. The engine appends them to the session
 * log and streams them to the UI; the UI state is `reduceEvents(events)` (reducer.ts), live and in replay
 * alike.
 *
 * Every event carries `type` (dotted past tense), `at` (epoch ms, integer) and `seq` (0-based, strictly
 * increasing within a session; the log writer assigns both). The engine builds a `SessionEventDraft` (no seq,
 * optional at).
 *
 * Objects strip unknown keys rather than reject them, so a log written by a newer version still reads; the
 * fields below are the contract.
 */

/**
 * Session ids double as file names (`<id>.jsonl`, `<id>/`), so they are restricted to characters that are
 * safe on every file system and can never form a path (`..`, `/`, `\`). The ids the store generates sort by
 * time.
 */
export const SessionId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/, 'a session id is 1-128 letters, digits, "-" or "_"')
export type SessionId = z.infer<typeof SessionId>

/** POSIX absolute, Windows drive (`C:\`) or UNC (`\\server\share`). `src/shared` cannot use node:path. */
const AbsolutePath = z
  .string()
  .refine((p) => /^(\/|[A-Za-z]:[\\/]|\\\\[^\\])/.test(p), 'expected an absolute path')

/** One row of the session list (store.ts `listSessions`), newest first. */
export const SessionSummary = z.object({
  sessionId: SessionId,
  workspace: z.string(),
  /** The session's title, else its first task. */
  title: z.string(),
  /** The first run's task. */
  task: z.string().optional(),
  createdAt: EpochMs,
  /** Time of the last event. */
  updatedAt: EpochMs,
  /**
   * running: a live process has it open. paused: waiting for approvals, stopped by the user (`stopped`), or
   * cut short by a crash (`interrupted`); all three can be continued. finished / failed: the last run ended
   * so.
   */
  status: z.enum(['running', 'paused', 'finished', 'failed']),
  interrupted: z.boolean().optional(),
  stopped: z.boolean().optional(),
  /** paused because a rewind took the conversation back: continuing goes on from the turn it went back to. */
  rewound: z.boolean().optional(),
  /** seq of the last event + 1 (seqs have no gaps). */
  eventCount: Count.optional(),
})
export type SessionSummary = z.infer<typeof SessionSummary>

export const SessionSettings = z.object({
  model: z.string().min(1),
  scheduler: z.enum(['streaming', 'batch']),
  /** After a failed unsafe call, skip the turn's later unsafe calls (DESIGN 4). */
  siblingSkip: z.boolean(),
  baseUrl: z.string().optional(),
  /** The built-in offline demo model is answering (no API key and no base URL). */
  demo: z.boolean(),
})
export type SessionSettings = z.infer<typeof SessionSettings>

/** Token counts of one model response (or a run's total). */
export const Usage = z.object({
  inputTokens: Count,
  outputTokens: Count,
  cacheReadTokens: Count.optional(),
  cacheCreationTokens: Count.optional(),
  /**
   * The context size of the response's last sampling iteration (its `usage.iterations`' last `message` entry:
   * input, cache reads and writes, output), when the API reports iterations. After a server-side compaction the
   * top-level fields add up iterations; this is what the next request carries.
   */
  contextTokens: Count.optional(),
})
export type Usage = z.infer<typeof Usage>

/**
 * How the scheduler placed a call (DESIGN 4): with other safe calls in concurrent group `group`, or alone.
 */
export const Lane = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('parallel'), group: Count }),
  z.object({ kind: z.literal('serial') }),
])
export type Lane = z.infer<typeof Lane>

export const RunEndReason = z.enum([
  /** The model ended its turn. */
  'end_turn',
  /** The turn limit of the run was hit. */
  'max_turns',
  /** The model's answer was cut by its token limit; a cut call is never executed. */
  'max_tokens',
  'stop_sequence',
  'refusal',
  'context_window_exceeded',
  /** A stop reason newer than this version; `run.finished.stopReason` names it. */
  'unknown_stop',
])
export type RunEndReason = z.infer<typeof RunEndReason>

/** context: the conversation no longer fits the model's window even after compacting (continue compacts harder). */
export const RunFailureKind = z.enum(['model', 'network', 'auth', 'internal', 'workspace', 'context'])
export type RunFailureKind = z.infer<typeof RunFailureKind>

/** Why the model stopped with `refusal` (the API's `stop_details`); either field may be null. */
export const StopDetails = z.object({
  category: z.string().nullable(),
  /** Written by the API for the user. */
  explanation: z.string().nullable(),
})
export type StopDetails = z.infer<typeof StopDetails>

/** Why a model request is tried again (DESIGN 9 retries). */
/** `unreachable`: no connection to the API could be made; `connection_lost`: one was made, then dropped. */
export const RetryReason = z.enum([
  'overloaded',
  'rate_limited',
  'server_error',
  'connection_lost',
  'unreachable',
])
export type RetryReason = z.infer<typeof RetryReason>

/**
 * A thinking block exactly as the API sent it and as it must go back: `thinking` text (empty when the model
 * hides it) with its `signature`, or an opaque `redacted_thinking`.
 */
export const ThinkingBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().min(1) }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string().min(1) }),
])
export type ThinkingBlock = z.infer<typeof ThinkingBlock>

const base = { at: EpochMs, seq: Count }

/** A session event: its type, then when it happened and its place in the log, then its own fields. */
const defineEvent = <Type extends string, Shape extends z.ZodRawShape>(type: Type, shape: Shape) =>
  z.object({ type: z.literal(type), ...base, ...shape })

export const SessionCreatedEvent = defineEvent('session.created', {
  sessionId: SessionId,
  /** Real path of the workspace root. */
  workspace: AbsolutePath,
  title: z.string().optional(),
  settings: SessionSettings,
})

export const RunStartedEvent = defineEvent('run.started', {
  runId: z.string().min(1),
  task: z.string(),
})

export const TurnStartedEvent = defineEvent('turn.started', {
  runId: z.string().min(1),
  /** 1-based, counted across the whole session (not per run). */
  turn: z.number().int().positive(),
})

export const AssistantDeltaEvent = defineEvent('assistant.delta', {
  turn: z.number().int().positive(),
  /** Content block index in the model's message. */
  index: Count,
  text: z.string(),
})

/**
 * A thinking block closed. Logged as it closes, before the calls after it are queued, so a turn whose
 * assistant.message never reached the log is rebuilt with its thinking intact (the API refuses it otherwise).
 */
export const AssistantThinkingEvent = defineEvent('assistant.thinking', {
  turn: z.number().int().positive(),
  index: Count,
  block: ThinkingBlock,
})

/** A model request failed before any content and is tried again after `delayMs`. */
export const ModelRetryingEvent = defineEvent('model.retrying', {
  runId: z.string().min(1),
  turn: z.number().int().positive(),
  /** The attempt about to be made: 2 for the first retry. */
  attempt: z.number().int().min(2),
  /** Attempts in all, the first included. */
  of: z.number().int().positive(),
  delayMs: Millis,
  reason: RetryReason,
  /** What the API said, for the curious. */
  message: z.string(),
})

export const AssistantMessage = z.object({
  role: z.literal('assistant'),
  /** Anthropic content blocks exactly as they are sent back to the model when the session continues. */
  content: z.array(z.unknown()),
})
export type AssistantMessage = z.infer<typeof AssistantMessage>

export const AssistantMessageEvent = defineEvent('assistant.message', {
  turn: z.number().int().positive(),
  message: AssistantMessage,
  stopReason: z.string().nullable(),
  usage: Usage.optional(),
})

export const ToolQueuedEvent = defineEvent('tool.queued', {
  /** The model's tool_use id; it is also the tool_result's tool_use_id. */
  callId: z.string().min(1),
  turn: z.number().int().positive(),
  /** Content block index in the model's message. */
  index: Count,
  name: z.string(),
  /** The parsed arguments, or null when they could not be parsed. */
  input: z.unknown(),
  /** The arguments as the model sent them; only when they were not clean JSON. */
  rawInput: z.string().optional(),
  safe: z.boolean(),
  lane: Lane,
  /** Short label for the timeline ("Read src/a.ts"). */
  title: z.string().optional(),
  /** The MCP server that provides the tool (`mcp__<server>__<tool>`), as configured. */
  server: z.string().optional(),
})

export const ApprovalRequestedEvent = defineEvent('approval.requested', {
  callId: z.string().min(1),
  preview: ApprovalPreview,
  /** What "allow for the rest of this session" would grant with this call's approval (absent: not offered). */
  sessionRule: SessionRule.optional(),
})

export const ApprovalDecision = z.enum(['approved', 'rejected'])
export type ApprovalDecision = z.infer<typeof ApprovalDecision>

export const ApprovalDecidedEvent = defineEvent('approval.decided', {
  callId: z.string().min(1),
  decision: ApprovalDecision,
  /** The user's note; sent to the model with a rejection. */
  note: z.string().optional(),
  /** "Always allow" for this workspace was ticked. */
  always: z.boolean().optional(),
  /** bash: "needs the internet" was switched on: the command ran in the sandbox with the network. */
  network: z.boolean().optional(),
  /** bash: "run outside the sandbox" was switched on: the command ran unconfined. */
  outsideSandbox: z.boolean().optional(),
  /** bash: "show me its changes before they land": all of them were held for the per-file review. */
  hold: z.boolean().optional(),
  by: z.enum(['user', 'cli']).optional(),
  /** An approved write or edit reviewed hunk by hunk: what was decided for each hunk (absent: all accepted). */
  hunks: z.array(HunkDecision).optional(),
})

export const RunPausedEvent = defineEvent('run.paused', {
  runId: z.string().min(1),
  reason: z.literal('approval'),
  /** The calls waiting for a decision. */
  callIds: z.array(z.string()),
})

export const RunResumedEvent = defineEvent('run.resumed', { runId: z.string().min(1) })

export const ToolStartedEvent = defineEvent('tool.started', {
  callId: z.string().min(1),
})

export const ToolOutputEvent = defineEvent('tool.output', {
  callId: z.string().min(1),
  /** Live output (bash), throttled by the engine. The model sees `tool.finished`'s output, not this. */
  chunk: z.string(),
})

export const ToolFinishedEvent = defineEvent('tool.finished', {
  callId: z.string().min(1),
  isError: z.boolean(),
  /** Exactly what the model sees in the tool_result (hint and execution time included). */
  output: z.string(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  durationMs: Millis,
  title: z.string().optional(),
})

export const ToolSkippedEvent = defineEvent('tool.skipped', {
  callId: z.string().min(1),
  /** The failed unsafe call that caused the skip (sibling skip, DESIGN 4). */
  causeCallId: z.string().min(1),
  output: z.string(),
})

export const ToolCancelledEvent = defineEvent('tool.cancelled', {
  callId: z.string().min(1),
  output: z.string(),
  durationMs: Millis.optional(),
})

/** A file's identity: `dev:ino:size:mtimeNs:ctimeNs` (src/main/fs/file-identity.ts). */
export const FileIdentity = z.string().regex(/^\d+:\d+:\d+:\d+:\d+$/, 'expected a file identity')

export const FileSnapshotEvent = defineEvent('file.snapshot', {
  /** Absolute real path. */
  path: z.string().min(1),
  mtimeMs: z.number().nonnegative(),
  /** SHA-256, hex. */
  hash: z.string().min(1),
  /**
   * The file's identity, when it could be trusted: set on the snapshot a file tool's write logs once the clock's
   * granularity has passed and the file, read again, is still what it wrote, so a later undo or rewind finds it
   * unchanged by one lstat instead of reading and hashing it (src/main/fs/file-identity.ts).
   */
  id: FileIdentity.optional(),
})

/** SHA-256, hex: the name of a content in the session's store of file contents. */
const ContentHash = z.string().regex(/^[0-9a-f]{64}$/, 'expected a SHA-256 in hex')

/**
 * What is at one path: a content hash (a file, mode not recorded), `<hash>:<mode>` (a file with its mode, octal),
 * `link:<target>` or `dir:<mode>` (see `src/main/fs/path-token.ts`).
 */
export const PATH_TOKEN = /^(?:[0-9a-f]{64}(?::[0-7]{1,4})?|dir:[0-7]{1,4}|link:[^\0]+)$/
export const PathToken = z.string().regex(PATH_TOKEN, 'expected a content hash or a path token')

/**
 * A file tool kept the file's content just before changing it (issue 14: undo and rewind). Logged before the
 * change is written, so every change in the log can be undone.
 */
export const FilePreimageEvent = defineEvent('file.preimage', {
  callId: z.string().min(1),
  /** Absolute real path. */
  path: z.string().min(1),
  /** Workspace-relative, for the user. */
  relPath: z.string(),
  /** The content before the change, in the session's store; null when the file did not exist. */
  hash: ContentHash.nullable(),
  /**
   * Set for a change an approved command made (issue 20): what was at the path before and what the command left,
   * as path tokens (a file with its mode, a symbolic link, a folder; `src/main/fs/path-token.ts`). `hash` then
   * repeats the file's content hash (null for anything but a file).
   */
  before: PathToken.nullable().optional(),
  after: PathToken.nullable().optional(),
  /**
   * The identity of the file the command left (`after`, a regular file), as it is once landed, when it could be
   * trusted: a later undo or rewind finds the file unchanged by one lstat instead of reading and hashing it
   * (src/main/fs/file-identity.ts).
   */
  afterId: FileIdentity.optional(),
})

/** What an approved command changed (issue 20), counted; the card says "changed 3 files, added 1". */
export const CommandChangeCounts = z.object({
  added: Count,
  changed: Count,
  removed: Count,
  /** Only the mode (permissions) changed. */
  modeChanged: Count,
})
export type CommandChangeCounts = z.infer<typeof CommandChangeCounts>

/** One path a command changed, for the card (capped: the counts say how many there were). */
export const CommandChangedPath = z.object({
  relPath: z.string(),
  change: z.enum(['added', 'changed', 'removed', 'mode']),
  kind: z.enum(['file', 'link', 'dir']),
  /** A file as the command left it (captured changes): size, text or binary, type, lines (file-content.ts). */
  content: ContentFacts.omit({ image: true, sha256: true }).optional(),
})
export type CommandChangedPath = z.infer<typeof CommandChangedPath>

/** A protected path a command changed, held back from the workspace (or landed with --land-protected). */
export const HeldPath = z.object({ relPath: z.string(), reason: z.string() })
export type HeldPath = z.infer<typeof HeldPath>

/**
 * An approved command's changes are about to land (issue 20): every one of them is logged before this as a
 * file.preimage with `before` and `after`, the contents before are in the store and both are synced. Without
 * a command.landed after it, a crash came in between: the next start finishes the landing or rolls it back.
 */
export const CommandLandingEvent = defineEvent('command.landing', {
  callId: z.string().min(1),
  /** The command's layer, whose upper folder holds what is still to land. */
  layer: z.string().min(1),
  entries: Count,
})

export const CommandLandedEvent = defineEvent('command.landed', {
  callId: z.string().min(1),
  /** done: every change landed. rolled-back: none did (the workspace is as before the command). */
  outcome: z.enum(['done', 'rolled-back']),
  recovered: z.boolean().optional(),
  error: z.string().optional(),
})

/**
 * One held change as the review shows it. `reason`: why it is held (a protected path: shown as a warning);
 * absent when it is held only because the review asked to hold the command's changes.
 */
export const HeldFile = z.object({
  relPath: z.string(),
  change: z.enum(['added', 'changed', 'removed', 'mode']),
  kind: z.enum(['file', 'link', 'dir']),
  reason: z.string().optional(),
  /** A text file's diff (its hunks; full texts are left out to keep the log small). */
  diff: WritePreview.optional(),
  /** Instead of a diff: a folder, a link's target, a binary file, a diff too large to show. */
  note: z.string().optional(),
})
export type HeldFile = z.infer<typeof HeldFile>

/**
 * The held changes of one folder, as the review lists them (issue 20): a large change set is shown folder by
 * folder, its files paged in and their diffs loaded only when the user opens them (`held:files`, `held:diff`).
 * `folder` is workspace-relative ('' for the top level); when a change set spans more folders than the review
 * lists, folders are grouped at a shallower depth (a group then holds everything under it).
 */
/** The review lists at most this many folder groups; a change set over more folders is grouped shallower. */
export const HELD_GROUPS_MAX = 500

export const HeldGroup = z.object({
  folder: z.string(),
  added: Count,
  changed: Count,
  removed: Count,
  /** Only the mode (permissions) changed. */
  mode: Count,
  /** How many of them are protected (held whatever the review asked). */
  protected: Count,
})
export type HeldGroup = z.infer<typeof HeldGroup>

/**
 * Protected changes a command made (git's configuration, hooks, `.env*`, ...) that were not landed silently:
 * `landed` false when they were discarded (`lanes run` without --land-protected), true when the user let them
 * land. One JSON line in `lanes run`'s output.
 */
export const CommandHeldEvent = defineEvent('command.held', {
  callId: z.string().min(1),
  paths: z.array(HeldPath),
  /** How many there were (paths is capped). */
  count: Count,
  landed: z.boolean(),
  /**
   * In the app: the held changes wait for the user's review, file by file, before anything of the command lands
   * (a command.reviewed follows). What each change does (capped: `count` says how many there are).
   */
  review: z.array(HeldFile).optional(),
  /** With `review`: every held change, counted by folder (at most HELD_GROUPS_MAX groups). */
  groups: z.array(HeldGroup).max(HELD_GROUPS_MAX).optional(),
  /**
   * The command was cut short when Lanes stopped (quit or crash), and every change it had made by then is held:
   * reviewed when the session went on.
   */
  interrupted: z.literal(true).optional(),
})

/** The user's decision on one held change (an `approval:reply` for a call whose changes are held). */
export const HeldDecision = z.object({
  relPath: z.string().min(1).max(4096),
  decision: z.enum(['accepted', 'rejected']),
})
export type HeldDecision = z.infer<typeof HeldDecision>

/**
 * The user's decision on every held change under a folder (a review group's row). A file's own decision wins
 * over its folder's, and a deeper folder's over a shallower one's; a change no decision covers is rejected.
 */
export const HeldFolderDecision = z.object({
  folder: z.string().max(4096),
  decision: z.enum(['accepted', 'rejected']),
})
export type HeldFolderDecision = z.infer<typeof HeldFolderDecision>

/**
 * The review of a command's held changes is over: only `accepted` land (their file.preimage lines and the
 * command.landing/landed pair follow). `rejected` never touch the workspace, each with why (the user's choice,
 * or a change it depends on was rejected). `by`: the user, or the run was stopped while it waited (all rejected).
 */
export const CommandReviewedEvent = defineEvent('command.reviewed', {
  callId: z.string().min(1),
  /** `cli`: a review left waiting by the app was finished by `lanes run --continue` (held changes discarded,
   * or landed with --land-protected). */
  by: z.enum(['user', 'stopped', 'cli']),
  accepted: z.array(z.string()),
  rejected: z.array(HeldPath),
  /** How many of each (the lists are capped). */
  acceptedCount: Count,
  rejectedCount: Count,
})

/** One file a rewind changes: from its content now to its content at the rewind's point (null: absent). */
export const RewindChange = z.object({
  path: z.string().min(1),
  relPath: z.string(),
  from: PathToken.nullable(),
  to: PathToken.nullable(),
})
export type RewindChange = z.infer<typeof RewindChange>

/** A file a rewind leaves as it is, and why (changed since by someone else, and the user kept it). */
export const RewindSkip = z.object({ relPath: z.string(), reason: z.string() })
export type RewindSkip = z.infer<typeof RewindSkip>

/**
 * The intent of a rewind, logged (and synced) before any file is touched: a rewind cut short by a crash is
 * resumed or rolled back from this on the next start, never left half done.
 */
export const RewindStartedEvent = defineEvent('rewind.started', {
  rewindId: z.string().min(1),
  /** undo: the files of one call; rewind: every file changed from this call on. */
  mode: z.enum(['undo', 'rewind']),
  callId: z.string().min(1),
  /** The calls whose file changes are undone. */
  callIds: z.array(z.string()),
  changes: z.array(RewindChange),
  skipped: z.array(RewindSkip),
  /** Set when the conversation goes back too: the next continue starts from this turn. */
  turn: z.number().int().positive().optional(),
  /**
   * Folders that go whole (made by the undone calls, everything in them unchanged since and going too): each is
   * moved by one rename to `<dir>/<its index>` in the session's store folder, and deleted from there once the
   * rewind is done. A rewind cut short puts them back from there (see recoverRewind).
   */
  trash: z.object({ dir: z.string().min(1), folders: z.array(z.string().min(1)) }).optional(),
})

export const RewindFinishedEvent = defineEvent('rewind.finished', {
  rewindId: z.string().min(1),
  /** done: every change applied. rolled-back: none is (a failure, or a crash it could not be resumed from). */
  outcome: z.enum(['done', 'rolled-back']),
  /** Finished on a later start, after a crash. */
  recovered: z.boolean().optional(),
  /** Done, and the conversation went back too: the session waits to continue from this turn. */
  conversationFromTurn: z.number().int().positive().optional(),
  error: z.string().optional(),
})

export const RunFinishedEvent = defineEvent('run.finished', {
  runId: z.string().min(1),
  reason: RunEndReason,
  usage: Usage.optional(),
  /** The model's stop reason as it came, when `reason` does not say it all (`unknown_stop`). */
  stopReason: z.string().optional(),
  /** With `refusal`: what the API said about it. */
  stopDetails: StopDetails.optional(),
})

export const RunFailedEvent = defineEvent('run.failed', {
  runId: z.string().min(1),
  /** Written for the user, not a stack trace. */
  error: z.string(),
  kind: RunFailureKind.optional(),
  /** The API asked to wait until then (a long retry-after): the run can be continued after it. */
  retryAt: EpochMs.optional(),
})

/**
 * The conversation was made smaller so the session can go on (issue 21). `server`: the API compacted it (a
 * `compaction` block in the turn's answer, sent back as it came); `client`: Lanes did, either by asking the model
 * for a summary that replaces the turns before `keptFromTurn` (`summary`), or by replacing the results of the
 * tool calls of turns before `clearedBeforeTurn` with a short note (`cleared_tool_results`). The conversation
 * rebuilt from the log applies it the same way.
 */
export const ContextCompactedEvent = defineEvent('context.compacted', {
  runId: z.string().min(1).optional(),
  /** The last turn the compaction covers (0: before the first). */
  turn: Count,
  mode: z.enum(['server', 'client']),
  strategy: z.enum(['summary', 'cleared_tool_results']),
  /** threshold: the context passed the compaction threshold; window_full: a request did not fit; continue: the user continued a run that ended on a full window. */
  reason: z.enum(['threshold', 'window_full', 'continue']),
  /** Context tokens before, as the API last reported them. */
  tokensBefore: Count,
  /** Estimated context tokens after (the next answer's usage says exactly). */
  tokensAfter: Count.optional(),
  /** The summary the model carries on from. */
  summary: z.string().optional(),
  /** summary (client): the turns from this one on are kept as they were; absent: none are. */
  keptFromTurn: z.number().int().positive().optional(),
  /** cleared_tool_results: the results of calls of turns before this one were replaced by a note. */
  clearedBeforeTurn: z.number().int().positive().optional(),
  /** Workspace files the model had read before, named to it after the compaction so it reads them again. */
  readFiles: z.array(z.string()).optional(),
})

/** One project-instruction file in use (AGENTS.md, CLAUDE.md, .lanes/instructions.md). */
export const InstructionFile = z.object({
  /** Relative to the workspace root, '/'-separated. */
  path: z.string(),
  bytes: Count,
  /** Estimated tokens of what is sent (after any cap). */
  tokens: Count,
  /** Why less than the file (or nothing) is sent: capped, binary, not UTF-8, secret path. */
  note: z.string().optional(),
})
export type InstructionFile = z.infer<typeof InstructionFile>

/**
 * Project instructions were read (issue 21). `root`: the files at the workspace root, sent in a marked section
 * of the system prompt, byte-identical until the next compaction re-reads them; `nested`: the files of a folder
 * the agent first read or wrote in, told to the model after that turn's results.
 */
export const InstructionsLoadedEvent = defineEvent('instructions.loaded', {
  scope: z.enum(['root', 'nested']),
  /** nested: the folder, relative to the root. */
  folder: z.string().optional(),
  /** nested: the turn after whose results they are told. */
  turn: Count.optional(),
  files: z.array(InstructionFile),
  /** What the model is sent, exactly (empty: nothing). */
  text: z.string(),
})

/** An MCP tool as a session offers it: the name the model sees and what its server says about it. */
export const McpToolInfo = z.object({
  name: z.string(),
  /** The tool's name on its server. */
  tool: z.string(),
  readOnly: z.boolean(),
  destructive: z.boolean(),
  /** Its definition's size in the request, estimated (about four characters a token). */
  tokens: Count,
})
export type McpToolInfo = z.infer<typeof McpToolInfo>

/**
 * An MCP server of the session changed state: `untrusted` (a workspace's server nobody trusted: never started),
 * `starting`, `ready` (with the tools it offers), `restarting` (after a crash), `failed`, `stopped`,
 * `needs-sign-in` (a remote server that wants OAuth and has no usable tokens: the session goes on without it); or its
 * configuration could not be used (`misconfigured`). `problems`: tools left out or renamed, and why.
 */
export const McpServerEvent = defineEvent('mcp.server', {
  server: z.string(),
  status: z.enum([
    'misconfigured',
    'untrusted',
    'starting',
    'ready',
    'restarting',
    'failed',
    'stopped',
    'needs-sign-in',
  ]),
  message: z.string().optional(),
  origin: z.enum(['workspace', 'user']).optional(),
  /** Runs in the OS sandbox (absent: not a process of this machine, or not started). */
  sandboxed: z.boolean().optional(),
  tools: z.array(McpToolInfo).optional(),
  problems: z.array(z.string()).optional(),
})

/**
 * "Allow for the rest of this session" (issue 21 §3): the user granted `rule` with the approval of `callId`
 * (it is logged before that call's `approval.decided`). It holds for this session until `rule.revoked`.
 */
export const RuleGrantedEvent = defineEvent('rule.granted', {
  ruleId: z.string().min(1),
  rule: SessionRule,
  callId: z.string().min(1).optional(),
})

/** The user revoked a session rule in the session's settings: calls it covered ask again. */
export const RuleRevokedEvent = defineEvent('rule.revoked', {
  ruleId: z.string().min(1),
})

/** The user stopped the run. */
export const RunStoppedEvent = defineEvent('run.stopped', { runId: z.string().min(1) })

export const SessionEvent = z.discriminatedUnion('type', [
  SessionCreatedEvent,
  RunStartedEvent,
  TurnStartedEvent,
  AssistantDeltaEvent,
  AssistantThinkingEvent,
  AssistantMessageEvent,
  ModelRetryingEvent,
  ToolQueuedEvent,
  ApprovalRequestedEvent,
  ApprovalDecidedEvent,
  RunPausedEvent,
  RunResumedEvent,
  ToolStartedEvent,
  ToolOutputEvent,
  ToolFinishedEvent,
  ToolSkippedEvent,
  ToolCancelledEvent,
  FileSnapshotEvent,
  FilePreimageEvent,
  CommandLandingEvent,
  CommandLandedEvent,
  CommandHeldEvent,
  CommandReviewedEvent,
  RewindStartedEvent,
  RewindFinishedEvent,
  RunFinishedEvent,
  RunFailedEvent,
  RunStoppedEvent,
  ContextCompactedEvent,
  InstructionsLoadedEvent,
  McpServerEvent,
  RuleGrantedEvent,
  RuleRevokedEvent,
])
export type SessionEvent = z.infer<typeof SessionEvent>

/** The events of a run's life, from its start to its end (a session's state is in the latest of them). */
export const RUN_EVENT_TYPES = [
  'run.started',
  'run.resumed',
  'run.paused',
  'run.finished',
  'run.failed',
  'run.stopped',
] as const satisfies readonly SessionEvent['type'][]

export type SessionEventType = SessionEvent['type']

/** `EventOf<'tool.started'>` is the tool.started member of the union. */
export type EventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>

/**
 * What the engine hands to the log writer: an event without `seq` (always assigned by the writer) and with an
 * optional `at` (the writer's clock when absent). Distributes over the union, so `type` still narrows the
 * fields.
 */
export type SessionEventDraft<T extends SessionEventType = SessionEventType> = T extends SessionEventType
  ? Omit<EventOf<T>, 'seq' | 'at'> & { at?: number }
  : never
