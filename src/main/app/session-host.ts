import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { SessionEvent, SessionSummary } from '../../shared/events'
import type { ApprovalReply, SettingsUpdate, SettingsView } from '../../shared/ipc'
import type { AgentSession, RunOutcome } from '../agent/loop'
import { DEFAULT_MODEL } from '../agent/model'
import {
  agentOptions,
  AgentSession as Session,
  connectModel,
  DEFAULT_ENGINE_SETTINGS,
  prepareEngine,
  type ConnectedModel,
} from './engine'
import { readSession } from '../session/log'
import { listSessions } from '../session/store'

/**
 * The app's side of sessions, shared by the Electron window and browser mode: runs in the background,
 * events batched to the UI, approvals from the review screen, settings with the API key kept in main.
 */

/** Electron's safeStorage, where the OS has a secret store; absent in browser mode. */
export interface SecretBox {
  encrypt(plain: string): string
  decrypt(sealed: string): string
}

interface StoredSettings {
  model?: string
  baseUrl?: string | null
  scheduler?: 'streaming' | 'batch'
  siblingSkip?: boolean
  autoApproveEdits?: boolean
  bashTimeoutSec?: number
  /** Sealed with the OS secret store; never plain text. */
  apiKeySealed?: string
}

interface Live {
  session: AgentSession
  model: ConnectedModel
  done: Promise<RunOutcome>
}

export interface SessionHostOptions {
  sessionsDir: string
  secrets?: SecretBox
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

  constructor(private readonly opts: SessionHostOptions) {
    this.settingsFile = join(opts.sessionsDir, 'settings.json')
  }

  list(workspace: string): Promise<SessionSummary[]> {
    return listSessions(this.opts.sessionsDir, workspace)
  }

  isLive(sessionId: string): boolean {
    return this.live.has(sessionId)
  }

  async load(sessionId: string): Promise<{ events: SessionEvent[]; warnings: string[]; live: boolean }> {
    const { events, warnings } = await readSession(join(this.opts.sessionsDir, `${sessionId}.jsonl`))
    return { events, warnings, live: this.live.has(sessionId) }
  }

  /** A new session for `task`, or a follow-up task in an existing session whose run has ended. */
  async start(workspace: string, task: string, sessionId?: string): Promise<string> {
    if (sessionId !== undefined && this.live.has(sessionId)) {
      throw new Error('This session is still running: stop it or wait for it to finish.')
    }
    return this.launch(workspace, sessionId, (s) => s.run(task), task)
  }

  /** Continues a paused or interrupted run; decisions given here apply to the calls that wait for one. */
  async continue(workspace: string, sessionId: string, decisions: ApprovalReply[] = []): Promise<string> {
    if (this.live.has(sessionId)) return sessionId
    return this.launch(workspace, sessionId, (s) => s.continue(decisions))
  }

  stop(sessionId: string): boolean {
    const live = this.live.get(sessionId)
    live?.session.stop()
    return live !== undefined
  }

  async reply(workspace: string, sessionId: string, decisions: ApprovalReply[]): Promise<string | null> {
    const live = this.live.get(sessionId)
    if (!live) {
      // Paused in an earlier process (the app was restarted): continue it with these decisions.
      await this.continue(workspace, sessionId, decisions)
      return null
    }
    for (const d of decisions) {
      const result = await live.session.decide(d.callId, d)
      if (!result.ok) return `${d.callId}: ${result.error}`
    }
    return null
  }

  async settings(): Promise<SettingsView> {
    const stored = await this.readSettings()
    const envKey = process.env.ANTHROPIC_API_KEY
    const storedKey = this.storedKey(stored)
    const key = storedKey ?? envKey ?? null
    const baseUrl = stored.baseUrl !== undefined ? stored.baseUrl : (process.env.ANTHROPIC_BASE_URL ?? null)
    return {
      model: stored.model ?? DEFAULT_MODEL,
      baseUrl,
      scheduler: stored.scheduler ?? DEFAULT_ENGINE_SETTINGS.scheduler,
      siblingSkip: stored.siblingSkip ?? DEFAULT_ENGINE_SETTINGS.siblingSkip,
      autoApproveEdits: stored.autoApproveEdits ?? DEFAULT_ENGINE_SETTINGS.autoApproveEdits,
      bashTimeoutSec: stored.bashTimeoutSec ?? 180,
      apiKey: {
        source: storedKey ? 'stored' : envKey ? 'environment' : 'none',
        masked: key ? maskKey(key) : null,
        canStore: this.opts.secrets !== undefined,
      },
      demo: !key && !baseUrl,
    }
  }

  async updateSettings(update: SettingsUpdate): Promise<SettingsView> {
    const stored = await this.readSettings()
    const { apiKey, ...rest } = update
    const next: StoredSettings = { ...stored, ...rest }
    if (apiKey !== undefined) {
      if (apiKey === null) delete next.apiKeySealed
      else if (!this.opts.secrets) {
        throw new Error(
          'This system offers no secret store, so Lanes will not save the key in plain text. Set ANTHROPIC_API_KEY in the environment instead.',
        )
      } else next.apiKeySealed = this.opts.secrets.encrypt(apiKey)
    }
    await this.writeSettings(next)
    return this.settings()
  }

  private async launch(
    workspace: string,
    sessionId: string | undefined,
    go: (session: AgentSession) => Promise<RunOutcome>,
    title?: string,
  ): Promise<string> {
    this.engine ??= prepareEngine()
    const { registry } = await this.engine
    const stored = await this.readSettings()
    let turnsDone = 0
    if (sessionId !== undefined) {
      const { events } = await readSession(join(this.opts.sessionsDir, `${sessionId}.jsonl`))
      turnsDone = events.filter((e) => e.type === 'assistant.message').length
    }
    const model = await connectModel(
      {
        apiKey: this.storedKey(stored) ?? undefined,
        ...(stored.baseUrl ? { baseUrl: stored.baseUrl } : {}),
        ...(stored.model ? { model: stored.model } : {}),
      },
      workspace,
      { turnsDone },
    )
    const settings = {
      ...DEFAULT_ENGINE_SETTINGS,
      sessionsDir: this.opts.sessionsDir,
      scheduler: stored.scheduler ?? DEFAULT_ENGINE_SETTINGS.scheduler,
      siblingSkip: stored.siblingSkip ?? DEFAULT_ENGINE_SETTINGS.siblingSkip,
      autoApproveEdits: stored.autoApproveEdits ?? DEFAULT_ENGINE_SETTINGS.autoApproveEdits,
      ...(stored.bashTimeoutSec !== undefined ? { bashTimeoutSec: stored.bashTimeoutSec } : {}),
    }
    let id = sessionId
    const options = agentOptions(
      { workspace, registry, model, approvals: 'interactive' },
      settings,
      (event) => this.enqueue(id as string, event),
    )
    let session: AgentSession
    try {
      session =
        sessionId === undefined
          ? await Session.create(options, title?.split('\n')[0]?.slice(0, 120))
          : (await Session.open(sessionId, options)).session
    } catch (e) {
      await model.close()
      throw e
    }
    id = session.sessionId
    const done = go(session).finally(async () => {
      this.live.delete(session.sessionId)
      await session.close().catch(() => undefined)
      await model.close().catch(() => undefined)
      this.opts.onListChanged()
    })
    this.live.set(session.sessionId, { session, model, done })
    this.opts.onListChanged()
    return session.sessionId
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
    for (const live of this.live.values()) live.session.stop()
    await Promise.allSettled([...this.live.values()].map((l) => l.done))
    this.flush()
  }

  private storedKey(stored: StoredSettings): string | null {
    if (!stored.apiKeySealed || !this.opts.secrets) return null
    try {
      return this.opts.secrets.decrypt(stored.apiKeySealed)
    } catch {
      return null
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
    await mkdir(this.opts.sessionsDir, { recursive: true })
    const temp = `${this.settingsFile}.${process.pid}.tmp`
    await writeFile(temp, JSON.stringify(settings, null, 2), { mode: 0o600 })
    await rename(temp, this.settingsFile)
  }
}

/** "sk-ant-…f3Qa": enough to recognise a key, never enough to use it. */
function maskKey(key: string): string {
  if (key.length <= 12) return '…' + key.slice(-2)
  return `${key.slice(0, 7)}…${key.slice(-4)}`
}
