import { readFile, utimes, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { SessionEvent } from '../../shared/events'
import { readSession, sessionPaths } from '../session/log'
import { createToolRegistry } from '../tools/index'
import { ToolRegistry } from '../tools/registry'
import { defineTool, ok } from '../tools/tool'
import { ERROR_HINT } from '../tools/result-format'
import { AgentSession, BROKE_OFF_NOTE, type ApprovalMode } from './agent-session'
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

// The whole pipeline for real: the real SDK streaming from the scripted model over HTTP, real tools on a
// real temp folder, the real session log on disk.

afterEach(cleanUpScriptedRuns)

const setup = (
  scenario: Scenario,
  files: Record<string, string>,
  opts: { scheduler?: SchedulerMode; approvals?: ApprovalMode; siblingSkip?: boolean } = {},
): Promise<ScriptedRun> => scriptedRun(scenario, { ...opts, files, prefix: 'lanes-loop-' })

function span(
  events: SessionEvent[],
  callId: string,
): { start: number; end: number; startSeq: number; endSeq: number } {
  const started = events.find((e) => e.type === 'tool.started' && e.callId === callId)!
  const ended = events.find(
    (e) =>
      (e.type === 'tool.finished' || e.type === 'tool.skipped' || e.type === 'tool.cancelled') &&
      e.callId === callId,
  )!
  return { start: started.at, end: ended.at, startSeq: started.seq, endSeq: ended.seq }
}

function callIdOf(events: SessionEvent[], name: string, nth = 0): string {
  return byType(events, 'tool.queued').filter((e) => e.name === name)[nth]!.callId
}

const referenceTurn: Scenario = {
  turns: [
    {
      blocks: [
        { text: 'Reading the files.' },
        { tool: 'read_file', input: { path: 'a.txt' } },
        { tool: 'read_file', input: { path: 'b.txt' } },
        { tool: 'bash', input: { command: 'ls no-such-folder' } },
        { tool: 'read_file', input: { path: 'c.txt' } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}
const abc = { 'a.txt': 'a\n'.repeat(20_000), 'b.txt': 'b\n'.repeat(20_000), 'c.txt': 'c\n'.repeat(20_000) }

/** The reference turn on a, b and c under `scheduler`, run to its end: each call's span in the log. */
async function runReferenceTurn(scheduler: SchedulerMode) {
  const s = await setup(referenceTurn, abc, { scheduler })
  await runToFinish(s, 'look around')
  const [a, b, c] = [0, 1, 2].map((i) => span(s.events, callIdOf(s.events, 'read_file', i)))
  return { s, a, b, c, bash: span(s.events, callIdOf(s.events, 'bash')) }
}

describe('the agent loop', () => {
  it('batch mode: the three reads overlap and the failing command runs after them', async () => {
    const { s, a, b, c, bash } = await runReferenceTurn('batch')
    // Every read started before any read finished: they ran together.
    expect(Math.max(a!.startSeq, b!.startSeq, c!.startSeq)).toBeLessThan(
      Math.min(a!.endSeq, b!.endSeq, c!.endSeq),
    )
    expect(bash.startSeq).toBeGreaterThan(Math.max(a!.endSeq, b!.endSeq, c!.endSeq))
    expect(bash.start).toBeGreaterThanOrEqual(Math.max(a!.end, b!.end, c!.end))
    const finishedBash = byType(s.events, 'tool.finished').find(
      (e) => e.callId === callIdOf(s.events, 'bash'),
    )!
    expect(finishedBash.isError).toBe(true)
    expect(finishedBash.output).toMatch(/\[Execution time: \d+ ms\]/)
    expect(finishedBash.output.endsWith(ERROR_HINT)).toBe(true)
  })

  it('streaming mode: a and b overlap, the command starts after both, c starts after the command', async () => {
    const { s, a, b, c, bash } = await runReferenceTurn('streaming')
    expect(bash.startSeq).toBeGreaterThan(Math.max(a!.endSeq, b!.endSeq))
    expect(bash.start).toBeGreaterThanOrEqual(Math.max(a!.end, b!.end))
    expect(c!.startSeq).toBeGreaterThan(bash.endSeq)
    expect(c!.start).toBeGreaterThanOrEqual(bash.end)
    const lanes = byType(s.events, 'tool.queued').map((e) => [e.name, e.lane])
    expect(lanes).toEqual([
      ['read_file', { kind: 'parallel', group: 0 }],
      ['read_file', { kind: 'parallel', group: 0 }],
      ['bash', { kind: 'serial' }],
      ['read_file', { kind: 'parallel', group: 1 }],
    ])
  })

  const skipScenario: Scenario = {
    turns: [
      {
        blocks: [
          { tool: 'read_file', input: { path: 'x.ts' } },
          { tool: 'edit_file', input: { path: 'x.ts', old_string: 'one', new_string: 'uno' } },
          {
            tool: 'bash',
            input: { command: 'ls missing-dir', description: 'list a folder that is not there' },
          },
          { tool: 'write_file', input: { path: 'y.ts', content: 'new\n' } },
          { tool: 'edit_file', input: { path: 'x.ts', old_string: 'two', new_string: 'dos' } },
          { tool: 'glob', input: { pattern: '*.ts' } },
        ],
      },
      { blocks: [{ text: 'I see.' }] },
    ],
  }

  it('skips the unsafe siblings after a failed command, keeps safe results, and tells the model', async () => {
    const s = await setup(skipScenario, { 'x.ts': 'one two\n' }, { scheduler: 'batch' })
    const session = await AgentSession.create(s.options)
    await session.run('edit')
    await session.close()
    const bashId = callIdOf(s.events, 'bash')
    const skipped = byType(s.events, 'tool.skipped')
    expect(skipped.map((e) => e.callId)).toEqual([
      callIdOf(s.events, 'write_file'),
      callIdOf(s.events, 'edit_file', 1),
    ])
    for (const e of skipped) {
      expect(e.causeCallId).toBe(bashId)
      expect(e.output).toContain(
        'Skipped: not run because bash(ls missing-dir) failed earlier in this turn; issue it again if it is still needed.',
      )
    }
    expect(await readFile(join(s.workspace, 'x.ts'), 'utf8')).toBe('uno two\n')
    await expect(readFile(join(s.workspace, 'y.ts'))).rejects.toThrow()
    expect(
      byType(s.events, 'tool.finished').find((e) => e.callId === callIdOf(s.events, 'glob'))?.isError,
    ).toBe(false)

    // What the model was sent: one result per call, in call order, the skip texts and the hint.
    const [, second] = await recordedRequests(s.recordFile)
    const results = second!.messages.at(-1)!.content as {
      tool_use_id: string
      content: string
      is_error?: boolean
    }[]
    expect(results.map((r) => r.tool_use_id)).toEqual(byType(s.events, 'tool.queued').map((e) => e.callId))
    const bashResult = results.find((r) => r.tool_use_id === bashId)!
    expect(bashResult.is_error).toBe(true)
    expect(bashResult.content).toContain(ERROR_HINT)
    expect(
      results.filter((r) => r.content.includes('Skipped: not run because bash(ls missing-dir)')),
    ).toHaveLength(2)
  })

  it('runs every call when sibling skip is off', async () => {
    const s = await setup(skipScenario, { 'x.ts': 'one two\n' }, { scheduler: 'batch', siblingSkip: false })
    const session = await AgentSession.create(s.options)
    await session.run('edit')
    await session.close()
    expect(byType(s.events, 'tool.skipped')).toEqual([])
    expect(await readFile(join(s.workspace, 'x.ts'), 'utf8')).toBe('uno dos\n')
    expect(await readFile(join(s.workspace, 'y.ts'), 'utf8')).toBe('new\n')
  })

  it('never executes a call cut by max_tokens; repairs safe malformed arguments, refuses unsafe repairs', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'read_file', rawInput: '{"path": "a.txt",}' },
            { tool: 'write_file', rawInput: "{'path': 'p.py', 'content': 'print(\"it's\")'}" },
            { tool: 'write_file', input: { path: 'cut.txt', content: 'x'.repeat(400) } },
          ],
          stop: 'max_tokens',
        },
        { blocks: [{ text: 'ok' }] },
      ],
    }
    for (const scheduler of ['streaming', 'batch'] as const) {
      const s = await setup(scenario, { 'a.txt': 'hello\n' }, { scheduler })
      const session = await AgentSession.create(s.options)
      await session.run('go')
      await session.close()
      const finished = byType(s.events, 'tool.finished')
      const [readId, pyId, cutId] = byType(s.events, 'tool.queued').map((e) => e.callId)
      expect(finished.find((e) => e.callId === readId)).toMatchObject({ isError: false })
      expect(finished.find((e) => e.callId === pyId)).toMatchObject({ isError: true })
      // The cut write never runs: it is skipped after the refused write before it, or refused as cut off.
      const cut = [...finished, ...byType(s.events, 'tool.skipped')].find((e) => e.callId === cutId)
      expect(cut?.output).toMatch(/max_tokens|Skipped/)
      expect(byType(s.events, 'tool.started').map((e) => e.callId)).toEqual([readId])
      await expect(readFile(join(s.workspace, 'cut.txt'))).rejects.toThrow()
      await expect(readFile(join(s.workspace, 'p.py'))).rejects.toThrow()
    }
  })

  it('starts a side effect only once the log shows its approval and its start (write-ahead)', async () => {
    // A probe with a side effect, run through the real pipeline: when it runs, it reads the log from disk.
    const seen: string[][] = []
    const probe = defineTool({
      name: 'probe',
      description: 'Records which of its events the session log holds when it runs.',
      input: z.object({}),
      concurrencySafe: false,
      execute: (_input, ctx) => {
        const log = readFileSync(`${ctx.outputDir}.jsonl`, 'utf8')
        const mine = log
          .split('\n')
          .filter((line) => line.includes(JSON.stringify(ctx.callId)))
          .map((line) => (JSON.parse(line) as SessionEvent).type)
        seen.push(mine)
        return Promise.resolve(ok('probed'))
      },
    })
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'probe', input: {} },
            { tool: 'probe', input: {} },
          ],
        },
        { blocks: [{ text: 'fine' }] },
      ],
    }
    const s = await setup(scenario, {})
    const registry = createToolRegistry()
    const tools = registry.names().map((n) => registry.get(n)!)
    const session = await AgentSession.create({ ...s.options, registry: new ToolRegistry([...tools, probe]) })
    await session.run('probe')
    await session.close()
    expect(seen).toEqual([
      ['tool.queued', 'approval.requested', 'approval.decided', 'tool.started'],
      ['tool.queued', 'approval.requested', 'approval.decided', 'tool.started'],
    ])
  })

  it('--approve none turns every asking call into a rejection the model sees', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'new.txt', content: 'hi\n' } }] },
        { blocks: [{ text: 'fine' }] },
      ],
    }
    const s = await setup(scenario, {}, { approvals: 'none' })
    const session = await AgentSession.create(s.options)
    await session.run('write')
    await session.close()
    expect(byType(s.events, 'approval.decided')).toMatchObject([{ decision: 'rejected', by: 'cli' }])
    await expect(readFile(join(s.workspace, 'new.txt'))).rejects.toThrow()
    const [, second] = await recordedRequests(s.recordFile)
    expect(JSON.stringify(second!.messages.at(-1))).toContain('Rejected by the user')
  })

  it('pauses for approval, persists it, and continues from the log in a new session object', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'read_file', input: { path: 'a.txt' } },
            { tool: 'write_file', input: { path: 'out.txt', content: 'approved\n' } },
          ],
        },
        { blocks: [{ text: 'written' }] },
      ],
    }
    const s = await setup(scenario, { 'a.txt': 'x\n' }, { approvals: 'pause' })
    const first = await AgentSession.create(s.options)
    const outcome = await first.run('write it')
    expect(outcome).toMatchObject({ status: 'paused' })
    await first.close()
    const { events } = await readSession(sessionPaths(s.sessionsDir, first.sessionId).log)
    expect(events.at(-1)?.type).toBe('run.paused')

    const { session } = await AgentSession.open(first.sessionId, { ...s.options, approvals: 'all' })
    expect(await session.continue()).toEqual({ status: 'finished' })
    await session.close()
    expect(await readFile(join(s.workspace, 'out.txt'), 'utf8')).toBe('approved\n')
    const requests = await recordedRequests(s.recordFile)
    expect(requests).toHaveLength(2)
  })

  it('runs unasked commands read-only in the sandbox, approved ones writable, and as the review switches say', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'bash', input: { command: 'ls' } },
            { tool: 'bash', input: { command: 'touch made.txt' } },
            { tool: 'bash', input: { command: 'touch also.txt' } },
          ],
        },
        { blocks: [{ text: 'done' }] },
      ],
    }
    const s = await setup(scenario, { 'a.txt': 'x\n' }, { approvals: 'pause' })
    const first = await AgentSession.create(s.options)
    expect(await first.run('look and touch')).toMatchObject({ status: 'paused' })
    const [unasked, made, also] = [0, 1, 2].map((n) => callIdOf(s.events, 'bash', n)) as [
      string,
      string,
      string,
    ]
    await first.close()
    // The read-only command ran at once, in the read-only sandbox.
    const finished = byType(s.events, 'tool.finished')
    expect(finished.find((e) => e.callId === unasked)?.metadata).toMatchObject({ sandbox: 'read-only' })

    const { session } = await AgentSession.open(first.sessionId, {
      ...s.options,
      onEvent: (e) => s.events.push(e),
    })
    expect(
      await session.continue([
        { callId: made, decision: 'approved' },
        { callId: also, decision: 'approved', outsideSandbox: true, network: true },
      ]),
    ).toEqual({ status: 'finished' })
    await session.close()
    expect(await readFile(join(s.workspace, 'made.txt'), 'utf8')).toBe('')
    expect(await readFile(join(s.workspace, 'also.txt'), 'utf8')).toBe('')
    const decided = byType(s.events, 'approval.decided')
    expect(decided.find((e) => e.callId === made)).not.toHaveProperty('outsideSandbox')
    expect(decided.find((e) => e.callId === also)).toMatchObject({ outsideSandbox: true, network: true })
    const results = byType(s.events, 'tool.finished')
    expect(results.find((e) => e.callId === made)?.metadata).toMatchObject({
      sandbox: 'writable',
      network: false,
    })
    expect(results.find((e) => e.callId === also)?.metadata).toMatchObject({ sandbox: 'off' })
  })

  it('refuses a write when the file changed on disk after it was read, also across a continue', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }] },
        { blocks: [{ tool: 'edit_file', input: { path: 'f.txt', old_string: 'one', new_string: 'ONE' } }] },
        { blocks: [{ text: 'hm' }] },
      ],
    }
    const s = await setup(scenario, { 'f.txt': 'one\n' }, { approvals: 'pause' })
    const first = await AgentSession.create(s.options)
    expect(await first.run('edit')).toMatchObject({ status: 'paused' })
    await first.close()
    // Someone edits the file while the session waits.
    await writeFile(join(s.workspace, 'f.txt'), 'one, changed elsewhere\n')
    await utimes(join(s.workspace, 'f.txt'), new Date(), new Date(Date.now() + 5000))
    const { session } = await AgentSession.open(first.sessionId, { ...s.options, approvals: 'all' })
    await session.continue()
    await session.close()
    const edit = byType(s.events, 'tool.finished').at(-1)!
    expect(edit.isError).toBe(true)
    expect(edit.output.toLowerCase()).toMatch(/changed|read it again|conflict/)
    expect(await readFile(join(s.workspace, 'f.txt'), 'utf8')).toBe('one, changed elsewhere\n')
  })

  it('ends with a clear run.failed when the stream breaks, keeping every event written', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ text: 'Let me' }, { tool: 'read_file', input: { path: 'a.txt' } }], failAfterBlocks: 1 },
      ],
    }
    const s = await setup(scenario, { 'a.txt': 'x' })
    const session = await AgentSession.create(s.options)
    const outcome = await session.run('go')
    await session.close()
    expect(outcome.status).toBe('failed')
    const { events, warnings } = await readSession(sessionPaths(s.sessionsDir, session.sessionId).log)
    expect(warnings).toEqual([])
    expect(events.map((e) => e.type)).toEqual(s.events.map((e) => e.type))
    expect(events.at(-1)).toMatchObject({ type: 'run.failed' })
    expect(byType(events, 'tool.started')).toEqual([])
  })

  it('keeps what a broken answer had sent, and continuing (now or after a restart) goes on from it', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ text: 'The plan: first a.txt.' }, { text: 'never sent' }], failAfterBlocks: 1 },
        { blocks: [{ text: 'Picking up: a.txt says x.' }] },
        { blocks: [{ text: 'Picking up again.' }] },
      ],
    }
    const s = await setup(scenario, { 'a.txt': 'x' })
    const session = await AgentSession.create(s.options)
    expect((await session.run('go')).status).toBe('failed')
    expect((await session.continue()).status).toBe('finished')
    await session.close()

    const expected = [
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'The plan: first a.txt.' }] },
      { role: 'user', content: [{ type: 'text', text: BROKE_OFF_NOTE }] },
    ]
    // (Without the prompt-caching marks the client adds.)
    const plain = (messages: unknown): unknown =>
      JSON.parse(
        JSON.stringify(messages, (key, value: unknown) => (key === 'cache_control' ? undefined : value)),
      )
    const [, second] = await recordedRequests(s.recordFile)
    expect(plain(second!.messages)).toEqual(expected)

    // The same conversation is rebuilt from the log after a restart.
    const { events } = await readSession(sessionPaths(s.sessionsDir, session.sessionId).log)
    const cut = events.findIndex((e) => e.type === 'run.failed')
    const { writeFile: write } = await import('node:fs/promises')
    await write(
      sessionPaths(s.sessionsDir, session.sessionId).log,
      events
        .slice(0, cut + 1)
        .map((e) => JSON.stringify(e) + '\n')
        .join(''),
    )
    const { session: reopened } = await AgentSession.open(session.sessionId, s.options)
    expect((await reopened.continue()).status).toBe('finished')
    await reopened.close()
    const [, , third] = await recordedRequests(s.recordFile)
    expect(plain(third!.messages)).toEqual(expected)
  })

  it('stop kills a running command and leaves the session consistent', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'bash', input: { command: 'sleep 30' } }] },
        { blocks: [{ text: 'never' }] },
      ],
    }
    const s = await setup(scenario, {})
    const session = await AgentSession.create(s.options)
    const running = session.run('sleep')
    for (let i = 0; i < 200 && !s.events.some((e) => e.type === 'tool.started'); i++)
      await new Promise((r) => setTimeout(r, 20))
    const t0 = Date.now()
    session.stop()
    expect(await running).toEqual({ status: 'stopped' })
    expect(Date.now() - t0).toBeLessThan(5000)
    await session.close()
    expect(byType(s.events, 'tool.cancelled')).toHaveLength(1)
    expect(s.events.at(-1)?.type).toBe('run.stopped')
  })
})
