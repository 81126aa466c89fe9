import { constants as fsConstants, ftruncateSync, writeSync } from 'node:fs'
import { mkdir, open, type FileHandle } from 'node:fs/promises'
import { describeIssues } from '../../shared/ipc'
import { SessionEvent, type EventOf, type SessionEventDraft } from '../../shared/events'
import { acquireLock, releaseLock } from './log-lock'
import { SessionLogError, sessionPaths, type SessionPaths } from './log-paths'
import { LF, parseLine, scanLinesBackward } from './log-reader'

/** Writing a session log: the one writer of a session, holding its lock, appending in batches. */

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
  /**
   * Writes what is pending, syncs, and releases the lock. Idempotent. `sync: false` leaves the last lines to the
   * OS (a crash of the app loses nothing, a power loss may): for a caller whose unsynced lines are recovered
   * when lost (a rewind's outcome: its files are durable, and the next start finishes it again).
   */
  close(opts?: { sync?: boolean }): Promise<void>
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

  close(opts: { sync?: boolean } = {}): Promise<void> {
    this.closing ??= this.doClose(opts.sync ?? true)
    return this.closing
  }

  private async doClose(sync: boolean): Promise<void> {
    this.closed = true
    try {
      await this.flush()
      if (!this.broken && sync) await this.handle.datasync()
    } finally {
      await this.handle.close().catch(() => undefined)
      await releaseLock(this.paths.lock, this.token)
    }
  }
}
