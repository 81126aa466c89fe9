import type { z } from 'zod'
import type { ApprovalPreview, SessionRule } from '../../shared/events'
import type { CaptureHost } from './bash/capture/land'
import type { CommandApproval } from './bash/sandbox/policy'
import type { SensitivePathRules } from './sensitive-paths'
import type { SnapshotStore } from './snapshots'

/**
 * What every tool returns. `output` is what the model sees; `title` and `metadata` are for the UI
 * (diff, counts, truncation, exit code). Business failures are results with `isError: true`, never
 * thrown exceptions: a throw means the infrastructure broke (DESIGN 2).
 */
export interface ToolResult {
  output: string
  isError: boolean
  title?: string
  metadata?: Record<string, unknown>
}

export interface ToolContext {
  /** Real path of the workspace root (already resolved with realpath). */
  workspace: string
  /** The workspace's sensitive-path rules, computed once when it was opened (`loadSensitivePathRules`). */
  pathRules: SensitivePathRules
  /** Aborted when the user stops the run or a sibling's infrastructure failure cancels the group. */
  signal: AbortSignal
  /** The session's read/write snapshots for optimistic-concurrency checks. */
  snapshots: SnapshotStore
  /** Folder of the session where full outputs (bash logs) are saved. Exists before execute is called. */
  outputDir: string
  /** Id of the tool call, for naming output files. */
  callId: string
  /** Live output for the UI (bash chunks). Callers throttle; tools may call it often. */
  onProgress: (chunk: string) => void
  /** Default bash timeout in seconds when the call gives none (settings). */
  bashTimeoutSec?: number
  /**
   * Set when a person approved this call. Without it a bash command runs in the read-only sandbox (the
   * policy let it run unasked); with it, in the writable one, or outside as the approval says (DESIGN 2.3).
   */
  approval?: CommandApproval
  /** Keeps the contents around each file change so it can be undone; absent: changes are not kept. */
  changes?: ChangeKeeper
  /**
   * Where an approved command's captured changes land (issue 20): the session's store and log. Absent: a
   * command's changes are neither captured nor kept (the tool run alone, in a unit test).
   */
  capture?: CaptureHost
}

/**
 * Where write_file and edit_file keep a file's content before they change it and after (issue 14: undo and
 * rewind). `before` is awaited before the write: a change whose previous content could not be kept is not
 * made.
 */
export interface ChangeKeeper {
  /** `content` null: the file does not exist yet. `hash`: its SHA-256 when the caller has it already. */
  before(change: {
    path: string
    relPath: string
    content: Buffer | null
    hash?: string
  }): Promise<{ ok: true } | { ok: false; error: string }>
  /** What the change left on disk (its SHA-256 already computed): what a later rewind compares against. */
  after(change: { path: string; content: Buffer; hash: string }): Promise<void>
}

/** A command, or an MCP server's tool, the user marked "always allow" in one workspace. */
export type AlwaysAllowRule =
  | {
      tool: 'bash'
      /** The exact command, as validated. */
      command: string
    }
  | {
      tool: 'mcp'
      /** The server, by a hash of what runs (mcp/trust.ts `serverIdentity`), never by its name alone. */
      server: string
      /** The tool's own name on that server. */
      name: string
    }

/** Whether two rules allow the same thing (the store keeps each once). */
export function sameAlwaysAllowRule(a: AlwaysAllowRule, b: AlwaysAllowRule): boolean {
  if (a.tool === 'bash') return b.tool === 'bash' && a.command === b.command
  return b.tool === 'mcp' && a.server === b.server && a.name === b.name
}

export interface PolicyOptions {
  /** Real path of the workspace root. */
  workspace: string
  /** The workspace's sensitive-path rules (computed once when the session opened it). */
  pathRules: SensitivePathRules
  alwaysAllow: readonly AlwaysAllowRule[]
  /**
   * The session's "allow for the rest of this session" rules in force (issue 21 §3); each tool honours the kind
   * it offers (`Tool.sessionRule`), never for a call that would otherwise always ask. Absent: none.
   */
  sessionRules?: readonly SessionRule[]
  /** Writes and edits outside protected paths run without asking. */
  autoApproveEdits: boolean
  /**
   * This machine has an OS sandbox (DESIGN 2.3). Read-only commands run without asking only inside it; without
   * one every command asks.
   */
  sandbox: boolean
}

/**
 * The approval policy's answer for one call (DESIGN 5), decided without blocking: `allow` runs at once, `ask`
 * waits for the user with a preview (`protected`: a protected path, which no setting lets through), `deny`
 * never runs and tells the model why.
 */
export type PolicyVerdict =
  /** `byRule`: a command the user marked "always allow": it runs as an approved one. */
  { kind: 'allow'; byRule?: true } | { kind: 'ask'; protected: boolean } | { kind: 'deny'; reason: string }

/** The content a call earlier in the same turn will leave at a path, not written yet (approval preview). */
export interface PlanBase {
  path: string
  content: string | null
}

export interface PreviewOptions {
  /** The policy asked because the path is protected (shown to the user). */
  protected: boolean
  /** The turn's earlier change to the same path, which this preview builds on. */
  base?: PlanBase
}

export type PreviewResult<P> =
  | {
      ok: true
      preview: ApprovalPreview
      /** What `execute` does once approved, so the change is planned once. */
      plan?: P
      /** The content the call leaves at its path, for the previews of the turn's later calls. */
      after?: string
    }
  /** The call cannot apply (old_string missing): it fails without asking anyone. */
  | { ok: false; error: string }

/**
 * What the user approved: the plan the preview made in this process, or only the preview as the log kept it
 * (a call resumed after a restart).
 */
export interface Approved<P> {
  plan?: P
  preview: ApprovalPreview
}

/**
 * A tool owns everything known about it: how it is shown (`title`), whether a call may run without asking
 * (`policy`), what the user reviews (`preview`), what an approval of it may carry (`runsInSandbox`,
 * `alwaysAllowRule`), what its results carry (`reportsExecutionTime`) and what it does (`execute`). Nothing
 * else switches on a tool's name: the loop, the approval gate and the turn's calls know tools only through
 * these hooks, so a new kind of tool (MCP) is added without touching them. Every hook but `execute` is
 * optional, and its absence is the cautious answer.
 */
export interface Tool<S extends z.ZodType = z.ZodType, P = unknown> {
  name: string
  description: string
  input: S
  /**
   * The JSON Schema the model is told, when the tool has one of its own (an MCP server's tool: `input` then
   * checks it); absent, it is generated from `input`.
   */
  inputJsonSchema?: { type: 'object'; [key: string]: unknown }
  /** The MCP server that provides the tool (events and the timeline show it); absent for Lanes' own tools. */
  server?: string
  /** Safe tools may run concurrently with other safe tools. When in doubt: false (Codex habit). */
  concurrencySafe: boolean
  /** "Read src/app.ts", "Run npm test": what the timeline shows before the call has a result. */
  title?(input: z.infer<S>): string
  /** Decided the moment the call arrives, on its arguments alone. Without one every call asks (unsafe unless
   * the tool says otherwise). */
  policy?(input: z.infer<S>, opts: PolicyOptions): PolicyVerdict
  /** What the user reviews when the policy asks; without one, the call's arguments. */
  preview?(input: z.infer<S>, ctx: ToolContext, opts: PreviewOptions): Promise<PreviewResult<P>>
  /**
   * Its preview is made from the call's arguments alone (bash: the command as written), never from the
   * workspace: it need not wait for the turn's earlier reads to finish (approval-gate.ts `prepare`), so the
   * user is asked sooner and the call is decided by the time the scheduler lets it run.
   */
  previewFromArguments?: boolean
  /**
   * Runs in the OS sandbox (DESIGN 2.3): an approval of it keeps the review's "needs the internet" and "run
   * outside the sandbox" switches (dropped for any other tool).
   */
  runsInSandbox?: boolean
  /**
   * The rule an "always allow" given with an approval of this call records (bash: its exact command), which
   * the tool's own `policy` then honours. Without it, "always allow" is ignored for the tool.
   */
  alwaysAllowRule?(input: z.infer<S>): AlwaysAllowRule
  /**
   * What "allow for the rest of this session" given with an approval of this call grants (issue 21 §3): file
   * tools, edits to any unprotected file; bash, the command's leading words; an MCP tool, the tool. Undefined
   * where the rule could never let such a call through (a protected path, a command the validator refuses or
   * no sandbox would hold, a destructive tool): then it is not offered. The tool's `policy` honours it.
   */
  sessionRule?(input: z.infer<S>, opts: PolicyOptions): SessionRule | undefined
  /** Its results tell the model how long the call ran (`[Execution time: N ms]`, DESIGN 3.3). */
  reportsExecutionTime?: boolean
  /**
   * A call the log shows running when the app stopped (a restart's continue): finishes what the tool had left
   * (bash: a command's held changes, asked again, or the changes of a command cut short, held for review), and
   * answers the call as `execute` would have. Null, or no hook, when there is nothing to finish: the call was
   * interrupted.
   */
  resume?(input: z.infer<S>, ctx: ToolContext): Promise<ToolResult | null>
  /** `approved`: set when the call went through approval, with the plan its preview made. */
  execute(input: z.infer<S>, ctx: ToolContext, approved?: Approved<P>): Promise<ToolResult>
}

export function defineTool<S extends z.ZodType, P = unknown>(tool: Tool<S, P>): Tool<S, P> {
  return tool
}

export function ok(output: string, extra: Omit<ToolResult, 'output' | 'isError'> = {}): ToolResult {
  return { output, isError: false, ...extra }
}

export function fail(output: string, extra: Omit<ToolResult, 'output' | 'isError'> = {}): ToolResult {
  return { output, isError: true, ...extra }
}
