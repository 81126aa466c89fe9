import type { z } from 'zod'
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
}

/**
 * Where write_file and edit_file keep a file's content before they change it and after (issue 14: undo and
 * rewind). `before` is awaited before the write: a change whose previous content could not be kept is not
 * made.
 */
export interface ChangeKeeper {
  /** `content` null: the file does not exist yet. */
  before(change: {
    path: string
    relPath: string
    content: Buffer | null
  }): Promise<{ ok: true } | { ok: false; error: string }>
  /** What the change left on disk (its SHA-256 already computed): what a later rewind compares against. */
  after(change: { path: string; content: Buffer; hash: string }): Promise<void>
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string
  description: string
  input: S
  /** Safe tools may run concurrently with other safe tools. When in doubt: false (Codex habit). */
  concurrencySafe: boolean
  execute(input: z.infer<S>, ctx: ToolContext): Promise<ToolResult>
}

export function defineTool<S extends z.ZodType>(tool: Tool<S>): Tool<S> {
  return tool
}

export function ok(output: string, extra: Omit<ToolResult, 'output' | 'isError'> = {}): ToolResult {
  return { output, isError: false, ...extra }
}

export function fail(output: string, extra: Omit<ToolResult, 'output' | 'isError'> = {}): ToolResult {
  return { output, isError: true, ...extra }
}
