import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { appendFile, mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSession, sessionPaths } from './log'
import { payloadFor } from './test-fixtures/log-writer-child'
import { seededInts } from '../test-fixtures/seeded'

/**
 * The writer in a real process, killed with SIGKILL at random points over and over: after every kill the log
 * must load, hold every event up to the last completed sync, and lose at most the line being written.
 *
 * Each child writes thirteen sessions at once, so one kill interrupts thirteen writers at independent points
 * of their append/sync cycle; 8 children make 104 kill points (a process start costs ~0.5 s, so one kill per
 * child would not fit the time budget). The next child is started (and has loaded its code) while the current
 * one runs, and its first act is to reopen the logs: taking over the dead process's locks and terminating any
 * torn last line.
 *
 * A kill rarely lands inside a write syscall (the only way SIGKILL tears a line), so some rounds also append
 * half an event to a few logs after the kill, as a torn write would leave it, to make the next child repair
 * it.
 */

const CHILD = fileURLToPath(new URL('./test-fixtures/log-writer-child.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const SESSIONS = Array.from({ length: 13 }, (_, i) => `k${i}`)
const ROUNDS = 8

interface Child {
  process: ChildProcessWithoutNullStreams
  loaded: Promise<void>
  ready: Promise<void>
  closed: Promise<void>
  lines: string[]
  stderr: string
}

function startChild(dir: string): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'crash', dir, SESSIONS.join(',')], {
    cwd: ROOT,
  })
  const lines: string[] = []
  let pending = ''
  let onLoaded = (): void => undefined
  let onReady = (): void => undefined
  const state: Child = {
    process: child,
    loaded: new Promise((resolve) => (onLoaded = resolve)),
    ready: new Promise((resolve) => (onReady = resolve)),
    closed: new Promise((resolve) => child.once('close', () => resolve())),
    lines,
    stderr: '',
  }
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (data: string) => {
    pending += data
    const parts = pending.split('\n')
    pending = parts.pop() as string
    for (const line of parts) {
      lines.push(line)
      if (line === 'loaded') onLoaded()
      if (line === 'ready') onReady()
    }
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (data: string) => (state.stderr += data))
  return state
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Fractions in [0, 1), deterministic so a failure can be replayed. */
function random(seed: number): () => number {
  const next = seededInts(seed)
  return () => next() / 2 ** 31
}

async function endsWithNewline(file: string): Promise<boolean | undefined> {
  let handle
  try {
    handle = await open(file, 'r')
  } catch {
    return undefined
  }
  try {
    const { size } = await handle.stat()
    if (size === 0) return true
    const last = Buffer.alloc(1)
    await handle.read(last, 0, 1, size - 1)
    return last[0] === 0x0a
  } finally {
    await handle.close()
  }
}

describe('session log durability', () => {
  let dir: string
  const started: Child[] = []
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lanes-crash-'))
  })
  afterAll(async () => {
    // A failed assertion leaves the preloaded next child waiting for `go`.
    for (const child of started) if (child.process.exitCode === null) child.process.kill('SIGKILL')
    await Promise.all(started.map((child) => child.closed))
    await rm(dir, { recursive: true, force: true })
  })

  it(
    'loses nothing that was synced across 100+ SIGKILLs at random points',
    { timeout: 120_000 },
    async () => {
      const rand = random(20261130)
      const synced = new Map<string, number>(SESSIONS.map((id) => [id, -1]))
      const tornLines = new Map<string, number>(SESSIONS.map((id) => [id, 0]))
      const verified = new Map<string, number>(SESSIONS.map((id) => [id, 0]))
      let kills = 0
      let killsWhileWriting = 0
      let next = startChild(dir)
      started.push(next)

      for (let round = 0; round < ROUNDS; round++) {
        const child = next
        await child.loaded
        child.process.stdin.write('go\n')
        if (round + 1 < ROUNDS) started.push((next = startChild(dir)))

        if (round % 4 === 3) {
          // While it is still opening: taking over locks, repairing torn lines.
          await sleep(rand() * 15)
        } else {
          // While appending and syncing: after a random amount of progress (so a slow machine still gets
          // there), then a random extra delay.
          const progress = 1 + Math.floor(rand() * SESSIONS.length)
          while (
            child.lines.filter((l) => l.startsWith('synced ')).length < progress &&
            child.process.exitCode === null
          ) {
            await sleep(2)
          }
          await sleep(rand() * 30)
          killsWhileWriting += SESSIONS.length
        }
        child.process.kill('SIGKILL')
        await child.closed
        kills += SESSIONS.length
        expect(child.stderr, `round ${round}`).toBe('')

        for (const line of child.lines) {
          const [word, id, seq] = line.split(' ')
          if (word === 'synced' && id && seq) synced.set(id, Math.max(synced.get(id) ?? -1, Number(seq)))
        }

        for (const id of SESSIONS) {
          const file = sessionPaths(dir, id).log
          const terminated = await endsWithNewline(file)
          if (terminated === undefined) continue // killed before this session's log was created
          if (!terminated) tornLines.set(id, (tornLines.get(id) ?? 0) + 1)

          const { events, warnings } = await readSession(file)
          const where = `round ${round}, session ${id}`
          // No gap and no duplicate: every reopen continued right after the last complete event.
          for (let i = 0; i < events.length; i++) {
            if (events[i]?.seq !== i) expect.fail(`${where}: event ${i} has seq ${events[i]?.seq}`)
          }
          expect(events.length - 1, where).toBeGreaterThanOrEqual(synced.get(id) ?? -1)
          if (events.length > 0) expect(events[0]?.type, where).toBe('session.created')
          // Every line holds exactly the bytes appended for its seq: nothing glued, nothing cut. (Earlier
          // lines were checked in earlier rounds; the file is append-only.)
          for (const event of events.slice(verified.get(id))) {
            if (event.type === 'tool.output' && event.chunk !== payloadFor(event.seq)) {
              expect.fail(`${where}: seq ${event.seq} has the wrong content`)
            }
          }
          verified.set(id, events.length)
          // At most one lost (torn) line per kill that tore one.
          expect(warnings.length, `${where}: ${warnings.join(' | ')}`).toBeLessThanOrEqual(
            tornLines.get(id) ?? 0,
          )

          if (terminated && round % 3 === 1 && rand() < 0.5) {
            const line = JSON.stringify({
              type: 'tool.output',
              at: 1,
              seq: events.length,
              callId: 'c1',
              chunk: 'torn',
            })
            await appendFile(file, line.slice(0, 1 + Math.floor(rand() * (line.length - 2))))
            tornLines.set(id, (tornLines.get(id) ?? 0) + 1)
          }
        }
      }

      expect(kills).toBeGreaterThanOrEqual(100)
      expect(killsWhileWriting).toBeGreaterThanOrEqual(78)
      // The test only proves something if the children really wrote and synced between kills, and torn lines
      // were repaired.
      for (const id of SESSIONS) expect(synced.get(id), id).toBeGreaterThan(0)
      expect([...tornLines.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0)
    },
  )
})
