import { randomBytes } from 'node:crypto'
import { open, readdir, realpath } from 'node:fs/promises'
import { resolve } from 'node:path'
import { SessionId, type EventOf, type SessionEvent, type SessionSummary } from '../../shared/events'
import { isSessionLocked, LOG_SUFFIX, parseLine, scanLinesBackward, sessionPaths } from './log'

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
 */
const HEAD_BYTES = 64 * 1024
const TAIL_BYTES = 1024 * 1024
const CONCURRENCY = 16

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

/**
 * The sessions in `sessionsDir`, newest first, optionally only those of `workspace`. Reads the head and the
 * tail of each log, never a whole one, so hundreds of sessions list quickly. A log without a readable
 * session.created is left out. Never rejects for a missing folder (empty list).
 */
export async function listSessions(sessionsDir: string, workspace?: string): Promise<SessionSummary[]> {
  let names: string[]
  try {
    names = await readdir(sessionsDir)
  } catch {
    return []
  }
  const ids = names
    .filter((name) => name.endsWith(LOG_SUFFIX))
    .map((name) => name.slice(0, -LOG_SUFFIX.length))
    .filter((id) => SessionId.safeParse(id).success)
  const wanted = workspace === undefined ? undefined : await canonical(workspace)

  const summaries: SessionSummary[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next++] as string
      const summary = await summarize(sessionsDir, id).catch(() => undefined)
      if (summary && (wanted === undefined || (await canonical(summary.workspace)) === wanted))
        summaries.push(summary)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ids.length) }, worker))
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

async function summarize(sessionsDir: string, sessionId: string): Promise<SessionSummary | undefined> {
  const { log } = sessionPaths(sessionsDir, sessionId)
  const handle = await open(log, 'r')
  let created: EventOf<'session.created'> | undefined
  let firstTask: string | undefined
  let last: SessionEvent | undefined
  let lastRun: SessionEvent | undefined
  let size: number
  try {
    size = (await handle.stat()).size
    const head = Buffer.alloc(Math.min(size, HEAD_BYTES))
    const { bytesRead } = await handle.read(head, 0, head.length, 0)
    const lines = head.toString('utf8', 0, bytesRead).split('\n')
    // The window usually ends inside a line: that piece is not a line.
    if (bytesRead < size) lines.pop()
    for (const line of lines) {
      const parsed = parseLine(line)
      if (!parsed.ok) continue
      if (parsed.event.type === 'session.created') created ??= parsed.event
      else if (parsed.event.type === 'run.started') {
        firstTask = parsed.event.task
        break
      }
    }
    if (!created) return undefined

    await scanLinesBackward(
      handle,
      size,
      (line) => {
        const parsed = parseLine(line)
        if (!parsed.ok) return false
        last ??= parsed.event
        // A rewind of the conversation leaves the session waiting to be continued from an earlier turn.
        const rewound =
          parsed.event.type === 'rewind.finished' && parsed.event.conversationFromTurn !== undefined
        if (!rewound && !runEventTypes.has(parsed.event.type)) return false
        lastRun = parsed.event
        return true
      },
      TAIL_BYTES,
    )
  } finally {
    await handle.close()
  }

  const title = created.title?.trim() || firstTask?.trim().split('\n')[0]?.slice(0, 200) || 'Untitled session'
  const summary: SessionSummary = {
    sessionId,
    workspace: created.workspace,
    title,
    task: firstTask,
    createdAt: created.at,
    updatedAt: last?.at ?? created.at,
    status: 'finished',
    eventCount: (last?.seq ?? created.seq) + 1,
  }
  if (await isSessionLocked(sessionsDir, sessionId)) {
    // Held by a live run: waiting for the user's review if that is where it stopped, else working.
    return {
      ...summary,
      status: (lastRun as SessionEvent | undefined)?.type === 'run.paused' ? 'paused' : 'running',
    }
  }
  switch ((lastRun as SessionEvent | undefined)?.type) {
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
