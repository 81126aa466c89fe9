import { randomBytes } from 'node:crypto'
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs'
import { open, readdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import {
  RUN_EVENT_TYPES,
  SessionId,
  SessionSummary,
  type EventOf,
  type SessionEvent,
} from '../../shared/events'
import { TimeSlices } from '../fs/time-slices'
import { isSessionLocked, LF, LOCK_SUFFIX, LOG_SUFFIX, parseLine, scanLinesBackward } from './log'

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

const runEventTypes: ReadonlySet<string> = new Set(RUN_EVENT_TYPES)

/** What a log says of its session, before asking whether a live process holds it. */
const LogSummary = z.object({
  summary: SessionSummary,
  /** The type of the last run event (or of a rewind that took the conversation back), if the tail had one. */
  lastRun: z.string().optional(),
  firstTask: z.string().optional(),
})
type LogSummary = z.infer<typeof LogSummary>

/** A log's summary with the identity and size it had: `value` undefined for a log that is not a session's. */
interface Summarized {
  key: string
  value: LogSummary | undefined
}

/**
 * Logs already summarized, by path, with the identity and size they had: a log only grows (and a rewrite
 * would be a new file), so an unchanged (inode, size, mtime) is an unchanged summary. The list is asked for
 * again after every change in the folder; only the logs that grew are read again.
 */
const summaryCache = new Map<string, Summarized>()
const CACHE_LIMIT = 10_000

/**
 * The same summaries kept on disk, in the sessions folder, so that the app's first listing after a start reads a
 * file per folder instead of two windows of every log. It is a cache and nothing more: an entry counts only while
 * its log still has the identity, size and mtime it was made from, so a log that grew or was replaced since
 * (a run that went on without the app, a crash before the index was written) is read again and the index
 * rewritten; an index that is damaged, or of another version, is ignored as a whole.
 */
export const SESSION_INDEX_FILE = 'sessions-index.json'
const SessionIndex = z.object({
  version: z.literal(1),
  logs: z.record(z.string(), z.object({ key: z.string(), value: LogSummary.nullable() })),
})

/** Forgets every summary read so far (the next list reads every log): for measuring a first listing. */
export function forgetSessionSummaries(): void {
  summaryCache.clear()
}

async function readIndex(sessionsDir: string): Promise<Map<string, Summarized>> {
  const found = new Map<string, Summarized>()
  let text: string
  try {
    text = await readFile(join(sessionsDir, SESSION_INDEX_FILE), 'utf8')
  } catch {
    return found
  }
  try {
    const parsed = SessionIndex.safeParse(JSON.parse(text))
    if (!parsed.success) return found
    for (const [id, entry] of Object.entries(parsed.data.logs)) {
      // An entry holds what the log it names says of itself, or it is not used.
      if (entry.value !== null && entry.value.summary.sessionId !== id) continue
      found.set(id, { key: entry.key, value: entry.value ?? undefined })
    }
  } catch {
    // Not JSON (a torn write): every log is read again, and the index written anew.
  }
  return found
}

/** Replaces the index in one rename: a reader sees the old one or the new one, never part of either. */
async function writeIndex(sessionsDir: string, entries: Map<string, Summarized>): Promise<void> {
  const logs: Record<string, { key: string; value: LogSummary | null }> = {}
  for (const [id, { key, value }] of entries) logs[id] = { key, value: value ?? null }
  const target = join(sessionsDir, SESSION_INDEX_FILE)
  const temp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await writeFile(temp, JSON.stringify({ version: 1, logs }))
    await rename(temp, target)
  } catch {
    // A read-only or vanished folder: the list is right without the index, the next one reads the logs again.
    await rm(temp, { force: true }).catch(() => undefined)
  }
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
  const index = await readIndex(sessionsDir)
  const fresh = new Map<string, Summarized>()
  let changed = false
  for (const id of ids) {
    await slices.tick()
    const entry = await summarizeLog(sessionsDir, id, index.get(id)).catch(() => undefined)
    if (!entry) continue
    fresh.set(id, entry)
    if (index.get(id)?.key !== entry.key) changed = true
    const read = entry.value
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
  // Written again when a log was read (new, grown, replaced) or one the index names is gone.
  if (changed || [...index.keys()].some((id) => !fresh.has(id))) await writeIndex(sessionsDir, fresh)
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

const keyOf = (stats: { ino: number; size: number; mtimeMs: number }): string =>
  `${stats.ino}:${stats.size}:${stats.mtimeMs}`

/** The log's summary: from memory or the index while the log is unchanged, else read from the log. */
async function summarizeLog(
  sessionsDir: string,
  sessionId: string,
  indexed: Summarized | undefined,
): Promise<Summarized> {
  // The id was checked when the folder was listed (sessionPaths would check it once more per log).
  const log = join(sessionsDir, `${sessionId}${LOG_SUFFIX}`)
  const seen = keyOf(statSync(log))
  const known = summaryCache.get(log) ?? indexed
  if (known?.key === seen) {
    summaryCache.set(log, known)
    return known
  }
  const fd = openSync(log, 'r')
  try {
    // The identity of what is read, should the log have changed since the look above.
    const stats = fstatSync(fd)
    const entry = { key: keyOf(stats), value: await readLogSummary(fd, log, sessionId, stats.size) }
    if (summaryCache.size >= CACHE_LIMIT) summaryCache.clear()
    summaryCache.set(log, entry)
    return entry
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
  return { summary, lastRun: (lastRun as SessionEvent | undefined)?.type, firstTask }
}

function withStatus({ summary, lastRun, firstTask }: LogSummary, locked: boolean): SessionSummary {
  if (locked) {
    // Held by a live run: waiting for the user's review if that is where it stopped, else working.
    return { ...summary, status: lastRun === 'run.paused' ? 'paused' : 'running' }
  }
  switch (lastRun) {
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
