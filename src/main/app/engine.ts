import { join } from 'node:path'
import { AlwaysAllowStore } from '../agent/approvals'
import { buildDemoScenario } from '../agent/demo-model'
import { AgentSession, type AgentOptions, type ApprovalMode } from '../agent/loop'
import { createModelClient, DEFAULT_MODEL, type ModelClient } from '../agent/model'
import type { SchedulerMode } from '../agent/scheduler'
import { startScriptedModel } from '../agent/scripted-model'
import { loadBashGrammar } from '../tools/bash/validate'
import { createToolRegistry } from '../tools/index'

/**
 * Puts the engine together for the app, `lanes web` and `lanes run`: the model (Claude, a base URL, or the
 * built-in demo), the tools, the approval rules, and sessions that run with them.
 */

export interface ModelChoice {
  apiKey?: string
  baseUrl?: string
  model?: string
}

export interface ConnectedModel {
  client: ModelClient
  modelName: string
  baseUrl?: string
  /** The built-in offline demo is answering. */
  demo: boolean
  close(): Promise<void>
}

/**
 * With no API key and no base URL, the demo model answers: the scripted server serves a run built from the
 * workspace's own files, starting after the turns a continued session already had.
 */
export async function connectModel(
  choice: ModelChoice,
  workspace: string,
  opts: { turnsDone?: number } = {},
): Promise<ConnectedModel> {
  const apiKey = choice.apiKey ?? process.env.ANTHROPIC_API_KEY
  const baseUrl = choice.baseUrl ?? process.env.ANTHROPIC_BASE_URL
  if (apiKey || baseUrl) {
    const modelName = choice.model ?? DEFAULT_MODEL
    return {
      client: createModelClient({ apiKey, baseUrl, model: modelName }),
      modelName,
      ...(baseUrl ? { baseUrl } : {}),
      demo: false,
      close: async () => undefined,
    }
  }
  const scenario = await buildDemoScenario(workspace)
  const server = await startScriptedModel({
    scenario: { ...scenario, turns: scenario.turns.slice(opts.turnsDone ?? 0) },
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
}

export const DEFAULT_ENGINE_SETTINGS: Omit<EngineSettings, 'sessionsDir'> = {
  scheduler: 'streaming',
  siblingSkip: true,
  maxTurns: 50,
  autoApproveEdits: false,
}

/** Loads what every session needs once (the bash grammar) and returns the shared pieces. */
export async function prepareEngine(): Promise<{ registry: ReturnType<typeof createToolRegistry> }> {
  await loadBashGrammar()
  return { registry: createToolRegistry() }
}

export function agentOptions(
  base: {
    workspace: string
    registry: AgentOptions['registry']
    model: ConnectedModel
    approvals: ApprovalMode
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
    scheduler: settings.scheduler,
    siblingSkip: settings.siblingSkip,
    maxTurns: settings.maxTurns,
    autoApproveEdits: settings.autoApproveEdits,
    ...(settings.bashTimeoutSec !== undefined ? { bashTimeoutSec: settings.bashTimeoutSec } : {}),
    ...(settings.concurrency !== undefined ? { concurrency: settings.concurrency } : {}),
    approvals: base.approvals,
    // Kept beside the sessions, so a --sessions-dir keeps its own rules too.
    alwaysAllow: new AlwaysAllowStore(join(settings.sessionsDir, 'always-allow.json')),
    ...(onEvent ? { onEvent } : {}),
  }
}

export { AgentSession }
