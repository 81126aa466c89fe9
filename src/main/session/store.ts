import { randomBytes } from 'node:crypto'
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { open, readdir, realpath } from 'node:fs/promises'
import { resolve } from 'node:path'
import { SessionId, type EventOf, type SessionEvent, type SessionSummary } from '../../shared/events'
import { TimeSlices } from '../fs/time-slices'
import {
  isSessionLocked,
  LF,
  LOCK_SUFFIX,
  LOG_SUFFIX,
  parseLine,
  scanLinesBackward,
  sessionPaths,
} from './log'

/**
 * The folder of sessions: ids, and the list the app and `lanes run --continue` choose from.
 */

/**
 * A new session id, `2026-11-30T19-40-12-123Z-a1b2c3`: the creation time in UTC (fixed width, so ids sort by
 * time as plain strings and read as dates in a file manager) and 24 random bits against two sessions created
 * in the same millisecond. Filename-safe on every OS.
 */
export function newSessionId(now: Date = new Date()): string {
  return `${now.toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`
}

/**
 * How much of each log the list reads: the head holds session.created and usually the first task; the tail
 * holds the last run event, unless one turn wrote more than this (then the run is taken as still going).
 * The head is read in growing windows from HEAD_FIRST_BYTES and the tail first as one TAIL_FIRST_BYTES window:
 * both nearly always suffice, and a thousand sessions then cost a few system calls each.
 */
const HEAD_FIRST_BYTES = 8 * 1024
const HEAD_BYTES = 64 * 1024
const TAIL_FIRST_BYTES = 16 * 1024
const TAIL_BYTES = 1024 * 1024

type RunEventType =
  'run.started' | 'run.resumed' | 'run.paused' | 'run.finished' | 'run.failed' | 'run.stopped'
const runEventTypes: ReadonlySet<string> = new Set<RunEventType>([
  'run.started',
  'run.resumed',
  'run.paused',
  'run.finished',
  'run.failed',
  'run.stopped',
])

/** What a log says of its session, before asking whether a live process holds it. */
interface LogSummary {
  summary: SessionSummary
  lastRun: SessionEvent | undefined
  firstTask: string | undefined
}

/**
 * Logs already summarized, by path, with the identity and size they had: a log only grows (and a rewrite
 * would be a new file), so an unchanged (inode, size, mtime) is an unchanged summary. The list is asked for
 * again after every change in the folder; only the logs that grew are read again.
 */
const summaryCache = new Map<string, { key: string; value: LogSummary | undefined }>()
const CACHE_LIMIT = 10_000

/** Forgets every summary read so far (the next list reads every log): for measuring a first listing. */
export function forgetSessionSummaries(): void {
  summaryCache.clear()
}

/**
 * The sessions in `sessionsDir`, newest first, optionally only those of `workspace`. Reads the head and the
 * tail of each log, never a whole one, so a thousand sessions list quickly: small reads by direct system
 * calls (a few microseconds each, where a thread-pool round trip costs tens), the event loop given back every
 * few milliseconds. A log without a readable session.created is left out. Never rejects for a missing folder
 * (empty list).
 */
export async function listSessions(sessionsDir: string, workspace?: string): Promise<SessionSummary[]> {
  let names: string[]
  try {
    names = await readdir(sessionsDir)
  } catch {
    return []
  }
  const nameSet = new Set(names)
  const ids = names
    .filter((name) => name.endsWith(LOG_SUFFIX))
    .map((name) => name.slice(0, -LOG_SUFFIX.length))
    .filter((id) => SessionId.safeParse(id).success)
  const wanted = workspace === undefined ? undefined : await canonical(workspace)
  const canonicalOf = new Map<string, string>()

  const summaries: SessionSummary[] = []
  const slices = new TimeSlices()
  for (const id of ids) {
    await slices.tick()
    const read = await summarizeLog(sessionsDir, id).catch(() => undefined)
    if (!read) continue
    const where = read.summary.workspace
    if (wanted !== undefined) {
      if (!canonicalOf.has(where)) canonicalOf.set(where, await canonical(where))
      if (canonicalOf.get(where) !== wanted) continue
    }
    // Only a session whose lock file exists can be held by a live run.
    const locked =
      nameSet.has(`${id}${LOCK_SUFFIX}`) && (await isSessionLocked(sessionsDir, id).catch(() => false))
    summaries.push(withStatus(read, locked))
  }
  return summaries.sort((a, b) => b.createdAt - a.createdAt || (a.sessionId < b.sessionId ? 1 : -1))
}

async function canonical(path: string): Promise<string> {
  const absolute = resolve(path)
  try {
    return await realpath(absolute)
  } catch {
    return absolute
  }
}

async function summarizeLog(sessionsDir: string, sessionId: string): Promise<LogSummary | undefined> {
  const { log } = sessionPaths(sessionsDir, sessionId)
  const fd = openSync(log, 'r')
  try {
    const stats = fstatSync(fd)
    const key = `${stats.ino}:${stats.size}:${stats.mtimeMs}`
    const cached = summaryCache.get(log)
    if (cached?.key === key) return cached.value
    const value = await readLogSummary(fd, log, sessionId, stats.size)
    if (summaryCache.size >= CACHE_LIMIT) summaryCache.clear()
    summaryCache.set(log, { key, value })
    return value
  } finally {
    closeSync(fd)
  }
}

async function readLogSummary(
  fd: number,
  log: string,
  sessionId: string,
  size: number,
): Promise<LogSummary | undefined> {
  let created: EventOf<'session.created'> | undefined
  let firstTask: string | undefined
  for (let window = Math.min(size, HEAD_FIRST_BYTES); ; window = Math.min(size, window * 2, HEAD_BYTES)) {
    const head = Buffer.alloc(window)
    const bytesRead = readSync(fd, head, 0, window, 0)
    const lines = head.toString('utf8', 0, bytesRead).split('\n')
    // The window usually ends inside a line: that piece is not a line.
    const whole = bytesRead >= size
    if (!whole) lines.pop()
    let found = false
    for (const line of lines) {
      const parsed = parseLine(line)
      if (!parsed.ok) continue
      if (parsed.event.type === 'session.created') created ??= parsed.event
      else if (parsed.event.type === 'run.started') {
        firstTask = parsed.event.task
        found = true
        break
      }
    }
    if (found || whole || window >= HEAD_BYTES) break
    created = undefined
  }
  if (!created) return undefined

  let last: SessionEvent | undefined
  let lastRun: SessionEvent | undefined
  const visit = (line: string): boolean => {
    const parsed = parseLine(line)
    if (!parsed.ok) return false
    last ??= parsed.event
    // A rewind of the conversation leaves the session waiting to be continued from an earlier turn.
    const rewound = parsed.event.type === 'rewind.finished' && parsed.event.conversationFromTurn !== undefined
    if (!rewound && !runEventTypes.has(parsed.event.type)) return false
    lastRun = parsed.event
    return true
  }
  // The last window at once; only a log whose last run event lies further back is scanned on, by the reader's
  // own backward scan, as far as TAIL_BYTES.
  const tail = Buffer.alloc(Math.min(size, TAIL_FIRST_BYTES))
  const start = size - tail.length
  readSync(fd, tail, 0, tail.length, start)
  let end = tail[tail.length - 1] === LF ? tail.length - 1 : tail.length
  let done = false
  for (;;) {
    const nl = end > 0 ? tail.lastIndexOf(LF, end - 1) : -1
    // A line is whole once the newline before it is in the window, or it starts the file.
    if (nl === -1 && start > 0) break
    if (visit(tail.toString('utf8', nl + 1, end))) {
      done = true
      break
    }
    if (nl === -1) {
      done = true
      break
    }
    end = nl
  }
  if (!done) {
    last = undefined
    lastRun = undefined
    const handle = await open(log, 'r')
    try {
      await scanLinesBackward(handle, size, visit, TAIL_BYTES)
    } finally {
      await handle.close()
    }
  }

  const title = created.title?.trim() || firstTask?.trim().split('\n')[0]?.slice(0, 200) || 'Untitled session'
  const summary: SessionSummary = {
    sessionId,
    workspace: created.workspace,
    title,
    task: firstTask,
    createdAt: created.at,
    updatedAt: (last as SessionEvent | undefined)?.at ?? created.at,
    status: 'finished',
    eventCount: ((last as SessionEvent | undefined)?.seq ?? created.seq) + 1,
  }
  return { summary, lastRun, firstTask }
}

function withStatus({ summary, lastRun, firstTask }: LogSummary, locked: boolean): SessionSummary {
  if (locked) {
    // Held by a live run: waiting for the user's review if that is where it stopped, else working.
    return { ...summary, status: lastRun?.type === 'run.paused' ? 'paused' : 'running' }
  }
  switch (lastRun?.type) {
    case 'run.finished':
      return summary
    case 'run.failed':
      return { ...summary, status: 'failed' }
    case 'run.paused':
      return { ...summary, status: 'paused' }
    case 'rewind.finished':
      return { ...summary, status: 'paused', rewound: true }
    case 'run.stopped':
      return { ...summary, status: 'paused', stopped: true }
    case 'run.started':
    case 'run.resumed':
      // The run neither ended nor paused and nobody has it open: the app died during it.
      return { ...summary, status: 'paused', interrupted: true }
    default:
      // No run event in the tail: a long run still going when the app died, or a session with no run yet.
      return firstTask === undefined ? summary : { ...summary, status: 'paused', interrupted: true }
  }
}
