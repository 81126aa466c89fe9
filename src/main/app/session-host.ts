import { readFile } from 'node:fs/promises'
import type { ThinkingSetting } from '../../shared/models'
import { join } from 'node:path'
import { McpTrustStore, openMcp } from '../mcp/index'
import type { HeldFile, SessionEvent, SessionSummary } from '../../shared/events'
import type {
  ApprovalReply,
  ErrorCode,
  McpUserServerInput,
  RewindDone,
  RewindPreview,
  RewindTarget,
  SettingsUpdate,
  SettingsView,
} from '../../shared/ipc'
import type { AgentSession, RunOutcome } from '../agent/agent-session'
import { DEFAULT_MODEL } from '../agent/model'
import { modelContext } from '../../shared/models'
import { DEFAULT_BASH_TIMEOUT_SEC } from '../tools/bash/bash'
import {
  DEFAULT_ENGINE_SETTINGS,
  launchSession,
  prepareEngine,
  readSessionStart,
  type ConnectedModel,
  type SessionStart,
} from './engine'
import { writeJsonAtomic } from '../fs/atomic-write'
import { readSession, readSessionPreview, SessionLogError, sessionPaths } from '../session/log'
import { appendRevocation } from '../session/session-rules'
import { recordedWorkspace } from './folders'
import { applyRewindFromApp, finishCutShortRewind, planRewindView } from './rewind-view'
import { maskKey, type KeyStore } from './key-store'
import { UserMcpServers, type StoredMcpEntries } from './mcp-user-servers'
import { listSessions } from '../session/store'
import type { DemoHost } from '../agent/demo-model'

/**
 * The app's side of sessions, shared by the Electron window and browser mode: runs in the background,
 * events batched to the UI, approvals from the review screen, settings with the API key kept in main.
 */

/** A request refused for a reason the user can act on; the app API answers it with `code`, not 'failed'. */
export class RefusedError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message)
  }
}

/** What a base URL change asks the person at the screen, where the host has its own dialog (Electron's main). */
export type ConfirmBaseUrl = (change: { from: string | null; to: string | null }) => Promise<boolean>

interface StoredSettings {
  model?: string
  baseUrl?: string | null
  scheduler?: 'streaming' | 'batch'
  siblingSkip?: boolean
  autoApproveEdits?: boolean
  bashTimeoutSec?: number
  thinking?: ThinkingSetting
  compactAtTokens?: number | null
  /** The user's own MCP servers, `.mcp.json` entries minus their secret values (mcp-user-servers.ts). */
  mcpServers?: StoredMcpEntries
}

/** How long a continued session may take to ask again for a held review it left waiting. */
const HELD_RESUME_WAIT_MS = 10_000

interface Live {
  session: AgentSession
  model: ConnectedModel
  done: Promise<RunOutcome>
}

export interface SessionHostOptions {
  sessionsDir: string
  /** The desktop app or browser mode: what the demo tells the user to do to switch to Claude. */
  host?: DemoHost
  /** Where the API key entered in Settings is kept (key-store.ts). */
  keys: KeyStore
  /** Where the secret values of the user's MCP servers are kept: the same kind of store as the key. */
  mcpSecrets: KeyStore
  /**
   * Asks the user, outside the renderer, before a stored key goes to a new base URL. Without it (browser
   * mode), such a change must carry the key itself: a page that can change settings never sees the key, so
   * it cannot send it elsewhere without the user typing it.
   */
  confirmBaseUrl?: ConfirmBaseUrl
  /** Events for the UI, already batched per session. */
  onEvents(sessionId: string, events: SessionEvent[]): void
  onListChanged(): void
}

/** How long events gather before one message goes to the UI: about one frame. */
const BATCH_MS = 16

export class SessionHost {
  private readonly live = new Map<string, Live>()
  private readonly queues = new Map<string, SessionEvent[]>()
  private flushTimer: NodeJS.Timeout | null = null
  private engine: ReturnType<typeof prepareEngine> | null = null
  private readonly settingsFile: string

  /** The folders' MCP servers the user trusted, by the hash of what runs (mcp/trust.ts). */
  readonly mcpTrust: McpTrustStore
  /** The user's own MCP servers (Settings). */
  private readonly userMcp: UserMcpServers

  constructor(private readonly opts: SessionHostOptions) {
    this.settingsFile = join(opts.sessionsDir, 'settings.json')
    this.mcpTrust = new McpTrustStore(join(opts.sessionsDir, 'mcp-trust.json'))
    this.userMcp = new UserMcpServers(opts.mcpSecrets)
  }

  list(workspace: string): Promise<SessionSummary[]> {
    return listSessions(this.opts.sessionsDir, workspace)
  }

  isLive(sessionId: string): boolean {
    return this.live.has(sessionId)
  }

  /** The session's log; with `tail`, a preview of a longer one (`partial`; see readSessionPreview). */
  async load(
    sessionId: string,
    tail?: number,
  ): Promise<{ events: SessionEvent[]; warnings: string[]; live: boolean; partial?: boolean }> {
    const log = sessionPaths(this.opts.sessionsDir, sessionId).log
    if (tail !== undefined) {
      // A rewind a crash cut short is finished by the whole load that follows, before anything can act on it.
      const preview = await readSessionPreview(log, tail)
      if (!preview.whole)
        return {
          events: preview.events,
          warnings: preview.warnings,
          live: this.live.has(sessionId),
          partial: true,
        }
    }
    const read = await readSession(log)
    const live = this.live.has(sessionId)
    // A session a run drives has no rewind pending (a rewind is refused while a run goes on, and the run's
    // start finished any a crash left).
    if (live || !(await this.finishCutShortRewind(sessionId, read.events))) return { ...read, live }
    this.opts.onListChanged()
    return { ...(await readSession(log)), live }
  }

  private readonly recovering = new Map<string, Promise<boolean>>()

  /** One recovery at a time per session: two windows (or a reload) opening it at once wait for the same one. */
  private finishCutShortRewind(sessionId: string, events: readonly SessionEvent[]): Promise<boolean> {
    let pending = this.recovering.get(sessionId)
    if (!pending) {
      pending = finishCutShortRewind(this.opts.sessionsDir, sessionId, events).finally(() =>
        this.recovering.delete(sessionId),
      )
      this.recovering.set(sessionId, pending)
    }
    return pending
  }

  /**
   * A new session for `task` in `workspace`, or a follow-up task in an existing session whose run has ended
   * (in the session's own folder: `workspace` is then not used).
   */
  async start(workspace: string | null, task: string, sessionId?: string): Promise<string> {
    if (sessionId !== undefined && this.live.has(sessionId)) {
      throw new Error('This session is still running: stop it or wait for it to finish.')
    }
    return this.launch(workspace, sessionId === undefined ? { task } : { sessionId }, (s) => s.run(task))
  }

  /**
   * Continues a paused or interrupted run in the folder its log recorded; decisions given here apply to the
   * calls that wait for one.
   */
  async continue(sessionId: string, decisions: ApprovalReply[] = []): Promise<string> {
    if (this.live.has(sessionId)) return sessionId
    return this.launch(null, { sessionId }, (s) => s.continue(decisions))
  }

  stop(sessionId: string): boolean {
    const live = this.live.get(sessionId)
    live?.session.stop()
    return live !== undefined
  }

  async reply(sessionId: string, decisions: ApprovalReply[]): Promise<string | null> {
    const live = this.live.get(sessionId)
    if (!live) {
      // Paused in an earlier process (the app was restarted): continue it with these decisions.
      await this.continue(sessionId, decisions)
      return null
    }
    for (const d of decisions) {
      const result = await live.session.decide(d.callId, d)
      if (!result.ok) return `${d.callId}: ${result.error}`
    }
    return null
  }

  /** A page of the full diff of a change waiting for review (`approval:diff`). */
  async fullDiff(
    sessionId: string,
    callId: string,
    from: number,
    count: number,
  ): Promise<{ total: number; lines: string[] }> {
    const live = this.live.get(sessionId)
    if (!live)
      throw new RefusedError(
        'not-found',
        'The full change is not at hand: Lanes was restarted since it was proposed. Judge it by its summary, or reject it and ask the agent again.',
      )
    const page = live.session.fullDiff(callId, from, count)
    if (!page.ok) throw new RefusedError('not-found', page.error)
    return { total: page.total, lines: page.lines }
  }

  /**
   * The session's command waiting for the review of its held changes, live in this app: after a restart the
   * session is continued first (the review is asked again, from what the command's layer kept).
   */
  private async heldReviewSession(sessionId: string, callId: string): Promise<AgentSession> {
    if (!this.live.has(sessionId)) await this.continue(sessionId)
    const live = this.live.get(sessionId)
    // The continued run reaches the review in a moment (its log is read, the call resumed).
    for (let waited = 0; live && waited < HELD_RESUME_WAIT_MS; waited += 25) {
      if (live.session.waitsForHeldReview(callId)) return live.session
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new RefusedError('not-found', 'That command has no changes waiting for a review.')
  }

  /** A page of one folder group of a command's held changes (`held:files`). */
  async heldFiles(
    sessionId: string,
    callId: string,
    folder: string,
    offset: number,
    limit: number,
  ): Promise<{ total: number; files: HeldFile[] }> {
    const session = await this.heldReviewSession(sessionId, callId)
    const page = await session.heldFiles(callId, folder, offset, limit)
    if (!page.ok) throw new RefusedError('not-found', page.error)
    return { total: page.total, files: page.files }
  }

  /** One held change with its diff (`held:diff`). */
  async heldDiff(sessionId: string, callId: string, relPath: string): Promise<HeldFile> {
    const session = await this.heldReviewSession(sessionId, callId)
    const found = await session.heldDiff(callId, relPath)
    if (!found.ok) throw new RefusedError('not-found', found.error)
    return found.file
  }

  /**
   * Revokes a session rule: through the run's own log writer when the session runs in this app, else appended
   * to its log directly (one writer at a time: a session that starts meanwhile waits for the line).
   */
  async revokeRule(sessionId: string, ruleId: string): Promise<{ live: boolean }> {
    const live = this.live.get(sessionId)
    const revoked = live
      ? await live.session.revokeRule(ruleId)
      : await appendRevocation(this.opts.sessionsDir, sessionId, ruleId)
    if (!revoked) throw new RefusedError('not-found', 'That rule is not in force in this session.')
    return { live: live !== undefined }
  }

  /** What an undo or rewind would change; refused while a run of the session is going on in this app. */
  async planRewind(target: RewindTarget): Promise<RewindPreview> {
    this.refuseWhileLive(target.sessionId)
    const planned = await planRewindView(this.opts.sessionsDir, target)
    if ('ok' in planned) throw new RefusedError('invalid-input', planned.reason)
    return planned
  }

  async applyRewind(target: RewindTarget & { rewindConflicts?: string[] }): Promise<RewindDone> {
    this.refuseWhileLive(target.sessionId)
    const done = await applyRewindFromApp(this.opts.sessionsDir, target)
    if ('ok' in done) throw new RefusedError('invalid-input', done.reason)
    this.opts.onListChanged()
    return done
  }

  private refuseWhileLive(sessionId: string): void {
    if (this.live.has(sessionId))
      throw new RefusedError(
        'invalid-input',
        'The agent is working in this session (or waiting for your review); stop it first, then undo or rewind.',
      )
  }

  async settings(): Promise<SettingsView> {
    const stored = await this.readSettings()
    const envKey = process.env.ANTHROPIC_API_KEY
    const storedKey = await this.opts.keys.get()
    const key = storedKey ?? envKey ?? null
    const baseUrl = effectiveBaseUrl(stored)
    const storage = await this.opts.keys.storage()
    return {
      model: stored.model ?? DEFAULT_MODEL,
      baseUrl,
      scheduler: stored.scheduler ?? DEFAULT_ENGINE_SETTINGS.scheduler,
      siblingSkip: stored.siblingSkip ?? DEFAULT_ENGINE_SETTINGS.siblingSkip,
      autoApproveEdits: stored.autoApproveEdits ?? DEFAULT_ENGINE_SETTINGS.autoApproveEdits,
      bashTimeoutSec: stored.bashTimeoutSec ?? DEFAULT_BASH_TIMEOUT_SEC,
      thinking: stored.thinking ?? 'adaptive',
      compactAtTokens: stored.compactAtTokens ?? null,
      apiKey: {
        source: storedKey ? 'stored' : envKey ? 'environment' : 'none',
        masked: key ? maskKey(key) : null,
        storage: storage.kind,
        file: storage.file,
      },
      demo: !key && !baseUrl,
      mcpServers: await this.userMcp.views(stored.mcpServers ?? {}),
    }
  }

  /** Adds or changes one of the user's MCP servers; refused with the reason when its entry is not valid. */
  async saveMcpServer(input: McpUserServerInput): Promise<SettingsView> {
    const stored = await this.readSettings()
    const saved = await this.userMcp.save(stored.mcpServers ?? {}, input)
    if ('error' in saved) throw new RefusedError('invalid-input', saved.error)
    await this.writeSettings({ ...stored, mcpServers: saved.entries })
    return this.settings()
  }

  async removeMcpServer(name: string): Promise<SettingsView> {
    const stored = await this.readSettings()
    if (!Object.hasOwn(stored.mcpServers ?? {}, name))
      throw new RefusedError('not-found', `There is no server named "${name}".`)
    await this.writeSettings({
      ...stored,
      mcpServers: await this.userMcp.remove(stored.mcpServers ?? {}, name),
    })
    return this.settings()
  }

  async updateSettings(update: SettingsUpdate): Promise<SettingsView> {
    const stored = await this.readSettings()
    const { apiKey, ...rest } = update
    const from = effectiveBaseUrl(stored)
    if (rest.baseUrl !== undefined && rest.baseUrl !== from && apiKey === undefined) {
      // The key Lanes would send (stored, or from the environment) must not follow a new address unasked.
      const key = (await this.opts.keys.get()) ?? process.env.ANTHROPIC_API_KEY
      if (key) await this.consentToBaseUrl(from, rest.baseUrl)
    }
    if (apiKey === null) await this.opts.keys.clear()
    else if (apiKey !== undefined) await this.opts.keys.set(apiKey)
    await this.writeSettings({ ...stored, ...rest })
    return this.settings()
  }

  /** `newWorkspace` is the folder of a new session; an existing session runs in the folder it recorded. */
  private async launch(
    newWorkspace: string | null,
    target: { task: string } | { sessionId: string },
    go: (session: AgentSession) => Promise<RunOutcome>,
  ): Promise<string> {
    this.engine ??= prepareEngine()
    const { registry } = await this.engine
    const stored = await this.readSettings()
    const resume = 'sessionId' in target ? await this.sessionStart(target.sessionId) : null
    const workspace = resume ? resume.workspace : newWorkspace
    if (workspace === null) throw new RefusedError('invalid-input', 'Open a project folder first.')
    // The folder's MCP servers the user trusted (exactly as they are now) start with the run, in the background.
    const trusted = await this.mcpTrust.trusted(workspace)
    // The user's own servers (Settings) start too: trusted, since the user typed them.
    const user = await this.userMcp.configs(stored.mcpServers ?? {})
    const mcp = await openMcp({
      workspace,
      registry,
      userFiles: [],
      userServers: user.servers,
      userProblems: user.problems,
      trust: trusted,
      // The model's window decides when the tools' definitions go behind the search tool.
      contextWindowTokens: modelContext(stored.model || DEFAULT_MODEL).window,
    })
    const mcpSecrets = await this.userMcp.secretValues()
    const launched = await launchSession({
      workspace,
      registry: mcp?.registry ?? registry,
      model: {
        host: this.opts.host ?? 'app',
        apiKey: (await this.opts.keys.get()) ?? undefined,
        // As Settings shows it: saved there (a URL, or null for the Anthropic API), else the environment.
        ...(stored.baseUrl !== undefined ? { baseUrl: stored.baseUrl } : {}),
        ...(stored.model ? { model: stored.model } : {}),
        ...(stored.thinking ? { thinking: stored.thinking } : {}),
      },
      settings: {
        ...DEFAULT_ENGINE_SETTINGS,
        sessionsDir: this.opts.sessionsDir,
        scheduler: stored.scheduler ?? DEFAULT_ENGINE_SETTINGS.scheduler,
        siblingSkip: stored.siblingSkip ?? DEFAULT_ENGINE_SETTINGS.siblingSkip,
        autoApproveEdits: stored.autoApproveEdits ?? DEFAULT_ENGINE_SETTINGS.autoApproveEdits,
        ...(stored.bashTimeoutSec !== undefined ? { bashTimeoutSec: stored.bashTimeoutSec } : {}),
        ...(typeof stored.compactAtTokens === 'number' ? { compactAtTokens: stored.compactAtTokens } : {}),
      },
      approvals: 'interactive',
      secrets: mcpSecrets.map((value) => ({ value, source: "an MCP server's key in Settings" })),
      // The session names itself: its first event (session.created) comes before `launchSession` returns.
      onEvent: (event, sessionId) => this.enqueue(sessionId, event),
      from: resume ? { resume: resume.start } : (target as { task: string }),
    }).catch(async (e: unknown) => {
      await mcp?.hub.close()
      throw e
    })
    const { session, model } = launched
    mcp?.hub.attach((draft) => void session.emit(draft).catch(() => undefined))
    const done = go(session).finally(async () => {
      // Every server's process ends with the run, its stop in the log.
      await mcp?.hub.close().catch(() => undefined)
      this.live.delete(session.sessionId)
      await session.close().catch(() => undefined)
      await model.close().catch(() => undefined)
      this.opts.onListChanged()
    })
    this.live.set(session.sessionId, { session, model, done })
    this.opts.onListChanged()
    return session.sessionId
  }

  /**
   * How an existing session started, and the folder it runs in: the one its log recorded, whichever folder
   * the app has open now. A session or folder that is gone is refused with a message that says so.
   */
  private async sessionStart(sessionId: string): Promise<{ start: SessionStart; workspace: string }> {
    let start: SessionStart
    try {
      start = await readSessionStart(this.opts.sessionsDir, sessionId)
    } catch (e) {
      if (e instanceof SessionLogError && e.code === 'not-found') {
        throw new RefusedError('not-found', `There is no session ${sessionId}.`)
      }
      throw e
    }
    const recorded = await recordedWorkspace(start.created.workspace)
    if (!recorded.ok) throw new RefusedError(recorded.code, recorded.error)
    return { start, workspace: recorded.value.path }
  }

  private enqueue(sessionId: string, event: SessionEvent): void {
    let queue = this.queues.get(sessionId)
    if (!queue) this.queues.set(sessionId, (queue = []))
    queue.push(event)
    if (event.type.startsWith('run.') || event.type === 'session.created') this.listChanged = true
    this.flushTimer ??= setTimeout(() => this.flush(), BATCH_MS)
  }

  private listChanged = false

  private flush(): void {
    this.flushTimer = null
    for (const [sessionId, events] of this.queues) this.opts.onEvents(sessionId, events)
    this.queues.clear()
    if (this.listChanged) {
      this.listChanged = false
      this.opts.onListChanged()
    }
  }

  /** Stops every live run (the app is quitting) and waits for their logs to be consistent. */
  async shutdown(): Promise<void> {
    // A session that only waits for the review of a command's held changes is left as it stands (its log and the
    // command's layer are durable): the review is asked again when it is continued. Stopping it would discard them.
    const waiting = [...this.live.values()].filter((l) => l.session.waitsOnlyForHeldReviews())
    const running = [...this.live.values()].filter((l) => !waiting.includes(l))
    for (const live of running) live.session.stop()
    await Promise.allSettled([...running.map((l) => l.done), ...waiting.map((l) => l.session.suspend())])
    this.flush()
  }

  private async consentToBaseUrl(from: string | null, to: string | null): Promise<void> {
    const where = to ?? 'the default Anthropic API'
    if (!this.opts.confirmBaseUrl) {
      throw new RefusedError(
        'forbidden',
        `To send your API key to ${where}, type the key again together with the new base URL: Lanes does not ` +
          'send a saved key to a new address on a request from this page alone.',
      )
    }
    if (!(await this.opts.confirmBaseUrl({ from, to }))) {
      throw new RefusedError(
        'cancelled',
        `The base URL was not changed: you chose not to send your key to ${where}.`,
      )
    }
  }

  private async readSettings(): Promise<StoredSettings> {
    try {
      const parsed = JSON.parse(await readFile(this.settingsFile, 'utf8')) as unknown
      return typeof parsed === 'object' && parsed !== null ? (parsed as StoredSettings) : {}
    } catch {
      return {}
    }
  }

  private async writeSettings(settings: StoredSettings): Promise<void> {
    // Owner-only: nobody else needs to know which models and addresses this user works with.
    await writeJsonAtomic(this.settingsFile, settings, { mode: 0o600 })
  }
}

/** The base URL requests go to: the one saved in Settings, else ANTHROPIC_BASE_URL, else the default (null). */
function effectiveBaseUrl(stored: StoredSettings): string | null {
  return stored.baseUrl !== undefined ? stored.baseUrl : (process.env.ANTHROPIC_BASE_URL ?? null)
}
