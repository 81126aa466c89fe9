import { spawnSync } from 'node:child_process'
import { appendFile, mkdir, open as openFile, readFile, symlink, unlink, writeFile } from 'node:fs/promises'
import { hostname, uptime } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { SessionId, type SessionEventDraft } from '../../shared/events'
import { openSessionWriter, type SessionWriter } from './log'
import { forgetSessionSummaries, listSessions, newSessionId, SESSION_INDEX_FILE } from './store'
import { useTempDir } from '../test-fixtures/temp-dir'

const dir = useTempDir('lanes-store-')
const writers: SessionWriter[] = []

afterEach(async () => {
  for (const w of writers.splice(0)) await w.close().catch(() => undefined)
})

const settings = { model: 'm', scheduler: 'batch', siblingSkip: true, demo: false } as const

/** A session written by the real writer: created at `createdAt`, then `events`; left open when `keepOpen`. */
async function session(
  id: string,
  events: SessionEventDraft[],
  opts: { workspace?: string; title?: string; createdAt?: number; keepOpen?: boolean } = {},
): Promise<SessionWriter> {
  const w = await openSessionWriter(dir(), id, { create: true })
  await w.append({
    type: 'session.created',
    sessionId: id,
    workspace: opts.workspace ?? '/work/project',
    title: opts.title,
    settings,
    at: opts.createdAt ?? 1_000,
  })
  for (const event of events) await w.append(event)
  if (opts.keepOpen) writers.push(w)
  else await w.close()
  return w
}

const started = (task = 'Fix the build', runId = 'r1') => ({ type: 'run.started', runId, task }) as const

describe('listSessions', () => {
  it('gives each session its status', async () => {
    await session('finished', [started(), { type: 'run.finished', runId: 'r1', reason: 'end_turn' }], {
      createdAt: 1,
    })
    await session('failed', [started(), { type: 'run.failed', runId: 'r1', error: 'x', kind: 'network' }], {
      createdAt: 2,
    })
    await session(
      'paused',
      [started(), { type: 'run.paused', runId: 'r1', reason: 'approval', callIds: ['c1'] }],
      { createdAt: 3 },
    )
    await session('stopped', [started(), { type: 'run.stopped', runId: 'r1' }], { createdAt: 4 })
    await session('crashed', [started(), { type: 'turn.started', runId: 'r1', turn: 1 }], { createdAt: 5 })
    await session(
      'resumed-then-crashed',
      [
        started(),
        { type: 'run.paused', runId: 'r1', reason: 'approval', callIds: ['c1'] },
        { type: 'run.resumed', runId: 'r1' },
      ],
      { createdAt: 6 },
    )
    await session('live', [started()], { createdAt: 7, keepOpen: true })
    await session(
      'live-paused',
      [started(), { type: 'run.paused', runId: 'r1', reason: 'approval', callIds: [] }],
      {
        createdAt: 8,
        keepOpen: true,
      },
    )
    await session('no-run', [], { createdAt: 9 })
    await session(
      'rewound',
      [
        started(),
        { type: 'run.finished', runId: 'r1', reason: 'end_turn' },
        {
          type: 'rewind.started',
          rewindId: 'w1',
          mode: 'rewind',
          callId: 'c1',
          callIds: ['c1'],
          changes: [],
          skipped: [],
          turn: 1,
        },
        { type: 'rewind.finished', rewindId: 'w1', outcome: 'done', conversationFromTurn: 1 },
      ],
      { createdAt: 10 },
    )

    const byId = Object.fromEntries((await listSessions(dir())).map((s) => [s.sessionId, s]))
    expect(byId.finished).toMatchObject({ status: 'finished' })
    expect(byId.finished).not.toHaveProperty('interrupted')
    expect(byId.failed).toMatchObject({ status: 'failed' })
    expect(byId.paused).toMatchObject({ status: 'paused' })
    expect(byId.paused).not.toHaveProperty('interrupted')
    expect(byId.stopped).toMatchObject({ status: 'paused', stopped: true })
    expect(byId.crashed).toMatchObject({ status: 'paused', interrupted: true })
    expect(byId['resumed-then-crashed']).toMatchObject({ status: 'paused', interrupted: true })
    expect(byId.live).toMatchObject({ status: 'running' })
    // Live, and waiting for the user's review: paused (not interrupted: its run is still there to answer).
    expect(byId['live-paused']).toMatchObject({ status: 'paused' })
    expect(byId['live-paused']).not.toHaveProperty('interrupted')
    expect(byId['no-run']).toMatchObject({ status: 'finished', title: 'Untitled session' })
    // The conversation went back to an earlier turn: it waits to go on from there, for no review.
    expect(byId.rewound).toMatchObject({ status: 'paused', rewound: true })
    expect(byId.paused).not.toHaveProperty('rewound')
  })

  it('sees a crashed writer (lock left by a dead process) as interrupted, not running', async () => {
    const w = await session('dead', [started()], { keepOpen: true })
    await w.close()
    const gone = spawnSync('true').pid
    const bootAt = Math.round((Date.now() - uptime() * 1000) / 1000) * 1000
    await writeFile(
      join(dir(), 'dead.lock'),
      JSON.stringify({ pid: gone, hostname: hostname(), bootAt, lockedAt: 1, token: 't' }),
    )
    expect(await listSessions(dir())).toMatchObject([
      { sessionId: 'dead', status: 'paused', interrupted: true },
    ])
  })

  it('summarizes title, task, times and event count', async () => {
    await session(
      'a',
      [started('Make the tests pass\nand then some'), { type: 'tool.started', callId: 'c', at: 9_000 }],
      {
        createdAt: 5_000,
      },
    )
    await session('b', [started('Other')], { title: 'My title', createdAt: 6_000 })
    const [b, a] = await listSessions(dir())
    expect(a).toEqual({
      sessionId: 'a',
      workspace: '/work/project',
      title: 'Make the tests pass',
      task: 'Make the tests pass\nand then some',
      createdAt: 5_000,
      updatedAt: 9_000,
      status: 'paused',
      interrupted: true,
      eventCount: 3,
    })
    expect(b).toMatchObject({ title: 'My title', task: 'Other', createdAt: 6_000 })
  })

  it('lists newest first and filters by workspace, through symlinks', async () => {
    await mkdir(join(dir(), 'ws'))
    await symlink(join(dir(), 'ws'), join(dir(), 'ws-link'))
    await session('old', [], { createdAt: 1_000, workspace: join(dir(), 'ws') })
    await session('new', [], { createdAt: 3_000, workspace: join(dir(), 'ws') })
    await session('middle', [], { createdAt: 2_000, workspace: '/elsewhere' })
    expect((await listSessions(dir())).map((s) => s.sessionId)).toEqual(['new', 'middle', 'old'])
    expect((await listSessions(dir(), join(dir(), 'ws'))).map((s) => s.sessionId)).toEqual(['new', 'old'])
    expect((await listSessions(dir(), join(dir(), 'ws-link'))).map((s) => s.sessionId)).toEqual([
      'new',
      'old',
    ])
    expect((await listSessions(dir(), `${join(dir(), 'ws')}/`)).map((s) => s.sessionId)).toEqual([
      'new',
      'old',
    ])
    expect(await listSessions(dir(), '/nowhere')).toEqual([])
  })

  it('reads the status past a torn last line and skips files that are not sessions', async () => {
    await session('torn', [started(), { type: 'run.finished', runId: 'r1', reason: 'end_turn' }])
    const handle = await openFile(join(dir(), 'torn.jsonl'), 'a')
    await handle.write('{"type":"tool.output","at":5,"se')
    await handle.close()
    await writeFile(join(dir(), 'garbage.jsonl'), 'not json\n{"type":"run.started"}\n')
    await writeFile(join(dir(), 'empty.jsonl'), '')
    await writeFile(join(dir(), 'bad name!.jsonl'), '')
    await writeFile(join(dir(), 'notes.txt'), 'hello')
    expect(await listSessions(dir())).toMatchObject([{ sessionId: 'torn', status: 'finished' }])
  })

  it('returns an empty list for a missing folder', async () => {
    expect(await listSessions(join(dir(), 'missing'))).toEqual([])
  })

  it('lists hundreds of sessions without reading whole logs', async () => {
    // Each log is 256 MB long (a sparse hole between its head and tail): reading them whole would take
    // minutes.
    const line = (event: object) => `${JSON.stringify(event)}\n`
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const id = `s${String(i).padStart(3, '0')}`
        const head =
          line({ type: 'session.created', at: 1_000 + i, seq: 0, sessionId: id, workspace: '/w', settings }) +
          line({ type: 'run.started', at: 1_001 + i, seq: 1, runId: 'r', task: `task ${i}` })
        const tail = line({ type: 'run.finished', at: 9_000 + i, seq: 99, runId: 'r', reason: 'end_turn' })
        const handle = await openFile(join(dir(), `${id}.jsonl`), 'w')
        await handle.write(head, 0)
        await handle.write(`\n${tail}`, 256 * 1024 * 1024)
        await handle.close()
      }),
    )
    const t0 = performance.now()
    const list = await listSessions(dir(), '/w')
    const elapsed = performance.now() - t0
    expect(list).toHaveLength(200)
    expect(list[0]).toMatchObject({
      sessionId: 's199',
      status: 'finished',
      task: 'task 199',
      eventCount: 100,
    })
    expect(elapsed).toBeLessThan(10_000)
  })
})

describe('listSessions reading windows', () => {
  const output = (i: number) =>
    ({ type: 'tool.output', callId: `c${i}`, chunk: `${'x'.repeat(990)}\n` }) as const

  it('finds the last run event behind more than the first tail window, and a task longer than the first head window', async () => {
    const longTask = `Fix the build. ${'Say exactly what failed. '.repeat(600)}`
    // 60 KB of output after the run started, nothing after: the run was going when the app died.
    await session('long', [started(longTask), ...Array.from({ length: 60 }, (_, i) => output(i))], {
      createdAt: 1,
    })
    const [long] = await listSessions(dir())
    expect(long).toMatchObject({ sessionId: 'long', status: 'paused', interrupted: true, task: longTask })
  })

  it('reads a log again once it grew, and not before', async () => {
    const w = await session('grows', [started()], { keepOpen: true })
    expect((await listSessions(dir()))[0]).toMatchObject({ status: 'running', eventCount: 2 })
    await w.append({ type: 'run.finished', runId: 'r1', reason: 'end_turn' })
    await w.close()
    writers.splice(writers.indexOf(w), 1)
    expect((await listSessions(dir()))[0]).toMatchObject({ status: 'finished', eventCount: 3 })
  })
})

describe('the session index', () => {
  const indexPath = () => join(dir(), SESSION_INDEX_FILE)
  type Index = { logs: Record<string, { key: string; value: { summary: { title: string } } | null }> }
  const readIndex = async () => JSON.parse(await readFile(indexPath(), 'utf8')) as Index

  it('answers a first listing from the index while a log is unchanged, and from the log once it is not', async () => {
    await session('a', [started('Fix the build')], { createdAt: 1 })
    await session('b', [started('Write the docs')], { createdAt: 2 })
    await listSessions(dir())
    // What the index says is what a listing in a new process shows, as long as each log is as it was: a title
    // changed in the index alone proves the log was not read.
    const index = await readIndex()
    expect(Object.keys(index.logs).sort()).toEqual(['a', 'b'])
    index.logs.a!.value!.summary.title = 'From the index'
    await writeFile(indexPath(), JSON.stringify(index))
    forgetSessionSummaries()
    expect((await listSessions(dir())).map((s) => s.title)).toEqual(['Write the docs', 'From the index'])

    // The log grew without the app (a run that went on, a crash before the index was written): read again.
    forgetSessionSummaries()
    const line = { type: 'run.finished', runId: 'r1', reason: 'end_turn', at: 5_000, seq: 2 }
    await appendFile(join(dir(), 'a.jsonl'), `${JSON.stringify(line)}\n`)
    const [, a] = await listSessions(dir())
    expect(a).toMatchObject({ sessionId: 'a', title: 'Fix the build', status: 'finished', eventCount: 3 })
    expect((await readIndex()).logs.a?.value?.summary.title).toBe('Fix the build')
  })

  it('is ignored when damaged, of another version, or naming another session, and written anew', async () => {
    await session('a', [started('Fix the build')], { createdAt: 1 })
    await listSessions(dir())
    const good = await readIndex()
    const expected = [{ sessionId: 'a', title: 'Fix the build', status: 'paused', interrupted: true }]
    for (const bad of [
      '{"version":1,"logs":{"a":',
      JSON.stringify({ ...good, version: 2 }),
      JSON.stringify({
        version: 1,
        logs: {
          a: {
            ...good.logs.a,
            value: { ...good.logs.a!.value, summary: { ...good.logs.a!.value!.summary, sessionId: 'b' } },
          },
        },
      }),
      JSON.stringify({
        version: 1,
        logs: { a: { key: good.logs.a!.key, value: { summary: { title: 1 } } } },
      }),
    ]) {
      await writeFile(indexPath(), bad)
      forgetSessionSummaries()
      expect(await listSessions(dir())).toMatchObject(expected)
      expect(await readIndex()).toEqual(good)
    }
  })

  it('forgets a session whose log is gone', async () => {
    await session('a', [started()], { createdAt: 1 })
    await session('b', [started()], { createdAt: 2 })
    await listSessions(dir())
    await unlink(join(dir(), 'a.jsonl'))
    expect((await listSessions(dir())).map((s) => s.sessionId)).toEqual(['b'])
    expect(Object.keys((await readIndex()).logs)).toEqual(['b'])
  })
})

describe('newSessionId', () => {
  it('is a filename-safe id that sorts by creation time', () => {
    const ids = [
      newSessionId(new Date('2026-01-02T03:04:05.006Z')),
      newSessionId(new Date('2026-01-02T03:04:05.007Z')),
      newSessionId(new Date('2026-11-30T19:40:12.123Z')),
    ]
    expect(ids[2]).toMatch(/^2026-11-30T19-40-12-123Z-[0-9a-f]{6}$/)
    for (const id of ids) expect(SessionId.safeParse(id).success).toBe(true)
    expect([...ids].reverse().sort()).toEqual(ids)
    expect(newSessionId()).not.toBe(newSessionId())
  })
})
