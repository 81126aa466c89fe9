import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { reduceEvents } from '../../shared/reducer'
import { startScriptedModel } from '../agent/scripted-model'
import { readSession, sessionPaths } from '../session/log'
import { runLanes } from './test-fixtures/run-lanes'

// A real `lanes run` SIGKILLed while Lanes compacts the conversation (issue 21: "compaction interrupted by a
// crash"): the model is writing the summary, slowly, when the process dies. The log must read cleanly, hold no
// half compaction, and `lanes run --continue` must compact and finish against a model that refuses what the
// API would.

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

describe('a crash while the conversation is compacted', () => {
  it('leaves a consistent log, and --continue compacts and finishes', async () => {
    const base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-compaction-crash-')))
    const workspace = join(base, 'ws')
    const sessionsDir = join(base, 'sessions')
    await mkdir(workspace)
    await writeFile(join(workspace, 'a.txt'), 'alpha\n')
    const model = await startScriptedModel({
      strict: true,
      scenario: {
        turns: [
          // The context passes the threshold (160k of a 200k window): the next step is a compaction.
          { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }], usage: { input_tokens: 170_000 } },
          // The summary the process dies waiting for.
          { blocks: [{ text: 'Summary that never arrives.' }], firstTokenMs: 60_000 },
          // After the continue: the summary, then the rest of the run.
          { blocks: [{ text: 'Summary: a.txt says alpha.' }] },
          { blocks: [{ text: 'All done.' }] },
        ],
      },
    })
    cleanups.push(async () => {
      await model.close()
      await rm(base, { recursive: true, force: true })
    })
    // A model without server-side compaction: Lanes asks for the summary itself.
    const common = ['--sessions-dir', sessionsDir, '--base-url', model.baseUrl, '--model', 'claude-haiku-4-5']

    const proc = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `const { main } = await import('./src/main/cli/cli.ts'); process.exitCode = await main(process.argv.slice(1))`,
        'run',
        '--workspace',
        workspace,
        '--task',
        'Read a.txt',
        '--approve',
        'all',
        ...common,
      ],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, ANTHROPIC_API_KEY: 'test' },
      },
    )
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      proc.once('exit', (_code, signal) => resolve(signal)),
    )
    cleanups.push(async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    })
    const printed: SessionEvent[] = []
    createInterface({ input: proc.stdout! }).on('line', (line) =>
      printed.push(JSON.parse(line) as SessionEvent),
    )
    // The second request is the summary's (no tools): the process is compacting when it is killed.
    for (let i = 0; i < 1500 && model.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
    expect(model.requests.length).toBe(2)
    await new Promise((r) => setTimeout(r, 200))
    proc.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')

    const sessionId = printed.find((e) => e.type === 'session.created')?.sessionId as string | undefined
    expect(sessionId).toBeDefined()
    const log = sessionPaths(sessionsDir, sessionId!).log
    const afterCrash = await readSession(log)
    expect(afterCrash.warnings).toEqual([])
    // Nothing of the compaction reached the log: it is logged whole, once the summary is in.
    expect(afterCrash.events.filter((e) => e.type === 'context.compacted')).toEqual([])
    const crashed = reduceEvents(afterCrash.events)
    expect(crashed.counts.anomalies).toBe(0)
    expect(crashed.counts.byStatus.ok).toBe(1)
    expect(crashed.status).toBe('running')

    const continued = await runLanes(['run', '--continue', sessionId!, ...common])
    expect(continued.stderr).toBe('')
    expect(continued.code).toBe(0)
    const { events, warnings } = await readSession(log)
    expect(warnings).toEqual([])
    const state = reduceEvents(events)
    expect(state.counts.anomalies).toBe(0)
    expect(state.status).toBe('finished')
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    const compacted = events.filter((e) => e.type === 'context.compacted')
    expect(compacted).toMatchObject([
      { mode: 'client', strategy: 'summary', summary: 'Summary: a.txt says alpha.' },
    ])
    // The run did not repeat the call that had finished before the crash, and the model took every request.
    expect(events.filter((e) => e.type === 'tool.started')).toHaveLength(1)
    expect(events.filter((e) => e.type === 'run.failed')).toEqual([])
    expect(model.requests.length).toBe(4)
    expect(JSON.stringify(model.requests[3])).toContain('Summary: a.txt says alpha.')
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).toBe('alpha\n')
  }, 90_000)
})
