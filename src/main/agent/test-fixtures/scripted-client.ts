import Anthropic from '@anthropic-ai/sdk'
import { afterEach } from 'vitest'
import type { Scenario } from '../scenario'
import { startScriptedModel, type ScriptedModel, type ScriptedModelOptions } from '../scripted-model'

/** The scripted model's own tests: the real SDK as its client. */

/** The smallest request: one user message. */
export const ask = {
  model: 'claude-test',
  max_tokens: 1024,
  messages: [{ role: 'user' as const, content: 'go' }],
}

/**
 * `serve(scenario)` starts a scripted model (a record file, strict mode: `more`) with an SDK client for it
 * that never retries; each model is closed after each test.
 */
export function useScriptedClients(): (
  scenario: Scenario,
  more?: Omit<ScriptedModelOptions, 'scenario'>,
) => Promise<{ model: ScriptedModel; client: Anthropic }> {
  const servers: ScriptedModel[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()))
  })
  return async (scenario, more = {}) => {
    const model = await startScriptedModel({ scenario, ...more })
    servers.push(model)
    return { model, client: new Anthropic({ apiKey: 'x', baseURL: model.baseUrl, maxRetries: 0 }) }
  }
}
