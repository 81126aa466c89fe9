import { spawn } from 'node:child_process'
import { cp, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { reduceEvents } from '../../shared/reducer'
import { AgentSession } from '../agent/loop'
import type { Scenario } from '../agent/scenario'
import { cleanUpScriptedRuns, scriptedRun } from '../agent/test-fixtures/scripted-run'
import { applyRewindFromApp, planRewindView } from '../app/rewind-view'
import { readSession, sessionPaths } from '../session/log'
import { unfinishedRewind } from '../session/rewind-history'
import { withRewindSession } from '../session/rewind-session'
import { recordSession, sessionEvents, type RecordedSession } from '../session/test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'

// Rewinds racing each other, a run, and a crash: real processes on real folders. A rewind is refused or
// serialized, never interleaved with another writer of the session; a process killed at any moment of a rewind
// leaves it, after the next start, wholly done or wholly undone.

const CHILD = fileURLToPath(new URL('./test-fixtures/rewind-child.ts', import.meta.url))

interface Child {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
}

/** Runs the child; `onLine` hears each line of its output (and may kill it). */
function child(args: string[], onLine?: (line: string, kill: () => void) => void): Promise<Child> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      for (const line of d.split('\n').filter(Boolean)) onLine?.(line, () => p.kill('SIGKILL'))
    })
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    p.once('error', reject)
    p.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

const cleanup = removedAfterEach()
afterEach(cleanUpScriptedRuns)

const N = 100
const original = (i: number) => `file ${i}\n${'a line of the file\n'.repeat(40)}end of file\n`
const edited = (i: number) => original(i).replace('end of file\n', 'CHANGED\n')

/**
 * 2N files: turn 1 creates f0..f(N-1); turn 2 (from call e0) edits each of them and creates g0..g(N-1). A
 * rewind to e0 restores N files and removes N.
 */
async function manyFiles(): Promise<RecordedSession> {
  const s = await recordSession()
  cleanup.push(s.sessionsDir, s.workspace)
  for (let i = 0; i < N; i++)
    await s.call(1, `w${i}`, 'write_file', { path: `f${i}.txt`, content: original(i) })
  for (let i = 0; i < N; i++) {
    await s.call(2, `e${i}`, 'edit_file', {
      path: `f${i}.txt`,
      old_string: 'end of file\n',
      new_string: 'CHANGED\n',
    })
    await s.call(2, `g${i}`, 'write_file', { path: `sub/g${i}.txt`, content: `new ${i}\n` })
  }
  await s.close()
  return s
}

/** Where the 2N files stand: all before the rewind, all rewound, or (the failure) a mix. */
async function standing(s: RecordedSession): Promise<'before' | 'rewound' | string> {
  let before = 0
  let rewound = 0
  const odd: string[] = []
  for (let i = 0; i < N; i++) {
    const f = await readFile(join(s.workspace, `f${i}.txt`), 'utf8').catch(() => null)
    const g = await readFile(join(s.workspace, `sub/g${i}.txt`), 'utf8').catch(() => null)
    if (f === edited(i)) before++
    else if (f === original(i)) rewound++
    else odd.push(`f${i}.txt`)
    if (g === `new ${i}\n`) before++
    else if (g === null) rewound++
    else odd.push(`sub/g${i}.txt`)
  }
  if (before === 2 * N) return 'before'
  if (rewound === 2 * N) return 'rewound'
  return `a mix: ${before} before, ${rewound} rewound, torn: ${odd.join(', ') || 'none'}`
}

describe('a rewind of 200 files killed at a random moment', { timeout: 240_000 }, () => {
  it('is, after the next start, wholly done or wholly undone, whatever the moment', async () => {
    const s = await manyFiles()
    const snapshot = { ws: `${s.workspace}.snap`, sessions: `${s.sessionsDir}.snap` }
    cleanup.push(snapshot.ws, snapshot.sessions)
    await cp(s.workspace, snapshot.ws, { recursive: true })
    await cp(s.sessionsDir, snapshot.sessions, { recursive: true })
    const restore = async () => {
      await rm(s.workspace, { recursive: true, force: true })
      await rm(s.sessionsDir, { recursive: true, force: true })
      await cp(snapshot.ws, s.workspace, { recursive: true })
      await cp(snapshot.sessions, s.sessionsDir, { recursive: true })
    }
    const args = ['apply', s.sessionsDir, s.sessionId, 'e0']

    // Uncut, to learn how long the apply takes here.
    let appliedAt = 0
    const whole = await child(args, (line) => {
      if (line === 'applying') appliedAt = performance.now()
    })
    const applyMs = performance.now() - appliedAt
    expect(whole.stdout).toContain('done')
    expect(await standing(s)).toBe('rewound')

    const seen = new Set<string>()
    for (let round = 0; round < 8; round++) {
      await restore()
      // Spread over the apply (and a little past it), each at a random point of its share.
      const delay = ((round + Math.random()) / 8) * applyMs * 1.2
      const killed = await child(args, (line, kill) => {
        if (line === 'applying') setTimeout(kill, delay)
      })
      const recovered = await withRewindSession(s.sessionsDir, s.sessionId, async (r) => r.recovered)
      const events = await sessionEvents(s)
      expect(unfinishedRewind(events), `round ${round}, killed after ${delay.toFixed(1)} ms`).toBeUndefined()
      const state = await standing(s)
      expect(
        ['before', 'rewound'],
        `round ${round}: killed after ${delay.toFixed(1)} ms (${killed.signal})`,
      ).toContain(state)
      // The log says what the folder shows.
      const last = reduceEvents(events).rewinds.at(-1)
      if (state === 'rewound') expect(last?.status).toBe('done')
      else expect(last === undefined || last.status === 'rolled-back').toBe(true)
      seen.add(
        `${killed.signal ?? 'exited'}:${recovered && 'outcome' in recovered ? recovered.outcome : 'none'}`,
      )
    }
    // Some rounds were cut mid-apply and finished on the next start.
    expect([...seen].some((k) => k === 'SIGKILL:done')).toBe(true)
  })
})

describe('two rewinds at once', { timeout: 120_000 }, () => {
  it('two `lanes rewind` processes on one session: one rewinds, the other is refused or finds nothing left', async () => {
    const s = await manyFiles()
    const cli = ['cli', 'rewind', s.sessionId, '--to', 'e0', '--files-only', '--sessions-dir', s.sessionsDir]
    const [a, b] = await Promise.all([child(cli), child(cli)])
    const outcomes = [a, b].map((r) => r.code).sort()
    expect(outcomes, `${a.stderr}\n${b.stderr}`).toEqual([0, 1])
    const refused = (a.code === 1 ? a : b).stderr
    expect(refused).toMatch(/is open in another|already open|Nothing to rewind/)
    expect(await standing(s)).toBe('rewound')
    const finished = (await sessionEvents(s)).filter((e) => e.type === 'rewind.finished')
    expect(finished).toHaveLength(1)
  })
})

describe('two windows of the app rewinding one session at once', { timeout: 120_000 }, () => {
  it('one rewinds; the other is refused, never interleaved', async () => {
    const s = await manyFiles()
    const target = { sessionId: s.sessionId, mode: 'rewind' as const, callId: 'e0' }
    const both = await Promise.all([
      applyRewindFromApp(s.sessionsDir, target),
      applyRewindFromApp(s.sessionsDir, target),
    ])
    const refused = both.filter((r) => 'ok' in r)
    expect(refused).toEqual([{ ok: false, reason: expect.stringMatching(/already open|Nothing to rewind/) }])
    expect(await standing(s)).toBe('rewound')
    expect((await sessionEvents(s)).filter((e) => e.type === 'rewind.finished')).toHaveLength(1)
  })
})

describe('a rewind while a run holds the session', { timeout: 120_000 }, () => {
  it('is refused, from the command line and from the app, and the run goes on unharmed', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'first\n' } }] },
        { blocks: [{ tool: 'write_file', input: { path: 'b.txt', content: 'second\n' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, {
      approvals: 'pause',
      strict: true,
      prefix: 'lanes-rewind-race-',
    })
    const session = await AgentSession.create(run.options)
    // The first write asks for review: the run waits for it, its session open (a window showing the review).
    expect(await session.run('write')).toMatchObject({ status: 'paused' })
    const first = run.events.find((e) => e.type === 'tool.queued')
    const callId = first?.type === 'tool.queued' ? first.callId : ''
    const cli = await child([
      'cli',
      'rewind',
      session.sessionId,
      '--to',
      callId,
      '--sessions-dir',
      run.sessionsDir,
    ])
    expect(cli.code).toBe(1)
    expect(cli.stderr).toMatch(/open|in use/)
    const app = await planRewindView(run.sessionsDir, { sessionId: session.sessionId, mode: 'undo', callId })
    expect(app).toMatchObject({ ok: false, reason: expect.stringMatching(/open|in use/) })
    const log = await readSession(sessionPaths(run.sessionsDir, session.sessionId).log)
    expect(log.events.some((e) => e.type.startsWith('rewind.'))).toBe(false)
    // The run goes on once reviewed.
    await session.close()
    const { session: again } = await AgentSession.open(session.sessionId, run.options)
    expect(await again.continue([{ callId, decision: 'approved' }])).toMatchObject({ status: 'paused' })
    await again.close()
    expect(await readFile(join(run.workspace, 'a.txt'), 'utf8')).toBe('first\n')
  })
})
