import { afterEach, describe, expect, it } from 'vitest'
import { AgentSession } from './agent-session'
import type { Scenario } from './scenario'
import { byType, cleanUpScriptedRuns, recordedRequests, scriptedRun } from './test-fixtures/scripted-run'

afterEach(cleanUpScriptedRuns)

// Each model's documented window (shared/models.ts) is what the compaction threshold is measured against, through
// the real SDK: 170k tokens of context fill most of a 200k window, and little of a 1M one.

const scenario: Scenario = {
  turns: [
    { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }], usage: { input_tokens: 170_000 } },
    { blocks: [{ text: 'Summary: a.txt says alpha.' }] },
    { blocks: [{ text: 'Done.' }] },
  ],
}

describe("the model's context window", () => {
  it('a 200k model (Haiku 4.5) compacts at 170k of context', async () => {
    const run = await scriptedRun(scenario, {
      model: 'claude-haiku-4-5',
      files: { 'a.txt': 'alpha\n' },
      strict: true,
    })
    const session = await AgentSession.create(run.options)
    expect(run.options.model.context.window).toBe(200_000)
    expect(await session.run('Read a.txt')).toEqual({ status: 'finished' })
    await session.close()
    expect(byType(run.events, 'context.compacted')).toMatchObject([{ mode: 'client', reason: 'threshold' }])
  })

  it('a 1M model (Haiku 5.5) does not: 170k is far below its threshold', async () => {
    const run = await scriptedRun(scenario, {
      model: 'claude-haiku-5-5',
      files: { 'a.txt': 'alpha\n' },
      strict: true,
    })
    const session = await AgentSession.create(run.options)
    expect(run.options.model.context.window).toBe(1_000_000)
    expect(await session.run('Read a.txt')).toEqual({ status: 'finished' })
    await session.close()
    expect(byType(run.events, 'context.compacted')).toEqual([])
    // The second turn's answer was the model's next step, not a summary request (which carries no tools).
    const requests = await recordedRequests<{ tools?: unknown[] }>(run.recordFile)
    expect(requests.every((r) => (r.tools ?? []).length > 0)).toBe(true)
  })

  it('a 1M model the API compacts (Opus 4.7) is sent the threshold of its own window', async () => {
    const run = await scriptedRun(
      { turns: [{ blocks: [{ text: 'Hello.' }] }] },
      { model: 'claude-opus-4-7', strict: true },
    )
    const session = await AgentSession.create(run.options)
    expect(await session.run('Say hello')).toEqual({ status: 'finished' })
    await session.close()
    const [request] = await recordedRequests<{
      context_management?: { edits: { type: string; trigger?: { value: number } }[] }
    }>(run.recordFile)
    const compact = request?.context_management?.edits.find((e) => e.type === 'compact_20260112')
    expect(compact?.trigger?.value).toBe(850_000)
  })
})
