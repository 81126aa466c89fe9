import { createReadStream, readSync } from 'node:fs'
import { open } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { describeIssues } from '../../shared/ipc'
import { RUN_EVENT_TYPES, SessionEvent } from '../../shared/events'
import { BLOCKING_MAX_BYTES } from '../fs/quick-read'
import { SessionLogError } from './log-paths'

/** Reading a session log: whole (replay, continue) or from its end backwards (reopen, the session list). */

export interface SessionRead {
  events: SessionEvent[]
  /** One per skipped line, naming its number ("line 12: ..."). */
  warnings: string[]
}

export type ParsedLine = { ok: true; event: SessionEvent } | { ok: false; problem: string }

/** One line of the log to an event, or why not. Never throws. */
export function parseLine(line: string): ParsedLine {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch (e) {
    return { ok: false, problem: `not valid JSON (${(e as Error).message.slice(0, 120)})` }
  }
  const parsed = SessionEvent.safeParse(value)
  if (parsed.success) return { ok: true, event: parsed.data }
  const type =
    typeof (value as { type?: unknown })?.type === 'string' ? (value as { type: string }).type : 'unknown'
  return { ok: false, problem: `not a valid ${type} event (${describeIssues(parsed.error).slice(0, 200)})` }
}

export const LF = 0x0a
const READ_CHUNK = 1024 * 1024

/**
 * Reads a whole session log, streaming (one chunk and one line in flight besides the events themselves).
 * A torn or corrupt line is skipped with a warning naming its line number; every line after it is still read.
 * Rejects only when the file cannot be read at all (`not-found`, `io`).
 */
export async function readSession(file: string): Promise<SessionRead> {
  const events: SessionEvent[] = []
  const warnings: string[] = []
  let lineNo = 0
  let lastSeq = -1

  const take = (text: string, terminated: boolean): void => {
    lineNo++
    if (lineNo === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    if (text.trim() === '') return
    const parsed = parseLine(text)
    if (!parsed.ok) {
      warnings.push(
        terminated
          ? `line ${lineNo}: ${parsed.problem}; skipped`
          : `line ${lineNo}: incomplete last line (the app stopped while writing it); skipped`,
      )
      return
    }
    if (parsed.event.seq <= lastSeq)
      warnings.push(`line ${lineNo}: seq ${parsed.event.seq} follows seq ${lastSeq}`)
    lastSeq = Math.max(lastSeq, parsed.event.seq)
    events.push(parsed.event)
  }

  let partial: Buffer[] = []
  try {
    for await (const chunk of createReadStream(file, { highWaterMark: READ_CHUNK })) {
      const buf = chunk as Buffer
      let start = 0
      let nl = buf.indexOf(LF, start)
      while (nl !== -1) {
        if (partial.length > 0) {
          partial.push(buf.subarray(start, nl))
          take(Buffer.concat(partial).toString('utf8'), true)
          partial = []
        } else {
          take(buf.toString('utf8', start, nl), true)
        }
        start = nl + 1
        nl = buf.indexOf(LF, start)
      }
      if (start < buf.length) partial.push(buf.subarray(start))
    }
  } catch (e) {
    throw fileError(e, file)
  }
  if (partial.length > 0) take(Buffer.concat(partial).toString('utf8'), false)
  return { events, warnings }
}

/** Runs `read` on the open log and its size; the file is closed after, and a failure is a SessionLogError. */
async function withLogFile<T>(
  file: string,
  read: (handle: FileHandle, size: number) => Promise<T>,
): Promise<T> {
  let handle: FileHandle | undefined
  try {
    handle = await open(file, 'r')
    return await read(handle, (await handle.stat()).size)
  } catch (e) {
    throw fileError(e, file)
  } finally {
    await handle?.close().catch(() => undefined)
  }
}

function fileError(e: unknown, file: string): SessionLogError {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'ENOENT')
    return new SessionLogError('not-found', `The session log ${file} does not exist.`, { cause: e })
  return new SessionLogError('io', `Cannot read the session log ${file}: ${(e as Error).message}`, {
    cause: e,
  })
}

/**
 * Fills `buffer` from `position` as far as the file goes; returns the bytes read. A chunk of a log's tail (64 KiB)
 * is one direct system call, microseconds, where a trip through the thread pool costs tens of them, more under
 * load (quick-read.ts); a larger one (a multi-megabyte line) goes through the pool.
 */
async function readAt(handle: FileHandle, buffer: Buffer, position: number): Promise<number> {
  if (buffer.length > BLOCKING_MAX_BYTES)
    return (await handle.read(buffer, 0, buffer.length, position)).bytesRead
  let filled = 0
  while (filled < buffer.length) {
    const n = readSync(handle.fd, buffer, filled, buffer.length - filled, position + filled)
    if (n === 0) break
    filled += n
  }
  return filled
}

/**
 * Visits the file's lines from the last one back until `visit` returns true, the first line was visited, or
 * `maxBytes` were read. The last line is passed with `terminated: false` when the file does not end with a
 * newline. Lets a reopening writer and the session list read the tail of a 100 MB log without reading the
 * log.
 */
export async function scanLinesBackward(
  handle: FileHandle,
  size: number,
  visit: (line: string, terminated: boolean) => boolean,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<void> {
  if (size === 0) return
  let end = size
  let pending: Buffer = Buffer.alloc(0)
  let read = 0
  let lastTerminated: boolean | undefined
  let isLastLine = true
  for (;;) {
    if (end > 0) {
      if (read >= maxBytes) return
      // Grows with the pending line, so a single multi-megabyte line costs O(size), not O(size^2).
      const start = Math.max(0, end - Math.max(64 * 1024, pending.length))
      const chunk = Buffer.allocUnsafe(end - start)
      const bytesRead = await readAt(handle, chunk, start)
      if (bytesRead < chunk.length) return // the file shrank under us: nothing sensible to report
      read += bytesRead
      pending = pending.length > 0 ? Buffer.concat([chunk, pending]) : chunk
      end = start
      if (lastTerminated === undefined) {
        lastTerminated = pending[pending.length - 1] === LF
        if (lastTerminated) pending = pending.subarray(0, pending.length - 1)
      }
    }
    let lineEnd = pending.length
    for (;;) {
      const nl = lineEnd > 0 ? pending.lastIndexOf(LF, lineEnd - 1) : -1
      // A line is complete once the newline before it is loaded, or it starts the file.
      if (nl === -1 && end > 0) break
      if (visit(pending.toString('utf8', nl + 1, lineEnd), isLastLine ? lastTerminated === true : true))
        return
      isLastLine = false
      if (nl === -1) return
      lineEnd = nl
    }
    pending = pending.subarray(0, lineEnd)
  }
}

/**
 * The session's first event and its events from the LAST one `from` accepts to the end, read from the end
 * backwards: a rewind to a recent call reads the log's tail, not the whole of a 100 MB log. Without a match
 * it is the whole log (`whole: true`). Lines that cannot be read are skipped with a warning, as readSession does.
 */
export async function readSessionTail(
  file: string,
  from: (event: SessionEvent) => boolean,
  opts: {
    /**
     * Only events of these types are wanted (and `from` sees only those): a line written as another type is
     * passed over without being parsed or checked, which is most of the cost of reading a log.
     */
    only?: ReadonlySet<SessionEvent['type']>
    /**
     * Of the tool.queued lines, only this call's is wanted (a rewind needs the one it goes back to): the others,
     * plainly written for another call, are passed over unparsed too.
     */
    queuedCall?: string
  } = {},
): Promise<SessionRead & { whole: boolean }> {
  const queued = opts.queuedCall === undefined ? undefined : JSON.stringify(opts.queuedCall)
  return withLogFile(file, async (handle, size) => {
    const tail: SessionEvent[] = []
    const warnings: string[] = []
    let found = false
    await scanLinesBackward(handle, size, (line, terminated) => {
      if (line.trim() === '') return false
      if (opts.only && !mayBeOf(line, opts.only)) return false
      if (queued !== undefined && queuedFor(line, queued) === false) return false
      const parsed = parseLine(line.charCodeAt(0) === 0xfeff ? line.slice(1) : line)
      if (!parsed.ok) {
        warnings.push(
          terminated
            ? `a line near the end: ${parsed.problem}; skipped`
            : 'incomplete last line (the app stopped while writing it); skipped',
        )
        return false
      }
      tail.push(parsed.event)
      found = from(parsed.event)
      return found
    })
    tail.reverse()
    if (found && tail[0]?.type !== 'session.created') {
      // The first event (session.created: the workspace, the settings) comes from the head.
      const first = await firstLine(handle, size)
      const parsed = first === undefined ? undefined : parseLine(first)
      if (parsed?.ok && parsed.event.seq < (tail[0]?.seq ?? 0)) tail.unshift(parsed.event)
    }
    return { events: tail, warnings: warnings.reverse(), whole: !found }
  })
}

/**
 * Whether a line can hold an event of one of `types`: false only when it is plainly written as another type
 * (the writer puts `type` first); a line written any other way is parsed to find out.
 */
function mayBeOf(line: string, types: ReadonlySet<string>): boolean {
  const written = WRITTEN_TYPE.exec(line)
  return written === null || types.has(written[1] as string)
}
const WRITTEN_TYPE = /^\{"type":"([a-z._-]+)",/
/** A tool.queued line's callId as the writer puts it (after type, at and seq), in its JSON form. */
const WRITTEN_QUEUED = /^\{"type":"tool\.queued","at":\d+,"seq":\d+,"callId":("(?:[^"\\]|\\.)*")/

/**
 * Whether a line is the tool.queued of the call `callId` (in its JSON form): false only when it is plainly
 * written as another call's; undefined for any other line (parsed to find out).
 */
function queuedFor(line: string, callId: string): boolean | undefined {
  const written = WRITTEN_QUEUED.exec(line)?.[1]
  // An escape in it may spell the same id another way: parsed to find out.
  return written === undefined || written.includes('\\') ? undefined : written === callId
}
/** The run a run event names, as the writer puts it (a line written otherwise is parsed to find out). */
const WRITTEN_RUN = /^\{"type":"run\.[a-z]+","runId":"([^"\\]*)"/

async function firstLine(handle: FileHandle, size: number): Promise<string | undefined> {
  let length = Math.min(size, 64 * 1024)
  for (;;) {
    const buf = Buffer.alloc(length)
    const bytesRead = await readAt(handle, buf, 0)
    const nl = buf.subarray(0, bytesRead).indexOf(LF)
    const bom = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0
    if (nl >= 0) return buf.toString('utf8', bom, nl)
    if (bytesRead < length || length >= size) return undefined
    length = Math.min(size, length * 4)
  }
}

/**
 * The events a session's state takes from before its last turns: the session, its runs, the instructions, MCP
 * servers, compactions, rewinds and the session's allow rules. Everything else (a turn's text, calls, output) belongs to its turn.
 */
const SESSION_LEVEL: ReadonlySet<SessionEvent['type']> = new Set<SessionEvent['type']>([
  'session.created',
  ...RUN_EVENT_TYPES,
  'instructions.loaded',
  'mcp.server',
  'context.compacted',
  'rewind.started',
  'rewind.finished',
  'rule.granted',
  'rule.revoked',
])

/**
 * A preview of a long log, for painting a session before the whole of it is read: its last turns whole (the
 * events from the last `turn.started` at least `tailEvents` from the end) and, from before them, only the
 * session-level events, in log order. Read from the end backwards; a line before the last turns is parsed only
 * when it is written as a session-level event, so a 100,000-event log costs a read of the file and a few
 * thousand parsed lines. `whole`: the log had no more than that, and `events` is all of it.
 *
 * A preview is not the session's state: the earlier turns are missing (and with them counts, usage, the turns a
 * rewind struck). It is shown until the whole log is read, never replayed or continued from.
 */
export async function readSessionPreview(
  file: string,
  tailEvents: number,
): Promise<SessionRead & { whole: boolean }> {
  return withLogFile(file, async (handle, size) => {
    const tail: SessionEvent[] = []
    const earlier: SessionEvent[] = []
    const warnings: string[] = []
    let cut = false
    // A line before the cut that the preview leaves out: then it is not the whole log.
    let leftOut = false
    // Runs whose latest event before the cut was kept: of a run's events there, only that one and its start
    // matter to the preview (a run paused and resumed a hundred times for reviews is just running).
    const runsSeen = new Set<string>()
    await scanLinesBackward(handle, size, (line, terminated) => {
      if (line.trim() === '') return false
      if (cut && !mayBeOf(line, SESSION_LEVEL)) {
        leftOut = true
        return false
      }
      if (cut && WRITTEN_TYPE.exec(line)?.[1] !== 'run.started') {
        const run = WRITTEN_RUN.exec(line)?.[1]
        if (run !== undefined && runsSeen.has(run)) {
          leftOut = true
          return false
        }
      }
      const parsed = parseLine(line.charCodeAt(0) === 0xfeff ? line.slice(1) : line)
      if (!parsed.ok) {
        warnings.push(
          terminated
            ? `a line ${cut ? 'before the last turns' : 'near the end'}: ${parsed.problem}; skipped`
            : 'incomplete last line (the app stopped while writing it); skipped',
        )
        return false
      }
      if (!cut) {
        tail.push(parsed.event)
        cut = tail.length >= tailEvents && parsed.event.type === 'turn.started'
      } else if (SESSION_LEVEL.has(parsed.event.type)) {
        earlier.push(parsed.event)
        if (parsed.event.type.startsWith('run.')) runsSeen.add((parsed.event as { runId: string }).runId)
      } else leftOut = true
      return false
    })
    const events = earlier.reverse().concat(tail.reverse())
    return { events, warnings: warnings.reverse(), whole: !leftOut }
  })
}
