import { createToolRegistry } from '../../tools/index'
import type { AgentOptions, ApprovalMode } from '../agent-session'
import { createModelClient } from '../model'
import type { SchedulerMode } from '../scheduler'

/**
 * AgentOptions for a session against a scripted model at `baseUrl`, with the real tools: what the tests and
 * their child processes run. `model` is the name the client sends (a strict server checks it).
 */
export function scriptedAgentOptions(opts: {
  workspace: string
  sessionsDir: string
  baseUrl: string
  model?: string
  maxRetries?: number
  scheduler?: SchedulerMode
  siblingSkip?: boolean
  approvals?: ApprovalMode
  onEvent?: AgentOptions['onEvent']
}): AgentOptions {
  return {
    workspace: opts.workspace,
    sessionsDir: opts.sessionsDir,
    registry: createToolRegistry(),
    model: createModelClient({
      baseUrl: opts.baseUrl,
      apiKey: 'test',
      ...(opts.model ? { model: opts.model } : {}),
      maxRetries: opts.maxRetries ?? 0,
      retryBaseDelayMs: 5,
    }),
    modelName: opts.model ?? 'scripted',
    baseUrl: opts.baseUrl,
    demo: false,
    scheduler: opts.scheduler ?? 'streaming',
    siblingSkip: opts.siblingSkip ?? true,
    maxTurns: 10,
    autoApproveEdits: false,
    approvals: opts.approvals ?? 'all',
    ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
  }
}
