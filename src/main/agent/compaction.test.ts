import { writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readSession } from '../session/log'
import { AgentSession } from './agent-session'
import { createModelClient } from './model'
import { COMPACTED_PLACEHOLDER } from './model-request'
import type { Scenario } from './scenario'
import {
  byType,
  cleanUpScriptedRuns,
  recordedRequests,
  scriptedRun,
  type ScriptedRun,
  type ScriptedRunOptions,
} from './test-fixtures/scripted-run'

afterEach(cleanUpScriptedRuns)

type Request = {
  system?: { text: string }[]
  tools?: unknown[]
  context_management?: { edits: { type: string; trigger?: { value: number } }[] }
  messages: { role: string; content: string | Record<string, unknown>[] }[]
}

/** A run whose client has this window and compacts server-side or not, against a strict scripted model. */
async function setup(
  scenario: Scenario,
  model: { window: number; server: boolean },
  opts: ScriptedRunOptions = {},
): Promise<ScriptedRun> {
  const s = await scriptedRun(scenario, { strict: true, ...opts })
  s.options.model = createModelClient({
    baseUrl: s.server.baseUrl,
    apiKey: 'test',
    maxRetries: 0,
    contextWindow: model.window,
    serverCompaction: model.server,
  })
  return s
}

const read = (path: string): { tool: string; input: { path: string } } => ({
  tool: 'read_file',
  input: { path },
})

describe('server-side compaction', () => {
  it('sends the documented edits, keeps the compaction block exactly as it came and sends only what follows it', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [read('a.txt')], usage: { input_tokens: 90_000 } },
          {
            blocks: [
              { thinking: 'The context was compacted; go on.', signature: 'sig-2' },
              { compaction: 'Summary: the user wants a.txt and b.txt read; a.txt says alpha.' },
              read('b.txt'),
            ],
            usage: { input_tokens: 20_000 },
          },
          { blocks: [{ text: 'Both read.' }] },
        ],
      },
      { window: 200_000, server: true },
      { files: { 'a.txt': 'alpha\n', 'b.txt': 'beta\n' } },
    )
    const session = await AgentSession.create(s.options)
    expect(await session.run('Read a.txt and b.txt')).toEqual({ status: 'finished' })
    await session.close()

    const requests = await recordedRequests<Request>(s.recordFile)
    expect(requests).toHaveLength(3)
    const edits = requests[0]!.context_management!.edits
    expect(edits.map((e) => e.type)).toEqual(['clear_tool_uses_20250919', 'compact_20260112'])
    expect(edits[1]!.trigger!.value).toBe(160_000)
    // The third request opens with the stand-in, then the assistant message holding the block, unchanged.
    const third = requests[2]!.messages
    expect(third[0]).toMatchObject({ role: 'user', content: [{ type: 'text', text: COMPACTED_PLACEHOLDER }] })
    expect(third[1]!.role).toBe('assistant')
    const blocks = third[1]!.content as Record<string, unknown>[]
    expect(blocks.map((b) => b.type)).toEqual(['thinking', 'compaction', 'tool_use'])
    expect(blocks[1]).toEqual({
      type: 'compaction',
      content: 'Summary: the user wants a.txt and b.txt read; a.txt says alpha.',
      encrypted_content: expect.stringMatching(/^enc_/),
    })
    // The model is told which files it had read, after the turn's results.
    expect(JSON.stringify(third.at(-1))).toContain('a.txt')
    const [marker] = byType(s.events, 'context.compacted')
    expect(marker).toMatchObject({ mode: 'server', strategy: 'summary', turn: 2 })
    expect(marker!.tokensBefore).toBeGreaterThanOrEqual(90_000)
    expect(marker!.summary).toMatch(/a.txt says alpha/)
    // A continued session is sent the same conversation (rebuilt from the log).
    const { session: again } = await AgentSession.open(session.sessionId, s.options)
    expect(JSON.stringify(again.conversation)).toContain('"type":"compaction"')
    await again.close()
  })

  it('falls back to compacting itself when the endpoint refuses the beta, without losing the turn', async () => {
    const s = await setup(
      { rejectBetas: ['compact-2026-01-12'], turns: [{ blocks: [{ text: 'Hello.' }] }] },
      { window: 200_000, server: true },
    )
    const session = await AgentSession.create(s.options)
    expect(await session.run('Say hello')).toEqual({ status: 'finished' })
    await session.close()
    const requests = await recordedRequests<Request>(s.recordFile)
    expect(requests).toHaveLength(2)
    expect(requests[0]!.context_management).toBeDefined()
    expect(requests[1]!.context_management).toBeUndefined()
    expect(s.options.model.context.serverCompaction).toBe(false)
    expect(byType(s.events, 'run.finished').at(-1)!.reason).toBe('end_turn')
  })
})

describe('client-side compaction', () => {
  it('crosses the window twice (the threshold, then a full window) and finishes; the cut call never runs', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [read('a.txt')], usage: { input_tokens: 30_000 } },
          { blocks: [read('b.txt')], usage: { input_tokens: 70_000 } },
          { blocks: [{ text: 'Summary one: a.txt and b.txt were read; next write c.txt.' }] },
          { blocks: [read('a.txt')], usage: { input_tokens: 40_000 } },
          {
            blocks: [{ tool: 'write_file', input: { path: 'cut.txt', content: 'never written at all' } }],
            stop: 'model_context_window_exceeded',
          },
          { blocks: [{ text: 'Summary two: cut.txt was not written.' }] },
          { blocks: [{ tool: 'write_file', input: { path: 'c.txt', content: 'done\n' } }] },
          { blocks: [{ text: 'c.txt is written.' }] },
        ],
      },
      { window: 100_000, server: false },
      { files: { 'a.txt': 'alpha\n'.repeat(2000), 'b.txt': 'beta\n'.repeat(2000) } },
    )
    const session = await AgentSession.create(s.options)
    expect(await session.run('Read the files, then write c.txt')).toEqual({ status: 'finished' })
    await session.close()
    expect(await readFile(join(s.workspace, 'c.txt'), 'utf8')).toBe('done\n')
    await expect(readFile(join(s.workspace, 'cut.txt'))).rejects.toThrow()

    const compactions = byType(s.events, 'context.compacted')
    expect(compactions.map((c) => `${c.mode} ${c.strategy} ${c.reason}`)).toEqual([
      'client summary threshold',
      'client summary window_full',
    ])
    expect(compactions[0]!.tokensBefore).toBeGreaterThanOrEqual(70_000)
    expect(compactions[0]!.tokensAfter).toBeLessThan(compactions[0]!.tokensBefore)
    expect(compactions[0]!.readFiles).toEqual(['a.txt', 'b.txt'])

    const requests = await recordedRequests<Request>(s.recordFile)
    expect(requests).toHaveLength(8)
    // The summary requests carry no tools and the conversation as text.
    for (const i of [2, 5]) {
      expect(requests[i]!.tools).toBeUndefined()
      expect(requests[i]!.messages).toHaveLength(1)
    }
    expect(JSON.stringify(requests[2]!.messages)).toContain('read_file')
    // After the first compaction the model gets the summary, the task and the files to read again.
    const opening = JSON.stringify(requests[3]!.messages[0])
    expect(opening).toContain('Summary one')
    expect(opening).toContain('Read the files, then write c.txt')
    expect(opening).toContain('a.txt, b.txt')
    // The cut call got its result (never run) before the compaction; after it, the summary replaces it.
    const cut = byType(s.events, 'tool.finished').find((e) => /context window/.test(e.output))
    expect(cut?.isError).toBe(true)
    expect(JSON.stringify(requests[6]!.messages[0])).toContain('Summary two')

    // A continued session rebuilds the same conversation from the log.
    const { events } = await readSession(join(s.sessionsDir, `${session.sessionId}.jsonl`))
    expect(events.some((e) => e.type === 'context.compacted')).toBe(true)
  })

  it('clears old tool results first when that is enough, keeping every call paired with its result', async () => {
    const big = 'x'.repeat(200_000)
    const s = await setup(
      {
        turns: [
          { blocks: [read('big.txt')], usage: { input_tokens: 10_000 } },
          { blocks: [read('a.txt')], usage: { input_tokens: 10_000 } },
          { blocks: [read('a.txt')], usage: { input_tokens: 10_000 } },
          { blocks: [read('b.txt')], usage: { input_tokens: 65_000 } },
          { blocks: [{ text: 'Done.' }] },
        ],
      },
      { window: 100_000, server: false },
      { files: { 'big.txt': big, 'a.txt': 'alpha\n', 'b.txt': 'beta\n' } },
    )
    const session = await AgentSession.create(s.options)
    expect(await session.run('Read them')).toEqual({ status: 'finished' })
    await session.close()
    const [cleared] = byType(s.events, 'context.compacted')
    expect(cleared).toMatchObject({ strategy: 'cleared_tool_results', clearedBeforeTurn: 2 })
    const requests = await recordedRequests<Request>(s.recordFile)
    const last = JSON.stringify(requests.at(-1)!.messages)
    expect(last).not.toContain('xxxxxxxxxx')
    expect(last).toContain('This result was cleared')
    expect(last).toContain('beta')
  })

  it('a request over the window ("prompt is too long") is never run: it compacts and plays a new turn', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [read('a.txt')] },
          {
            http: { status: 400 },
            errorMessage: 'prompt is too long: 212345 tokens > 200000 maximum',
            blocks: [{ text: 'Summary: a.txt was read.' }],
          },
          { blocks: [{ text: 'Finished.' }] },
        ],
      },
      { window: 200_000, server: false },
      { files: { 'a.txt': 'alpha\n' } },
    )
    const session = await AgentSession.create(s.options)
    expect(await session.run('Read a.txt')).toEqual({ status: 'finished' })
    await session.close()
    expect(byType(s.events, 'context.compacted')).toHaveLength(1)
    expect(byType(s.events, 'context.compacted')[0]!.reason).toBe('window_full')
    expect(byType(s.events, 'run.finished').at(-1)!.reason).toBe('end_turn')
  })

  it('a summary that comes back empty is asked for once more, then the run ends plainly; Continue compacts harder', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [read('a.txt')], usage: { input_tokens: 70_000 } },
          { blocks: [{ text: '   ' }] },
          { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }] },
          { blocks: [{ text: 'Summary: a.txt says alpha.' }] },
          { blocks: [{ text: 'All done.' }] },
        ],
      },
      { window: 100_000, server: false },
      { files: { 'a.txt': 'alpha\n' } },
    )
    const session = await AgentSession.create(s.options)
    const outcome = await session.run('Read a.txt')
    expect(outcome).toMatchObject({ status: 'failed', kind: 'context' })
    expect((outcome as { error: string }).error).toMatch(/could not compact.*unusable twice/)
    expect(byType(s.events, 'context.compacted')).toHaveLength(0)
    await session.close()

    const { session: again } = await AgentSession.open(session.sessionId, s.options)
    expect(await again.continue()).toEqual({ status: 'finished' })
    await again.close()
    const [compacted] = byType(s.events, 'context.compacted')
    expect(compacted).toMatchObject({ reason: 'continue', summary: 'Summary: a.txt says alpha.' })
    expect(compacted!.keptFromTurn).toBeUndefined()
  })

  it('a stop while the summary is written leaves the log as it was, and continuing compacts then', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [read('a.txt')], usage: { input_tokens: 70_000 } },
          { blocks: [{ text: 'Summary that never arrives.' }], firstTokenMs: 5_000 },
          { blocks: [{ text: 'Summary: a.txt says alpha.' }] },
          { blocks: [{ text: 'All done.' }] },
        ],
      },
      { window: 100_000, server: false },
      { files: { 'a.txt': 'alpha\n' } },
    )
    const session = await AgentSession.create(s.options)
    const running = session.run('Read a.txt')
    // The summary request is the second one: stop once it is in.
    for (let i = 0; i < 200 && s.server.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
    session.stop()
    expect(await running).toEqual({ status: 'stopped' })
    await session.close()
    expect(byType(s.events, 'context.compacted')).toHaveLength(0)

    const { session: again, warnings } = await AgentSession.open(session.sessionId, s.options)
    expect(warnings).toEqual([])
    expect(await again.continue()).toEqual({ status: 'finished' })
    await again.close()
    expect(byType(s.events, 'context.compacted')).toHaveLength(1)
  })
})

describe('project instructions', () => {
  it('go into the system prompt byte-identical until a compaction re-reads them; a folder adds its own', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [read('a.txt')], usage: { input_tokens: 10_000 } },
          { blocks: [read('pkg/b.txt')], usage: { input_tokens: 70_000 } },
          { blocks: [{ text: 'Summary: read a.txt and pkg/b.txt.' }] },
          { blocks: [{ text: 'Done.' }] },
        ],
      },
      { window: 100_000, server: false },
      {
        files: {
          'AGENTS.md': 'Use tabs.\n',
          'CLAUDE.md': 'Run npm test before you finish.\n',
          'a.txt': 'alpha\n',
          'pkg/b.txt': 'beta\n',
          'pkg/AGENTS.md': 'In pkg, never touch the generated files.\n',
        },
      },
    )
    s.options.onEvent = (e) => {
      s.events.push(e)
      // The file changes on disk while the run goes on: the prompt must not change until a compaction.
      if (e.type === 'tool.finished') writeFileSync(join(s.workspace, 'AGENTS.md'), 'Use spaces now.\n')
    }
    const session = await AgentSession.create(s.options)
    expect(await session.run('Read them')).toEqual({ status: 'finished' })
    await session.close()
    const requests = await recordedRequests<Request>(s.recordFile)
    const system = requests.map((r) => r.system?.[0]?.text ?? '')
    expect(system[0]).toContain('<project-instructions>')
    expect(system[0]).toContain('<file path="AGENTS.md">\nUse tabs.')
    expect(system[0]).toContain('Run npm test before you finish.')
    expect(system[1]).toBe(system[0])
    expect(system[3]).toContain('Use spaces now.')
    // pkg/AGENTS.md is told after the results of the turn that first read in pkg/.
    expect(JSON.stringify(requests[1]!.messages)).not.toContain('never touch the generated')
    expect(JSON.stringify(requests[2]!.messages)).toContain('never touch the generated')
    const loaded = byType(s.events, 'instructions.loaded')
    expect(loaded.map((e) => `${e.scope} ${e.files.map((f) => f.path).join(',')}`)).toEqual([
      'root AGENTS.md,CLAUDE.md',
      'nested pkg/AGENTS.md',
      'root AGENTS.md,CLAUDE.md',
    ])
  })
  it("hide the workspace's secret values, as every tool result does", async () => {
    const token = 'sk-live-Q7x9Lm2Pz4Rt8Wv1'
    const s = await setup(
      { turns: [{ blocks: [{ text: 'Done.' }] }] },
      { window: 100_000, server: false },
      {
        files: {
          '.env': `API_TOKEN=${token}\n`,
          'AGENTS.md': `Call the staging API with ${token} when you test.\n`,
        },
      },
    )
    const session = await AgentSession.create(s.options)
    expect(await session.run('Test it')).toEqual({ status: 'finished' })
    await session.close()
    const requests = await recordedRequests<Request>(s.recordFile)
    const system = requests[0]?.system?.[0]?.text ?? ''
    expect(system).toContain('Call the staging API with [secret from .env hidden] when you test.')
    expect(JSON.stringify(requests)).not.toContain(token)
    expect(JSON.stringify(s.events)).not.toContain(token)
  })
})
