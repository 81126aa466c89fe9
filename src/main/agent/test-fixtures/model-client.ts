import { afterEach, vi } from 'vitest'
import { ModelError, type StreamEvent, type ToolDefinition, type TurnRequest } from '../model'
import type { Scenario } from '../scenario'
import { startScriptedModel, type ScriptedModel, type ScriptedModelOptions } from '../scripted-model'
import { rejectionOf } from '../../test-fixtures/rejection'

/** The model client's tests (model.test.ts, model-errors.test.ts) against the scripted model over HTTP. */

export const tools: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Read a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'bash',
    description: 'Run a command.',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
]

/** `serve(scenario)` starts a scripted model (a record file, strict mode: `more`); each is closed, and stubbed env vars restored, after each test. */
export function useScriptedModels(): (
  scenario: Scenario,
  more?: Omit<ScriptedModelOptions, 'scenario'>,
) => Promise<ScriptedModel> {
  const servers: ScriptedModel[] = []
  afterEach(async () => {
    vi.unstubAllEnvs()
    await Promise.all(servers.splice(0).map((s) => s.close()))
  })
  return async (scenario, more = {}) => {
    const model = await startScriptedModel({ scenario, ...more })
    servers.push(model)
    return model
  }
}

export function request(overrides: Partial<TurnRequest> = {}): TurnRequest & { events: StreamEvent[] } {
  const events: StreamEvent[] = []
  return {
    system: 'You are a test.',
    tools,
    messages: [{ role: 'user', content: 'Do the task.' }],
    signal: new AbortController().signal,
    onEvent: (e) => events.push(e),
    events,
    ...overrides,
  }
}

export const failure = (promise: Promise<unknown>): Promise<ModelError> => rejectionOf(promise, ModelError)
