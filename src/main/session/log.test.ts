import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises'
import { hostname, uptime } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { SessionEvent } from '../../shared/events'
import {
  isSessionLocked,
  openSessionWriter,
  readSession,
  SessionLogError,
  sessionPaths,
  type SessionWriter,
} from './log'
import { useTempDir } from '../test-fixtures/temp-dir'
import { rejectionOf } from '../test-fixtures/rejection'

const dir = useTempDir('lanes-log-')
const open: SessionWriter[] = []

afterEach(async () => {
  for (const writer of open.splice(0)) await writer.close().catch(() => undefined)
})

async function writer(id = 's1', create = true): Promise<SessionWriter> {
  const w = await openSessionWriter(dir(), id, { create })
  open.push(w)
  return w
}

const created = (sessionId = 's1') =>
  ({
    type: 'session.created',
    sessionId,
    workspace: '/tmp/project',
    settings: { model: 'm', scheduler: 'batch', siblingSkip: true, demo: false },
  }) as const

const output = (chunk: string) => ({ type: 'tool.output', callId: 'c1', chunk }) as const

async function lines(id = 's1'): Promise<string[]> {
  return (await readFile(sessionPaths(dir(), id).log, 'utf8')).split('\n')
}

const rejection = (promise: Promise<unknown>): Promise<SessionLogError> =>
  rejectionOf(promise, SessionLogError)

describe('SessionWriter', () => {
  it('assigns seq from 0 and the time, and writes one event per line', async () => {
    const w = await writer()
    const t0 = Date.now()
    const first = await w.append(created())
    const second = await w.append({ type: 'run.started', runId: 'r1', task: 'hello\nworld' })
    expect(first).toMatchObject({ type: 'session.created', seq: 0 })
    expect(second).toMatchObject({ type: 'run.started', seq: 1, task: 'hello\nworld' })
    expect(first.at).toBeGreaterThanOrEqual(t0)
    expect(Number.isInteger(second.at)).toBe(true)
    expect(w.nextSeq).toBe(2)
    expect(await lines()).toEqual([JSON.stringify(first), JSON.stringify(second), ''])
    expect(await readSession(w.file)).toEqual({ events: [first, second], warnings: [] })
  })

  it('keeps a given time and never lets its own clock go backwards after it', async () => {
    const w = await writer()
    const future = Date.now() + 3_600_000
    await w.append(created())
    expect((await w.append({ type: 'run.started', runId: 'r1', task: 't', at: future })).at).toBe(future)
    expect((await w.append(output('x'))).at).toBe(future)
  })

  it('refuses an invalid or unserializable event, writes nothing and does not use up a seq', async () => {
    const w = await writer()
    await w.append(created())
    const bad = { type: 'tool.finished', callId: 'c1', output: 'x', durationMs: 1 } as never
    const error = await rejection(w.append(bad))
    expect(error.code).toBe('invalid-event')
    expect(error.message).toContain('isError')
    expect((await rejection(w.append({ type: 'no.such.event' } as never))).code).toBe('invalid-event')
    const bigint = {
      type: 'tool.finished',
      callId: 'c1',
      isError: false,
      output: '',
      durationMs: 1,
      metadata: { n: 1n },
    }
    expect((await rejection(w.append(bigint as never))).code).toBe('invalid-event')
    expect((await w.append(output('ok'))).seq).toBe(1)
    expect((await readSession(w.file)).events.map((e) => e.seq)).toEqual([0, 1])
  })

  it('writes a burst of appends in order, batched', async () => {
    const w = await writer()
    const all = await Promise.all(Array.from({ length: 2000 }, (_, i) => w.append(output(`chunk ${i}`))))
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 2000 }, (_, i) => i))
    const { events, warnings } = await readSession(w.file)
    expect(warnings).toEqual([])
    expect(events.map((e) => (e.type === 'tool.output' ? e.chunk : ''))).toEqual(
      all.map((_, i) => `chunk ${i}`),
    )
  })

  it('creates the outputs folder and syncs', async () => {
    const w = await writer()
    expect((await stat(w.outputDir)).isDirectory()).toBe(true)
    expect(w.outputDir).toBe(join(dir(), 's1'))
    await w.append(created())
    await w.sync()
    expect(await lines()).toHaveLength(2)
  })

  it('continues seq after the last event when reopened', async () => {
    const w = await writer()
    await w.append(created())
    await w.append(output('a'))
    await w.close()
    const again = await writer('s1', false)
    expect(again.nextSeq).toBe(2)
    expect((await again.append(output('b'))).seq).toBe(2)
    await again.close()
    const third = await writer('s1', false)
    expect(third.nextSeq).toBe(3)
  })

  it('finds the last seq behind a line longer than the read window', async () => {
    const w = await writer()
    await w.append(created())
    await w.append(output('y'.repeat(300_000)))
    await w.append(output('z'.repeat(150_000)))
    await w.close()
    expect((await writer('s1', false)).nextSeq).toBe(3)
  })

  it('terminates a torn last line on reopen so the next event is not glued to it', async () => {
    const w = await writer()
    const first = await w.append(created())
    await w.close()
    await appendFile(sessionPaths(dir(), 's1').log, '{"type":"tool.output","at":1,"seq":1,"callId":"c1","chu')
    const reopened = await writer('s1', false)
    expect(reopened.nextSeq).toBe(1)
    const next = await reopened.append(output('after the crash'))
    expect(next.seq).toBe(1)
    const { events, warnings } = await readSession(reopened.file)
    expect(events).toEqual([first, next])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/^line 2: /)
  })

  it('keeps a complete last line that only lacks its newline', async () => {
    const w = await writer()
    await w.append(created())
    await w.close()
    const complete = { type: 'tool.output', at: 5, seq: 1, callId: 'c1', chunk: 'whole' }
    await appendFile(sessionPaths(dir(), 's1').log, JSON.stringify(complete))
    const reopened = await writer('s1', false)
    expect(reopened.nextSeq).toBe(2)
    await reopened.append(output('next'))
    const { events, warnings } = await readSession(reopened.file)
    expect(warnings).toEqual([])
    expect(events.map((e) => e.seq)).toEqual([0, 1, 2])
  })

  it('reopens an empty log (the app died before the first event) at seq 0', async () => {
    await (await writer()).close()
    expect((await writer('s1', false)).nextSeq).toBe(0)
  })

  it('says clearly when a session exists, is missing, or has a bad id', async () => {
    await writer()
    await open.pop()?.close()
    expect((await rejection(openSessionWriter(dir(), 's1', { create: true }))).code).toBe('exists')
    expect((await rejection(openSessionWriter(dir(), 'nope', { create: false }))).code).toBe('not-found')
    expect((await rejection(openSessionWriter(join(dir(), 'missing'), 'x', { create: false }))).code).toBe(
      'not-found',
    )
    for (const bad of ['../escape', 'a/b', '', '..']) {
      expect((await rejection(openSessionWriter(dir(), bad, { create: true }))).code).toBe('invalid-id')
    }
  })

  it('rejects appends after close, and close is idempotent', async () => {
    const w = await writer()
    await w.append(created())
    await Promise.all([w.close(), w.close()])
    expect((await rejection(w.append(output('late')))).code).toBe('closed')
    expect((await rejection(w.sync())).code).toBe('closed')
  })

  it('writes what was appended before close', async () => {
    const w = await writer()
    const pending = [w.append(created()), w.append(output('a')), w.append(output('b'))]
    await w.close()
    await Promise.all(pending)
    expect((await readSession(w.file)).events).toHaveLength(3)
  })
})

describe('session lock', () => {
  const lockFile = () => join(dir(), 's1.lock')

  async function lockWith(owner: Record<string, unknown>): Promise<void> {
    await (await writer()).close()
    await writeFile(lockFile(), JSON.stringify(owner))
  }

  const bootAt = () => Math.round((Date.now() - uptime() * 1000) / 1000) * 1000

  it('refuses a second writer in the same process', async () => {
    await writer()
    const error = await rejection(openSessionWriter(dir(), 's1', { create: false }))
    expect(error.code).toBe('locked')
    expect(error.message).toMatch(/open in another window/)
    expect(await isSessionLocked(dir(), 's1')).toBe(true)
  })

  it('refuses a writer while another live process holds the lock', async () => {
    const sleeper = spawn('sleep', ['30'])
    try {
      await lockWith({
        pid: sleeper.pid,
        hostname: hostname(),
        bootAt: bootAt(),
        lockedAt: Date.now(),
        token: 'x',
      })
      const error = await rejection(openSessionWriter(dir(), 's1', { create: false }))
      expect(error.code).toBe('locked')
      expect(error.message).toContain('session is open in another window/process')
      expect(error.message).toContain(String(sleeper.pid))
      expect(await isSessionLocked(dir(), 's1')).toBe(true)
    } finally {
      sleeper.kill('SIGKILL')
    }
  })

  it('takes over a lock whose process is gone', async () => {
    const gone = spawnSync('true').pid
    await lockWith({ pid: gone, hostname: hostname(), bootAt: bootAt(), lockedAt: Date.now(), token: 'x' })
    expect(await isSessionLocked(dir(), 's1')).toBe(false)
    const w = await writer('s1', false)
    expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toMatchObject({ pid: process.pid })
    await w.close()
    await expect(stat(lockFile())).rejects.toThrow()
  })

  it('takes over a lock from before a reboot even if its pid is alive now', async () => {
    await lockWith({ pid: 1, hostname: hostname(), bootAt: bootAt() - 86_400_000, lockedAt: 0, token: 'x' })
    await writer('s1', false)
  })

  it.runIf(existsSync('/proc/sys/kernel/random/boot_id'))('tells boots apart by Linux boot id', async () => {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    await lockWith({ pid: 1, hostname: hostname(), bootId, bootAt: 0, lockedAt: 0, token: 'x' })
    expect((await rejection(openSessionWriter(dir(), 's1', { create: false }))).code).toBe('locked')
    await writeFile(
      lockFile(),
      JSON.stringify({ pid: 1, hostname: hostname(), bootId: 'another-boot', bootAt: bootAt() }),
    )
    await writer('s1', false)
  })

  it('takes over a lock with this process id that this process does not hold (a restarted container)', async () => {
    await lockWith({
      pid: process.pid,
      hostname: hostname(),
      bootAt: bootAt(),
      lockedAt: Date.now(),
      token: 'x',
    })
    expect(await isSessionLocked(dir(), 's1')).toBe(false)
    await writer('s1', false)
  })

  it('takes over an old unreadable lock', async () => {
    await (await writer()).close()
    await writeFile(lockFile(), '')
    const past = new Date(Date.now() - 60_000)
    const { utimes } = await import('node:fs/promises')
    await utimes(lockFile(), past, past)
    await writer('s1', false)
  })

  it('lets only one of several concurrent opens win', async () => {
    await (await writer()).close()
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => openSessionWriter(dir(), 's1', { create: false })),
    )
    const won = results.filter((r) => r.status === 'fulfilled')
    expect(won).toHaveLength(1)
    for (const r of won) open.push((r as PromiseFulfilledResult<SessionWriter>).value)
    for (const r of results)
      if (r.status === 'rejected') expect((r.reason as SessionLogError).code).toBe('locked')
  })

  it('releases the lock on close so the session can be opened again', async () => {
    const w = await writer()
    await w.close()
    expect(await isSessionLocked(dir(), 's1')).toBe(false)
    await writer('s1', false)
  })
})

describe('readSession', () => {
  async function logOf(...parts: string[]): Promise<string> {
    const file = join(dir(), 'raw.jsonl')
    await writeFile(file, parts.join(''))
    return file
  }
  const event = (seq: number, chunk = `c${seq}`) =>
    JSON.stringify({ type: 'tool.output', at: 1000 + seq, seq, callId: 'c1', chunk })

  it('skips a corrupt middle line with a warning naming it, and reads every line after it', async () => {
    const file = await logOf(
      `${event(0)}\n`,
      `${event(1)}\n`,
      '{"type":"tool.output","at":1,"se\n',
      `${event(2)}\n`,
      'not json at all\n',
      `${JSON.stringify({ type: 'tool.finished', at: 1, seq: 3, callId: 'c1' })}\n`,
      `${event(4)}\n`,
    )
    const { events, warnings } = await readSession(file)
    expect(events.map((e) => e.seq)).toEqual([0, 1, 2, 4])
    expect(warnings).toHaveLength(3)
    expect(warnings[0]).toMatch(/^line 3: not valid JSON/)
    expect(warnings[1]).toMatch(/^line 5: not valid JSON/)
    expect(warnings[2]).toMatch(/^line 6: not a valid tool.finished event \(.*isError/)
  })

  it('reports a torn last line as incomplete', async () => {
    const { events, warnings } = await readSession(await logOf(`${event(0)}\n`, event(1).slice(0, 30)))
    expect(events).toHaveLength(1)
    expect(warnings).toEqual(['line 2: incomplete last line (the app stopped while writing it); skipped'])
  })

  it('ignores blank lines and a byte order mark, and warns about seq going backwards', async () => {
    const { events, warnings } = await readSession(
      await logOf(`\uFEFF${event(0)}\n`, '\n', '   \n', `${event(1)}\r\n`, `${event(1, 'again')}\n`),
    )
    expect(events.map((e) => e.seq)).toEqual([0, 1, 1])
    expect(warnings).toEqual(['line 5: seq 1 follows seq 1'])
  })

  it('reads lines that cross read chunks, multi-byte characters and a 5 MB line intact', async () => {
    const parts: string[] = []
    const chunks: string[] = []
    for (let seq = 0; seq < 400; seq++) {
      const chunk = seq === 200 ? 'é✓😀'.repeat(1_300_000) : `${seq}-${'é✓😀x'.repeat((seq * 7919) % 4000)}`
      chunks.push(chunk)
      parts.push(`${event(seq, chunk)}\n`)
    }
    const { events, warnings } = await readSession(await logOf(...parts))
    expect(warnings).toEqual([])
    expect(events.map((e) => (e.type === 'tool.output' ? e.chunk : ''))).toEqual(chunks)
  })

  it('rejects with not-found for a missing file', async () => {
    expect((await rejection(readSession(join(dir(), 'missing.jsonl')))).code).toBe('not-found')
  })

  it('round-trips every event the writer wrote through the schema', async () => {
    const w = await writer()
    const written = [
      await w.append(created()),
      await w.append({ type: 'run.started', runId: 'r1', task: 'ünïcödé ✓ \u2028 line' }),
      await w.append({ type: 'file.snapshot', path: '/tmp/project/a', mtimeMs: 1.5, hash: 'ab' }),
    ]
    const { events } = await readSession(w.file)
    expect(events).toEqual(written)
    for (const e of events) expect(SessionEvent.parse(e)).toEqual(e)
  })
})

describe('SessionWriter when the disk is full', () => {
  it('rejects the failed appends, rolls back the partial line and goes on from the last written seq', async () => {
    const child = fileURLToPath(new URL('./test-fixtures/log-writer-child.ts', import.meta.url))
    const root = fileURLToPath(new URL('../../..', import.meta.url))
    // A real file size limit: writes past 256 KiB fail with EFBIG, the same path as ENOSPC.
    const result = spawnSync(
      'bash',
      ['-c', `ulimit -f 256 && exec "${process.execPath}" --import tsx "${child}" disk-full "${dir()}" full`],
      { cwd: root, encoding: 'utf8', timeout: 30_000 },
    )
    expect(result.stderr).toBe('')
    const report = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as Record<string, unknown>
    expect(report.failure).toMatch(/Could not write to the session log/)
    expect(report.accepted).toBe(6)
    // session.created is seq 0, then 6 accepted events: the failed one handed its seq back.
    expect(report.seqAfterFailure).toBe(7)
    expect(report.batchRejected).toBe(3)
    expect(report.seqAfterBatch).toBe(7)
    expect(report.small).toBe(7)

    // It exited without close(): the exit hook released the lock.
    await expect(stat(join(dir(), 'full.lock'))).rejects.toThrow()
    const raw = await readFile(join(dir(), 'full.jsonl'), 'utf8')
    expect(raw.endsWith('\n')).toBe(true)
    const { events, warnings } = await readSession(join(dir(), 'full.jsonl'))
    expect(warnings).toEqual([])
    expect(events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
  })
})
