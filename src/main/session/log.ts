import {
  createReadStream,
  constants as fsConstants,
  ftruncateSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { link, mkdir, open, readFile, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises'
import { hostname, uptime } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { describeIssues } from '../../shared/ipc'
import { SessionEvent, SessionId, type EventOf, type SessionEventDraft } from '../../shared/events'

/**
 * The session log (DESIGN 6): `<sessionsDir>/<id>.jsonl`, one event per line, append-only, plus
 * `<sessionsDir>/<id>/` for full command outputs and `<sessionsDir>/<id>.lock` while a writer has it open.
 *
 * Durability model: `append` hands the line to the OS (it survives the app being killed); `sync` makes
 * everything appended so far survive a power loss, and the engine calls it once per turn and at pauses and
 * ends. A crash can therefore cost at most the line being written, which the reader skips with a warning and
 * the next writer terminates, so no later line is ever glued to it.
 */

export type SessionLogErrorCode =
  'invalid-id' | 'not-found' | 'exists' | 'locked' | 'invalid-event' | 'closed' | 'io'

/** Every failure of this module: a code to branch on and a message a user can read. */
export class SessionLogError extends Error {
  constructor(
    readonly code: SessionLogErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'SessionLogError'
  }
}

export interface SessionPaths {
  log: string
  lock: string
  outputDir: string
}

/** A session's log is `<id>.jsonl`: the session list finds sessions by it. */
export const LOG_SUFFIX = '.jsonl'

/** Throws `invalid-id` for an id that could escape the folder or is not filename-safe. */
export function sessionPaths(sessionsDir: string, sessionId: string): SessionPaths {
  const parsed = SessionId.safeParse(sessionId)
  if (!parsed.success) {
    throw new SessionLogError('invalid-id', `"${String(sessionId).slice(0, 80)}" is not a valid session id.`)
  }
  return {
    log: join(sessionsDir, `${sessionId}${LOG_SUFFIX}`),
    lock: join(sessionsDir, `${sessionId}.lock`),
    outputDir: join(sessionsDir, sessionId),
  }
}

// -----------------------------------------------------------------------------------------------------------
// The lock: one writer per session, across windows and processes.

interface LockOwner {
  pid: number
  hostname: string
  /** Linux's boot id: a lock from before a reboot is stale even if its pid was reused since. */
  bootId?: string
  /** When the machine booted (to the second), for the same purpose where there is no boot id. */
  bootAt: number
  lockedAt: number
  token: string
}

/**
 * Locks this process holds (or is acquiring), by lock path: the lock file alone cannot tell two writers of
 * one process apart, since they share a pid.
 */
const heldLocks = new Map<string, string>()
let exitHookInstalled = false

let linuxBootId: string | null | undefined

function thisBoot(): { bootId?: string; bootAt: number } {
  if (linuxBootId === undefined) {
    try {
      linuxBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null
    } catch {
      linuxBootId = null
    }
  }
  const bootAt = Math.round((Date.now() - uptime() * 1000) / 1000) * 1000
  return linuxBootId ? { bootId: linuxBootId, bootAt } : { bootAt }
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(text) as Partial<LockOwner>
    if (typeof owner.pid === 'number' && Number.isInteger(owner.pid) && owner.pid > 0)
      return owner as LockOwner
  } catch {
    // fall through: not a lock we wrote
  }
  return undefined
}

/**
 * Whether the lock's owner still runs. `ownedHere` answers for this process's own pid, which the OS cannot:
 * a container restarts the app with the same pid, and the old lock must then count as stale.
 */
function ownerAlive(owner: LockOwner, ownedHere: boolean): boolean {
  // Another machine sharing the folder: we cannot check, so respect it.
  if (owner.hostname !== hostname()) return true
  const boot = thisBoot()
  if (owner.bootId && boot.bootId) {
    if (owner.bootId !== boot.bootId) return false
  } else if (typeof owner.bootAt === 'number' && Math.abs(owner.bootAt - boot.bootAt) > 10 * 60_000) {
    // The boot time moves with the wall clock; the wide margin keeps a clock change from freeing a live lock.
    return false
  }
  if (owner.pid === process.pid) return ownedHere
  try {
    process.kill(owner.pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

type LockState = { kind: 'free' } | { kind: 'live'; owner?: LockOwner } | { kind: 'stale' }

async function inspectLock(lockPath: string, ownedHere: boolean): Promise<LockState> {
  let text: string
  try {
    text = await readFile(lockPath, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'free' }
    throw e
  }
  const owner = parseOwner(text)
  if (owner) return ownerAlive(owner, ownedHere) ? { kind: 'live', owner } : { kind: 'stale' }
  // Not ours or damaged. Locks are created complete (written, then linked into place), so only a file that is
  // also recent could belong to a writer starting right now.
  try {
    const info = await stat(lockPath)
    return Date.now() - info.mtimeMs < 5_000 ? { kind: 'live' } : { kind: 'stale' }
  } catch {
    return { kind: 'free' }
  }
}

/** True when a live writer (this process included) has the session open. */
export async function isSessionLocked(sessionsDir: string, sessionId: string): Promise<boolean> {
  const { lock } = sessionPaths(sessionsDir, sessionId)
  try {
    return (await inspectLock(lock, heldLocks.has(lock))).kind === 'live'
  } catch {
    return false
  }
}

function lockedError(owner: LockOwner | undefined, lockPath: string): SessionLogError {
  if (owner?.pid === process.pid && owner.hostname === hostname()) {
    return new SessionLogError('locked', 'This session is already open in another window of this app.')
  }
  const who = owner
    ? ` (process ${owner.pid}${owner.hostname !== hostname() ? ` on ${owner.hostname}` : ''})`
    : ''
  return new SessionLogError(
    'locked',
    `This session is open in another window/process${who}. Close it there first; if nothing has it open, ` +
      `delete ${lockPath}.`,
  )
}

/**
 * Creates the lock file complete in one step: written under a temporary name, then hard-linked into place,
 * which fails atomically when the lock exists. A crash can never leave an empty lock behind.
 */
async function createLockFile(lockPath: string, content: string): Promise<boolean> {
  const temp = `${lockPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  await writeFile(temp, content, { mode: 0o600 })
  try {
    await link(temp, lockPath)
    return true
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return false
    // File systems without hard links (exFAT, some network mounts): exclusive create instead.
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
      try {
        await writeFile(lockPath, content, { flag: 'wx', mode: 0o600 })
        return true
      } catch (e2) {
        if ((e2 as NodeJS.ErrnoException).code === 'EEXIST') return false
        throw e2
      }
    }
    throw e
  } finally {
    await unlink(temp).catch(() => undefined)
  }
}

async function acquireLock(lockPath: string): Promise<string> {
  if (heldLocks.has(lockPath)) {
    throw lockedError({ pid: process.pid, hostname: hostname(), bootAt: 0, lockedAt: 0, token: '' }, lockPath)
  }
  const token = randomBytes(8).toString('hex')
  // Reserved before the first await, so two opens from this process cannot both pass the check.
  heldLocks.set(lockPath, token)
  try {
    const owner: LockOwner = {
      pid: process.pid,
      hostname: hostname(),
      ...thisBoot(),
      lockedAt: Date.now(),
      token,
    }
    const content = `${JSON.stringify(owner)}\n`
    for (let attempt = 0; attempt < 5; attempt++) {
      if (await createLockFile(lockPath, content)) {
        installExitHook()
        return token
      }
      const state = await inspectLock(lockPath, false)
      if (state.kind === 'live') throw lockedError(state.owner, lockPath)
      // Stale (its process is gone): take it over. Another process racing for the same stale lock loses at
      // link() on the next round.
      if (state.kind === 'stale') await unlink(lockPath).catch(() => undefined)
    }
    throw lockedError(undefined, lockPath)
  } catch (e) {
    heldLocks.delete(lockPath)
    throw e
  }
}

async function releaseLock(lockPath: string, token: string): Promise<void> {
  if (heldLocks.get(lockPath) !== token) return
  heldLocks.delete(lockPath)
  try {
    // Only our own lock: never delete one another writer took over.
    if (parseOwner(await readFile(lockPath, 'utf8'))?.token === token) await unlink(lockPath)
  } catch {
    // Already gone: nothing to release.
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // A normal exit without close() (window closed, process.exit) should not leave locks to be judged stale
  // later.
  process.once('exit', () => {
    for (const [lockPath, token] of heldLocks) {
      try {
        // Only a lock this process created: one still being acquired may belong to another process.
        if (parseOwner(readFileSync(lockPath, 'utf8'))?.token === token) unlinkSync(lockPath)
      } catch {
        // best effort at exit
      }
    }
  })
}

// -----------------------------------------------------------------------------------------------------------
// Reading.

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

const LF = 0x0a
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

function fileError(e: unknown, file: string): SessionLogError {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'ENOENT')
    return new SessionLogError('not-found', `The session log ${file} does not exist.`, { cause: e })
  return new SessionLogError('io', `Cannot read the session log ${file}: ${(e as Error).message}`, {
    cause: e,
  })
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
      const chunk = Buffer.alloc(end - start)
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, start)
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

// -----------------------------------------------------------------------------------------------------------
// Writing.

export interface SessionWriter {
  readonly sessionId: string
  /** The `.jsonl` file. */
  readonly file: string
  /** Where tools save full outputs (bash logs); exists once the writer is open. */
  readonly outputDir: string
  /** The seq the next append will get. */
  readonly nextSeq: number
  /**
   * Assigns `seq` (and `at` unless given: the writer's clock, never going backwards), validates, and writes
   * the line. Resolves with the full event once the OS has it; rejects (and writes nothing) for an event that
   * does not match the schema (a programming error), after close, or when the write failed (disk full): a
   * failed write is rolled back, so the file and `nextSeq` stay consistent and later appends go on from
   * there.
   */
  append<D extends SessionEventDraft>(draft: D): Promise<EventOf<D['type']>>
  /** Makes every line appended so far durable (fsync). */
  sync(): Promise<void>
  /** Writes what is pending, syncs, and releases the lock. Idempotent. */
  close(): Promise<void>
}

export interface OpenSessionWriterOptions {
  /**
   * true: a new session (fails with `exists` if its log exists). false: reopen an existing one (`not-found`).
   */
  create: boolean
}

/**
 * Opens the one writer of a session. Rejects with a `SessionLogError`: `invalid-id`, `exists`, `not-found`,
 * `locked` (another window or process has it open: "session is open in another window/process"), or `io`.
 * A lock left by a process that is gone is taken over. Reopening continues `seq` after the last valid event
 * and first terminates a torn last line.
 */
export async function openSessionWriter(
  sessionsDir: string,
  sessionId: string,
  opts: OpenSessionWriterOptions,
): Promise<SessionWriter> {
  const paths = sessionPaths(sessionsDir, sessionId)
  if (opts.create) {
    try {
      await mkdir(sessionsDir, { recursive: true })
    } catch (e) {
      throw new SessionLogError(
        'io',
        `Cannot create the sessions folder ${sessionsDir}: ${(e as Error).message}`,
        {
          cause: e,
        },
      )
    }
  }
  let token: string
  try {
    token = await acquireLock(paths.lock)
  } catch (e) {
    if (e instanceof SessionLogError) throw e
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT')
      throw new SessionLogError('not-found', `No session ${sessionId} in ${sessionsDir}.`)
    throw new SessionLogError('io', `Cannot lock session ${sessionId}: ${(e as Error).message}`, { cause: e })
  }
  let handle: FileHandle | undefined
  try {
    const { O_WRONLY, O_APPEND, O_CREAT, O_EXCL } = fsConstants
    let nextSeq = 0
    let lastAt = 0
    let size = 0
    if (opts.create) {
      handle = await open(paths.log, O_WRONLY | O_APPEND | O_CREAT | O_EXCL, 0o600).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new SessionLogError('exists', `Session ${sessionId} already exists.`)
        }
        throw e
      })
      await syncDirectory(sessionsDir)
    } else {
      handle = await open(paths.log, O_WRONLY | O_APPEND).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
          throw new SessionLogError('not-found', `No session ${sessionId} in ${sessionsDir}.`)
        }
        throw e
      })
      const reader = await open(paths.log, 'r')
      try {
        size = (await reader.stat()).size
        let endsWithNewline = true
        if (size > 0) {
          const last = Buffer.alloc(1)
          await reader.read(last, 0, 1, size - 1)
          endsWithNewline = last[0] === LF
        }
        await scanLinesBackward(reader, size, (line) => {
          const parsed = parseLine(line)
          if (!parsed.ok) return false
          nextSeq = parsed.event.seq + 1
          lastAt = parsed.event.at
          return true
        })
        if (!endsWithNewline) {
          // A crash tore the last line; end it so the next event starts on a line of its own.
          await writeAll(handle, Buffer.from('\n'))
          size += 1
        }
      } finally {
        await reader.close()
      }
    }
    await mkdir(paths.outputDir, { recursive: true })
    return new FileSessionWriter(sessionId, paths, token, handle, size, nextSeq, lastAt)
  } catch (e) {
    await handle?.close().catch(() => undefined)
    await releaseLock(paths.lock, token)
    if (e instanceof SessionLogError) throw e
    throw new SessionLogError('io', `Cannot open session ${sessionId}: ${(e as Error).message}`, { cause: e })
  }
}

async function syncDirectory(dir: string): Promise<void> {
  // The new file's directory entry must be durable too, or a power loss can lose the whole log. Not possible
  // on every platform (Windows), where the file system journals it anyway.
  let handle: FileHandle | undefined
  try {
    handle = await open(dir, 'r')
    await handle.sync()
  } catch {
    // best effort
  } finally {
    await handle?.close().catch(() => undefined)
  }
}

async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset)
    if (bytesWritten <= 0) throw new Error('the disk accepted no data')
    offset += bytesWritten
  }
}

/**
 * Appends are written synchronously (to the OS's cache; `sync` makes them durable): a page-cache write of a
 * batch takes microseconds, while a trip through libuv's thread pool took 0.3-3 ms here, and the engine waits
 * for the log before every side effect (write-ahead).
 */
function writeAllSync(fd: number, data: Buffer): void {
  let offset = 0
  while (offset < data.length) {
    const bytesWritten = writeSync(fd, data, offset, data.length - offset)
    if (bytesWritten <= 0) throw new Error('the disk accepted no data')
    offset += bytesWritten
  }
}

interface PendingLine {
  line: string
  event: SessionEvent
  resolve: (event: SessionEvent) => void
  reject: (error: Error) => void
}

class FileSessionWriter implements SessionWriter {
  readonly file: string
  readonly outputDir: string
  private queue: PendingLine[] = []
  private draining: Promise<void> | undefined
  private seq: number
  private committedSeq: number
  private closed = false
  private closing: Promise<void> | undefined
  /** Set when the log can no longer be trusted (a rollback or an fsync failed): every later call rejects. */
  private broken: SessionLogError | undefined

  constructor(
    readonly sessionId: string,
    private readonly paths: SessionPaths,
    private readonly token: string,
    private readonly handle: FileHandle,
    private committedSize: number,
    nextSeq: number,
    private lastAt: number,
  ) {
    this.file = paths.log
    this.outputDir = paths.outputDir
    this.seq = nextSeq
    this.committedSeq = nextSeq
  }

  get nextSeq(): number {
    return this.seq
  }

  append<D extends SessionEventDraft>(draft: D): Promise<EventOf<D['type']>> {
    if (this.closed) return Promise.reject(new SessionLogError('closed', 'The session log is closed.'))
    if (this.broken) return Promise.reject(this.broken)
    const at = draft.at ?? Math.max(Date.now(), this.lastAt)
    const parsed = SessionEvent.safeParse({ ...draft, at, seq: this.seq })
    if (!parsed.success) {
      const type = typeof draft?.type === 'string' ? draft.type : 'event'
      return Promise.reject(
        new SessionLogError(
          'invalid-event',
          `Refusing to log an invalid ${type}: ${describeIssues(parsed.error)}`,
        ),
      )
    }
    const event = parsed.data
    let line: string
    try {
      line = `${JSON.stringify(event)}\n`
    } catch (e) {
      // A BigInt or a cycle in `metadata`: the schema lets unknown values through, JSON does not.
      return Promise.reject(
        new SessionLogError('invalid-event', `Cannot log ${event.type}: ${(e as Error).message}`),
      )
    }
    this.seq++
    this.lastAt = Math.max(this.lastAt, at)
    return new Promise<SessionEvent>((resolve, reject) => {
      this.queue.push({ line, event, resolve, reject })
      // Deferred by a microtask so that every append made in the same synchronous run goes out in one write.
      this.draining ??= Promise.resolve().then(() => this.drain())
    }) as Promise<EventOf<D['type']>>
  }

  private drain(): void {
    const batch = this.queue.splice(0)
    this.draining = undefined
    if (batch.length === 0) return
    try {
      const data = Buffer.from(batch.map((p) => p.line).join(''), 'utf8')
      writeAllSync(this.handle.fd, data)
      this.committedSize += data.length
      this.committedSeq = (batch[batch.length - 1] as PendingLine).event.seq + 1
      for (const p of batch) p.resolve(p.event)
    } catch (e) {
      const error = new SessionLogError('io', `Could not write to the session log: ${(e as Error).message}`, {
        cause: e,
      })
      // Numbering restarts where the file really ends.
      this.seq = this.committedSeq
      try {
        // Cut a partially written line so the file never keeps half an event.
        ftruncateSync(this.handle.fd, this.committedSize)
      } catch (e2) {
        this.broken = new SessionLogError(
          'io',
          `The session log could not be repaired after a failed write: ${(e2 as Error).message}`,
          { cause: e2 },
        )
      }
      for (const p of batch) p.reject(error)
    }
  }

  private async flush(): Promise<void> {
    while (this.draining) await this.draining
  }

  async sync(): Promise<void> {
    if (this.broken) throw this.broken
    if (this.closed) throw new SessionLogError('closed', 'The session log is closed.')
    await this.flush()
    try {
      await this.handle.datasync()
    } catch (e) {
      // After a failed fsync the kernel may have dropped the dirty pages: a later fsync could "succeed"
      // without them (the PostgreSQL fsync lesson), so this log is not trusted again.
      this.broken = new SessionLogError(
        'io',
        `Could not save the session log to disk: ${(e as Error).message}`,
        {
          cause: e,
        },
      )
      throw this.broken
    }
  }

  close(): Promise<void> {
    this.closing ??= this.doClose()
    return this.closing
  }

  private async doClose(): Promise<void> {
    this.closed = true
    try {
      await this.flush()
      if (!this.broken) await this.handle.datasync()
    } finally {
      await this.handle.close().catch(() => undefined)
      await releaseLock(this.paths.lock, this.token)
    }
  }
}
