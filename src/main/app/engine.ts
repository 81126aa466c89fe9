import { join } from 'node:path'
import type { ThinkingSetting } from '../../shared/models'
import type { EventOf } from '../../shared/events'
import { AlwaysAllowStore } from '../agent/always-allow-store'
import { demoResponder, type DemoHost } from '../agent/demo-model'
import { AgentSession, type AgentOptions, type ApprovalMode } from '../agent/agent-session'
import { createModelClient, DEFAULT_MODEL, type ModelClient } from '../agent/model'
import type { SchedulerMode } from '../agent/scheduler'
import { startScriptedModel } from '../agent/scripted-model'
import { loadBashGrammar } from '../tools/bash/validate'
import { createToolRegistry } from '../tools/index'
import type { ToolRegistry } from '../tools/registry'
import { readSession, sessionPaths, SessionLogError } from '../session/log'
import { defaultDataDir } from './paths'

/**
 * Puts the engine together for the app, `lanes web` and `lanes run`: the model (Claude, a base URL, or the
 * built-in demo), the tools, the approval rules, and sessions that run with them.
 */

export interface ModelChoice {
  apiKey?: string
  /**
   * Absent: ANTHROPIC_BASE_URL, else the Anthropic API. null: the Anthropic API even where ANTHROPIC_BASE_URL is
   * set (the user chose the default in Settings, which must win over the environment the app was started in).
   */
  baseUrl?: string | null
  model?: string
  thinking?: ThinkingSetting
  /** Where Lanes runs, so the demo can say how to switch to Claude there. */
  host?: DemoHost
}

export interface ConnectedModel {
  client: ModelClient
  modelName: string
  baseUrl?: string
  /** The built-in offline demo is answering. */
  demo: boolean
  /** The API key in use (the redactor hides it in every tool's output). */
  apiKey?: string
  close(): Promise<void>
}

/**
 * With no API key and no base URL, the demo model answers: the scripted server plays a run built from the
 * workspace's own files and the conversation's latest task (demo-model.ts).
 */
export async function connectModel(choice: ModelChoice, workspace: string): Promise<ConnectedModel> {
  const apiKey = choice.apiKey ?? process.env.ANTHROPIC_API_KEY
  const baseUrl =
    choice.baseUrl === null ? undefined : (choice.baseUrl ?? (process.env.ANTHROPIC_BASE_URL || undefined))
  if (apiKey || baseUrl) {
    const modelName = choice.model ?? DEFAULT_MODEL
    return {
      client: createModelClient({
        apiKey,
        baseUrl: baseUrl ?? null,
        model: modelName,
        ...(choice.thinking ? { thinking: choice.thinking } : {}),
      }),
      modelName,
      ...(baseUrl ? { baseUrl } : {}),
      ...(apiKey ? { apiKey } : {}),
      demo: false,
      close: async () => undefined,
    }
  }
  // The demo answers from the conversation it is sent, so a continued session picks up where it was.
  const server = await startScriptedModel({
    scenario: { turns: [] },
    respond: demoResponder(workspace, choice.host ?? 'app'),
  })
  return {
    client: createModelClient({ baseUrl: server.baseUrl, apiKey: 'lanes-demo', model: 'lanes-demo' }),
    modelName: 'lanes-demo',
    demo: true,
    close: () => server.close(),
  }
}

export interface EngineSettings {
  sessionsDir: string
  scheduler: SchedulerMode
  siblingSkip: boolean
  maxTurns: number
  autoApproveEdits: boolean
  bashTimeoutSec?: number
  concurrency?: number
  compactAtTokens?: number
}

export const DEFAULT_ENGINE_SETTINGS: Omit<EngineSettings, 'sessionsDir'> = {
  scheduler: 'streaming',
  siblingSkip: true,
  maxTurns: 50,
  autoApproveEdits: false,
}

/** Loads what every session needs once (the bash grammar) and returns the shared pieces. */
export async function prepareEngine(): Promise<{ registry: ToolRegistry }> {
  await loadBashGrammar()
  return { registry: createToolRegistry() }
}

export function agentOptions(
  base: {
    workspace: string
    registry: AgentOptions['registry']
    model: ConnectedModel
    approvals: ApprovalMode
    landProtected?: boolean
    secrets?: LaunchOptions['secrets']
  },
  settings: EngineSettings,
  onEvent?: AgentOptions['onEvent'],
): AgentOptions {
  return {
    workspace: base.workspace,
    sessionsDir: settings.sessionsDir,
    registry: base.registry,
    model: base.model.client,
    modelName: base.model.modelName,
    ...(base.model.baseUrl ? { baseUrl: base.model.baseUrl } : {}),
    demo: base.model.demo,
    appSecrets: [
      ...(base.model.apiKey ? [{ value: base.model.apiKey, source: 'the API key' }] : []),
      ...(base.secrets ?? []),
    ],
    ownData: [defaultDataDir()],
    scheduler: settings.scheduler,
    siblingSkip: settings.siblingSkip,
    maxTurns: settings.maxTurns,
    autoApproveEdits: settings.autoApproveEdits,
    ...(settings.bashTimeoutSec !== undefined ? { bashTimeoutSec: settings.bashTimeoutSec } : {}),
    ...(settings.concurrency !== undefined ? { concurrency: settings.concurrency } : {}),
    ...(settings.compactAtTokens !== undefined ? { compactAtTokens: settings.compactAtTokens } : {}),
    approvals: base.approvals,
    ...(base.landProtected ? { landProtected: true } : {}),
    // Kept beside the sessions, so a --sessions-dir keeps its own rules too.
    alwaysAllow: new AlwaysAllowStore(join(settings.sessionsDir, 'always-allow.json')),
    ...(onEvent ? { onEvent } : {}),
  }
}

/** How a session started and how far it got, read from its log once: what a host needs to continue it. */
export interface SessionStart {
  sessionId: string
  created: EventOf<'session.created'>
  /** Model answers already in the log. */
  turnsDone: number
}

/** Throws a SessionLogError (`not-found`, `invalid-id`, `io`) when there is no readable session `sessionId`. */
export async function readSessionStart(sessionsDir: string, sessionId: string): Promise<SessionStart> {
  const { log } = sessionPaths(sessionsDir, sessionId)
  const { events } = await readSession(log)
  const created = events.find((e) => e.type === 'session.created')
  if (created?.type !== 'session.created') {
    throw new SessionLogError('not-found', `The session log ${log} does not say how the session started.`)
  }
  return { sessionId, created, turnsDone: events.filter((e) => e.type === 'assistant.message').length }
}

/** A session's title is the first line of its first task, cut to fit a list row. */
const TITLE_MAX = 120

export interface LaunchOptions {
  workspace: string
  registry: ToolRegistry
  model: ModelChoice
  settings: EngineSettings
  approvals: ApprovalMode
  /** `lanes run --land-protected`: a command's held protected changes land. */
  landProtected?: boolean
  /** Secrets of the app's besides the API key (the user's MCP servers' keys): hidden in every tool result. */
  secrets?: AgentOptions['appSecrets']
  onEvent?: AgentOptions['onEvent']
  /** A new session titled after its task, or one continued from its log. */
  from: { task: string } | { resume: SessionStart }
}

export interface LaunchedSession {
  session: AgentSession
  /** Close it once the session is closed. */
  model: ConnectedModel
  /** Lines of a continued session's log that could not be read. */
  warnings: string[]
}

/**
 * Connects the model and creates or opens the session: the one way the app and `lanes run` start a session.
 * On failure nothing is left open.
 */
export async function launchSession(opts: LaunchOptions): Promise<LaunchedSession> {
  const { from } = opts
  const model = await connectModel(opts.model, opts.workspace)
  const options = agentOptions(
    {
      workspace: opts.workspace,
      registry: opts.registry,
      model,
      approvals: opts.approvals,
      ...(opts.landProtected ? { landProtected: true } : {}),
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
    },
    opts.settings,
    opts.onEvent,
  )
  try {
    if ('resume' in from) return { ...(await AgentSession.open(from.resume.sessionId, options)), model }
    const session = await AgentSession.create(options, from.task.split('\n')[0]?.slice(0, TITLE_MAX))
    return { session, model, warnings: [] }
  } catch (e) {
    await model.close()
    throw e
  }
}

export { AgentSession }
