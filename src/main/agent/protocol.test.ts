import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readSession } from '../session/log'
import { AgentSession } from './agent-session'
import { createModelClient } from './model'
import type { SchedulerMode } from './scheduler'
import type { Scenario } from './scenario'
import {
  byType,
  cleanUpScriptedRuns,
  recordedRequests,
  runToFinish,
  scriptedRun,
  type ScriptedRun,
} from './test-fixtures/scripted-run'
import { REFUSED_CALL_TEXT } from './stop-reasons'

// Issue 11 end to end: the real SDK against the scripted model in --strict mode (it answers 400 exactly where the
// API would), real tools on a real temp folder, the real session log. A request the strict model refuses fails
// the run, so every "finished" below also says the API would have taken every request.

afterEach(cleanUpScriptedRuns)

const setup = (
  scenario: Scenario,
  opts: { scheduler?: SchedulerMode; model?: string; maxRetries?: number; base?: string } = {},
): Promise<ScriptedRun> =>
  scriptedRun(scenario, {
    ...opts,
    model: opts.model ?? 'claude-sonnet-5-5',
    strict: true,
    files: { 'a.txt': 'alpha\n' },
    prefix: 'lanes-protocol-',
  })

type Recorded = { messages: { role: string; content: Record<string, unknown>[] }[]; thinking?: unknown }

const THINK = { thinking: 'The file a.txt holds the answer; read it first.', signature: 'sig-turn-1' }

const thinkingScenario: Scenario = {
  turns: [
    {
      blocks: [THINK, { tool: 'read_file', input: { path: 'a.txt' } }],
      ping: true,
    },
    {
      blocks: [
        { redactedThinking: 'EmwKAhgBEgy3va3pzix/LafPsn4aDF' },
        { thinking: '', signature: 'sig-turn-2' },
        { text: 'a.txt says alpha.' },
      ],
    },
  ],
}

describe('thinking round trip', () => {
  for (const scheduler of ['streaming', 'batch'] as const) {
    it(`${scheduler}: thinking blocks first and in order, logged, sent back byte-identical, never cached`, async () => {
      const s = await setup(thinkingScenario, { scheduler })
      const session = await runToFinish(s, 'What does a.txt say?')

      const [first, second] = await recordedRequests<Recorded>(s.recordFile)
      // The default model thinks by default; the request asks for the display that returns its notes.
      expect(first!.thinking).toEqual({ type: 'adaptive', display: 'summarized' })
      const assistant = second!.messages[1]!
      expect(assistant.role).toBe('assistant')
      expect(assistant.content[0]).toEqual({ type: 'thinking', ...THINK })
      expect(JSON.stringify(assistant.content[0])).toBe(
        JSON.stringify({ type: 'thinking', thinking: THINK.thinking, signature: THINK.signature }),
      )
      expect(assistant.content[1]).toMatchObject({ type: 'tool_use', name: 'read_file' })

      // Logged as it closed, before the call after it was queued; and in the message, first.
      const thinking = byType(s.events, 'assistant.thinking')
      expect(thinking.map((e) => e.block.type)).toEqual(['thinking', 'redacted_thinking', 'thinking'])
      const queued = byType(s.events, 'tool.queued')[0]!
      expect(thinking[0]!.seq).toBeLessThan(queued.seq)
      const message = byType(s.events, 'assistant.message')[0]!.message.content
      expect(message[0]).toEqual({ type: 'thinking', ...THINK })

      // A restart rebuilds them exactly: a follow-up sends both turns' thinking back unchanged.
      const followUp = await setup(
        { turns: [{ blocks: [{ text: 'Still alpha.' }] }] },
        { scheduler, base: s.base },
      )
      const { session: reopened } = await AgentSession.open(session.sessionId, followUp.options)
      expect(await reopened.run('And now?')).toEqual({ status: 'finished' })
      await reopened.close()
      const [third] = await recordedRequests<Recorded>(followUp.recordFile).then((all) => all.slice(-1))
      const sentBack = third!.messages.filter((m) => m.role === 'assistant').map((m) => m.content)
      expect(sentBack[0]![0]).toEqual({ type: 'thinking', ...THINK })
      expect(sentBack[1]!.slice(0, 2)).toEqual([
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDF' },
        { type: 'thinking', thinking: '', signature: 'sig-turn-2' },
      ])
      for (const message of third!.messages)
        for (const block of message.content)
          if (block.type === 'thinking' || block.type === 'redacted_thinking')
            expect(block).not.toHaveProperty('cache_control')
    })
  }

  it('asks for between_tools when the user chose the lowest setting, and nothing from a model without it', async () => {
    const low = await setup({ turns: [{ blocks: [{ text: 'ok' }] }] })
    low.options.model = createModelClient({
      baseUrl: low.server.baseUrl,
      apiKey: 'test',
      model: 'claude-sonnet-5-5',
      thinking: 'between_tools',
    })
    const a = await AgentSession.create(low.options)
    await a.run('hi')
    await a.close()
    expect((await recordedRequests<Recorded>(low.recordFile))[0]!.thinking).toEqual({ type: 'between_tools' })

    const other = await setup({ turns: [{ blocks: [{ text: 'ok' }] }] }, { model: 'claude-haiku-4-5' })
    const b = await AgentSession.create(other.options)
    await b.run('hi')
    await b.close()
    expect((await recordedRequests<Recorded>(other.recordFile))[0]).not.toHaveProperty('thinking')
  })
})

describe('stop reasons', () => {
  it('refusal: runs none of the turn’s calls, ends as refused with the API’s explanation, never sends the turn back', async () => {
    const s = await setup({
      turns: [
        {
          blocks: [
            { text: 'Sure, writing it.' },
            { tool: 'write_file', input: { path: 'x.txt', content: 'x' } },
          ],
          stop: 'refusal',
          stopDetails: {
            category: 'cyber',
            explanation: 'This request was declined because it could enable cyber harm.',
          },
        },
        { blocks: [{ text: 'Something else, then.' }] },
      ],
    })
    const session = await AgentSession.create(s.options)
    expect(await session.run('Write x.txt')).toEqual({ status: 'finished' })
    await expect(readFile(join(s.workspace, 'x.txt'))).rejects.toThrow()
    const finished = byType(s.events, 'run.finished').at(-1)!
    expect(finished.reason).toBe('refusal')
    expect(finished.stopDetails?.explanation).toMatch(/declined/)
    // Every call still has exactly one outcome, and it says why it did not run.
    const cancelled = byType(s.events, 'tool.cancelled')
    expect(cancelled).toHaveLength(1)
    expect(cancelled[0]!.output.startsWith(REFUSED_CALL_TEXT)).toBe(true)

    // A new task in the same session goes on without the refused turn, also after a restart.
    await session.close()
    const { session: reopened } = await AgentSession.open(session.sessionId, s.options)
    expect(await reopened.run('Something else')).toEqual({ status: 'finished' })
    await reopened.close()
    const last = (await recordedRequests<Recorded>(s.recordFile)).at(-1)!
    expect(last.messages.map((m) => m.role)).toEqual(['user'])
    expect(JSON.stringify(last.messages)).not.toContain('Sure, writing it.')
  })

  for (const scheduler of ['streaming', 'batch'] as const) {
    it(`${scheduler}: model_context_window_exceeded runs the complete call, never the cut one, compacts and goes on`, async () => {
      const s = await setup(
        {
          turns: [
            {
              blocks: [
                { tool: 'write_file', input: { path: 'done.txt', content: 'complete' } },
                {
                  tool: 'write_file',
                  input: { path: 'cut.txt', content: 'a long file that never finishes' },
                },
              ],
              stop: 'model_context_window_exceeded',
            },
            { blocks: [{ text: 'Summary: done.txt is written; cut.txt is not.' }] },
            { blocks: [{ text: 'Both files are handled.' }] },
          ],
        },
        { scheduler },
      )
      await runToFinish(s, 'Write two files')
      expect(await readFile(join(s.workspace, 'done.txt'), 'utf8')).toBe('complete')
      await expect(readFile(join(s.workspace, 'cut.txt'))).rejects.toThrow()
      expect(byType(s.events, 'run.finished').at(-1)!.reason).toBe('end_turn')
      const results = byType(s.events, 'tool.finished')
      expect(results).toHaveLength(2)
      expect(results[1]!.output).toMatch(/context window.*compacted/)
      const [compacted] = byType(s.events, 'context.compacted')
      expect(compacted).toMatchObject({ mode: 'client', strategy: 'summary', reason: 'window_full' })
      expect(compacted!.summary).toContain('cut.txt is not')
      // The request after the compaction opens with the summary instead of the turns it replaced.
      const requests = await recordedRequests(s.recordFile)
      expect(requests).toHaveLength(3)
      expect(JSON.stringify(requests[1]!.messages)).not.toContain('tool_use')
      expect(JSON.stringify(requests[2]!.messages[0])).toContain('cut.txt is not')
    })

    it(`${scheduler}: a call that closed complete before max_tokens runs; the one it cut never does`, async () => {
      const s = await setup(
        {
          turns: [
            {
              blocks: [
                { tool: 'write_file', input: { path: 'w.txt', content: 'whole' } },
                { text: 'Next I will write the second file, which' },
              ],
              stop: 'max_tokens',
            },
            {
              blocks: [{ tool: 'write_file', input: { path: 'cut.txt', content: 'cut in the middle' } }],
              stop: 'max_tokens',
            },
          ],
        },
        { scheduler },
      )
      await runToFinish(s, 'Write the files')
      expect(await readFile(join(s.workspace, 'w.txt'), 'utf8')).toBe('whole')
      await expect(readFile(join(s.workspace, 'cut.txt'))).rejects.toThrow()
      const outputs = byType(s.events, 'tool.finished').map((e) => e.output)
      expect(outputs[1]).toMatch(/max_tokens/)
    })
  }

  it('pause_turn: the paused content goes back as it is and the model continues', async () => {
    const s = await setup({
      turns: [
        { blocks: [THINK, { text: 'Searching the docs…' }], stop: 'pause_turn' },
        { blocks: [{ text: 'Found it.' }] },
      ],
    })
    await runToFinish(s, 'Look it up')
    const [, second] = await recordedRequests<Recorded>(s.recordFile)
    const last = second!.messages.at(-1)!
    expect(last.role).toBe('assistant')
    expect(last.content.map((b) => b.type)).toEqual(['thinking', 'text'])
    expect(byType(s.events, 'run.finished').at(-1)!.reason).toBe('end_turn')
  })

  it('an unknown stop reason ends the run cleanly and names it', async () => {
    const s = await setup({ turns: [{ blocks: [{ text: 'Done, newly.' }], rawStop: 'future_reason' }] })
    await runToFinish(s, 'go')
    const finished = byType(s.events, 'run.finished').at(-1)!
    expect(finished.reason).toBe('unknown_stop')
    expect(finished.stopReason).toBe('future_reason')
  })
})

describe('retries', () => {
  it('every retry is an event with attempt, of how many, delay and reason; an error event before content too', async () => {
    const s = await setup(
      {
        turns: [
          { blocks: [{ text: 'back' }], http: { status: 529, times: 2 } },
          { blocks: [{ text: 'never' }] },
        ],
      },
      { maxRetries: 5 },
    )
    s.options.maxTurns = 1
    await runToFinish(s, 'go')
    const retries = byType(s.events, 'model.retrying')
    expect(retries.map((r) => `${r.attempt} of ${r.of}: ${r.reason}`)).toEqual([
      '2 of 6: overloaded',
      '3 of 6: overloaded',
    ])

    const e = await setup(
      { turns: [{ blocks: [{ text: 'back' }], errorBeforeContent: true }] },
      { maxRetries: 2 },
    )
    const again = await AgentSession.create(e.options)
    expect(await again.run('go')).toEqual({ status: 'finished' })
    await again.close()
    expect(byType(e.events, 'model.retrying').map((r) => r.reason)).toEqual(['overloaded'])
    expect(byType(e.events, 'assistant.message')).toHaveLength(1)
  })

  it('a retry-after longer than we wait ends the run with the exact time to try again', async () => {
    const s = await setup(
      { turns: [{ blocks: [{ text: 'later' }], http: { status: 429, retryAfter: 3600 } }] },
      { maxRetries: 5 },
    )
    const session = await AgentSession.create(s.options)
    const before = Date.now()
    const outcome = await session.run('go')
    await session.close()
    expect(outcome.status).toBe('failed')
    const failed = byType(s.events, 'run.failed').at(-1)!
    expect(failed.retryAt).toBeGreaterThanOrEqual(before + 3_600_000)
    expect(failed.retryAt).toBeLessThan(Date.now() + 3_600_000 + 1000)
    const at = new Date(Math.ceil(failed.retryAt! / 60_000) * 60_000)
    const clock = `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`
    expect(failed.error).toContain(clock)
    expect(byType(s.events, 'model.retrying')).toHaveLength(0)
  })
})

describe('requests the API accepts', () => {
  it('maps gateway tool ids to valid ones and sends back what the model wrote for bad arguments', async () => {
    const s = await setup({
      turns: [
        {
          blocks: [
            { text: '   ' },
            { tool: 'read_file', id: 'call:1.read', input: { path: 'a.txt' } },
            { tool: 'read_file', id: 'call:2.bad', input: { path: 'a.txt', lines: 3 } },
            { tool: 'no_such_tool', id: 'toolu_unknown', input: { anything: true } },
          ],
        },
        { blocks: [{ text: 'Done.' }] },
      ],
    })
    await runToFinish(s, 'go')
    const [, second] = await recordedRequests<Recorded>(s.recordFile)
    const calls = second!.messages[1]!.content
    expect(calls.map((b) => b.type)).toEqual(['tool_use', 'tool_use', 'tool_use'])
    for (const call of calls) expect(call.id).toMatch(/^[a-zA-Z0-9_-]+$/)
    expect(calls[1]!.input).toEqual({ path: 'a.txt', lines: 3 })
    expect(calls[2]!.input).toEqual({ anything: true })
    const results = second!.messages[2]!.content
    expect(results.map((r) => r.tool_use_id)).toEqual(calls.map((c) => c.id))
  })
})

describe('resume after a crash', () => {
  it('the first --continue works from every point the app could die at', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            THINK,
            { text: 'Reading, then writing.' },
            { tool: 'read_file', input: { path: 'a.txt' } },
            { tool: 'write_file', input: { path: 'b.txt', content: 'beta' } },
          ],
        },
        { blocks: [{ text: 'Done.' }] },
      ],
    }
    const s = await setup(scenario)
    const session = await runToFinish(s, 'go')
    const { events } = await readSession(join(s.sessionsDir, `${session.sessionId}.jsonl`))
    const runStarted = events.findIndex((e) => e.type === 'run.started')

    // The log is written event by event, so a crash leaves a prefix of it: try every prefix.
    for (let k = runStarted + 1; k < events.length - 1; k++) {
      const id = `crash-${k}`
      await writeFile(
        join(s.sessionsDir, `${id}.jsonl`),
        events
          .slice(0, k)
          .map((e) => JSON.stringify(e) + '\n')
          .join(''),
      )
      await rm(join(s.workspace, 'b.txt'), { force: true })
      const resumed = await setup({ turns: [] }, { base: s.base })
      const { session: again } = await AgentSession.open(id, resumed.options)
      const outcome = await again.continue()
      await again.close()
      const at = `${events[k - 1]!.type} (#${k - 1})`
      expect(outcome, `continue after ${at}`).toEqual({ status: 'finished' })
      // Strict: a 400 would have failed the run; the first request of the continue is accepted.
      const failed = byType(resumed.events, 'run.failed')
      expect(failed, `continue after ${at}`).toEqual([])
    }
  })
})

describe('the example scenarios of e2e/scenarios', () => {
  const expected: Record<string, { status: string; reason?: string }> = {
    'thinking.json': { status: 'finished', reason: 'end_turn' },
    'refusal.json': { status: 'finished', reason: 'refusal' },
    'context-window.json': { status: 'finished', reason: 'end_turn' },
    'pause-turn.json': { status: 'finished', reason: 'end_turn' },
    'busy.json': { status: 'finished', reason: 'end_turn' },
    'retry-later.json': { status: 'failed' },
    'unknown-stop.json': { status: 'finished', reason: 'unknown_stop' },
  }
  for (const [file, outcome] of Object.entries(expected)) {
    it(`${file} plays as it says against the strict model`, async () => {
      const url = new URL(`../../../e2e/scenarios/${file}`, import.meta.url)
      const scenario = JSON.parse(await readFile(url, 'utf8')) as Scenario
      const s = await setup(scenario, { maxRetries: 5 })
      await writeFile(join(s.workspace, 'README.md'), '# A project\n')
      const session = await AgentSession.create(s.options)
      const result = await session.run('go')
      await session.close()
      expect(result, JSON.stringify(result)).toMatchObject({ status: outcome.status })
      if (outcome.reason) expect(byType(s.events, 'run.finished').at(-1)?.reason).toBe(outcome.reason)
    })
  }
})
