import type { RunFailureKind, SessionEvent } from '../../shared/events'
import type { ToolRegistry } from '../tools/registry'
import type { SensitivePathRules } from '../tools/sensitive-paths'
import type { AlwaysAllowStore } from './always-allow-store'
import type { ModelClient } from './model'
import type { Redact } from './project-instructions'
import type { SchedulerMode } from './scheduler'

/**
 * How calls that need approval get their decision:
 * - interactive: the UI decides through `decide()`; the run pauses while it waits;
 * - pause: headless without --approve: persist the pause and stop (the process exits 3);
 * - all / none: headless, every asking call approved / rejected at once.
 */
export type ApprovalMode = 'interactive' | 'pause' | 'all' | 'none'

export interface AgentOptions {
  /** Real path of the workspace root. */
  workspace: string
  sessionsDir: string
  registry: ToolRegistry
  model: ModelClient
  modelName: string
  baseUrl?: string
  demo: boolean
  scheduler: SchedulerMode
  siblingSkip: boolean
  concurrency?: number
  maxTurns: number
  bashTimeoutSec?: number
  autoApproveEdits: boolean
  approvals: ApprovalMode
  alwaysAllow?: AlwaysAllowStore
  /**
   * A command's held protected changes land (`lanes run --land-protected`); otherwise they are discarded and
   * reported (command.held).
   */
  landProtected?: boolean
  /**
   * The app's own secrets (the API key in use, its MCP servers' keys) and what each is: hidden wherever a tool's
   * output would show them.
   */
  appSecrets?: readonly { value: string; source: string }[]
  /** Lanes' own folders (its data folder) besides `sessionsDir`: no tool reads them, wherever they lie. */
  ownData?: readonly string[]
  /** Compact at this many context tokens at the latest (Settings; it can only lower the automatic threshold). */
  compactAtTokens?: number
  /** Hides secret values in project instructions (default: the workspace's redactor, as for tool results). */
  redactInstructions?: Redact
  /**
   * Loads the workspace's sensitive-path rules (default: `loadSensitivePathRules`), in the background from the
   * session's start; tests hold it back to see that what needs the rules waits for them, and nothing else does.
   */
  loadPathRules?: (workspace: string) => Promise<SensitivePathRules>
  /** Every event, after it is in the log, with the id of the session it belongs to. */
  onEvent?: (event: SessionEvent, sessionId: string) => void
}

export type RunOutcome =
  | { status: 'finished' }
  | { status: 'paused'; callIds: string[] }
  | { status: 'stopped' }
  | { status: 'failed'; error: string; kind: RunFailureKind }
