import { createHash } from 'node:crypto'
import { constants, readSync, writeSync } from 'node:fs'
import { mkdir, open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { SessionEventDraft } from '../../shared/events'
import { stillIdentity } from '../fs/file-identity'
import { BLOCKING_MAX_BYTES } from '../fs/quick-read'
import { TimeSlices } from '../fs/time-slices'
import type { ChangeKeeper } from '../tools/tool'

/**
 * The session's store of file contents (issue 14): what every file looked like before and after each change
 * the file tools made, so any change can be undone. Contents are addressed by their SHA-256 and kept once.
 *
 * One append-only pack file per session (`<session folder>/preimages.pack`), not one file per content: 1000
 * small edits of one file would otherwise cost 1000 file-system blocks for a few bytes each. A content is kept
 * either whole or as a delta against an earlier content of the same file: the bytes that differ between the
 * longest common prefix and suffix, which is exactly what one edit changes. A chain of deltas is cut with a
 * whole copy every MAX_DEPTH links so that reading any content stays quick.
 *
 * Record: a JSON header line (`{"hash","len",...}`), then `len` payload bytes, then "\n". Records are written
 * in one positional write each, so a crash leaves at most a torn last record, which opening the pack finds and
 * cuts off. Every content read is checked against its hash: a damaged or missing record is reported, never
 * returned as a file's content.
 */

const PACK_NAME = 'preimages.pack'
/** Beyond this many deltas a content is stored whole again, so a read never replays a long chain. */
export const MAX_DEPTH = 400
/** A delta larger than this share of the content is not worth it: the content is stored whole. */
const DELTA_MAX_SHARE = 0.5
/** A record's header line is never longer than this. */
const HEADER_READ = 4096
/** Bytes read at once while indexing the pack on open (a quick read: BLOCKING_MAX_BYTES). */
const SCAN_WINDOW = 256 * 1024
/** Quiet time after the last append before the pack is fsynced in the background. */
const SYNC_DELAY_MS = 250
/** Bases for the next delta are kept in memory up to this many bytes in all (the oldest files go first). */
const LATEST_MAX_BYTES = 64 * 1024 * 1024

export type PreimageErrorCode = 'missing' | 'corrupt' | 'io'

export class PreimageError extends Error {
  constructor(
    readonly code: PreimageErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'PreimageError'
  }
}

interface RecordHeader {
  hash: string
  /** Payload length in bytes. */
  len: number
  /** Set for a delta: the content it applies to, and how much of that content's head and tail it keeps. */
  base?: string
  prefix?: number
  suffix?: number
  /** Deltas between this content and a whole one. */
  depth?: number
}

interface Entry extends RecordHeader {
  /** Offset of the payload in the pack. */
  at: number
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}

/** Length of the longest common prefix, by halving: each probe is one native memcmp. */
function commonPrefix(a: Buffer, b: Buffer, limit: number): number {
  let lo = 0
  let hi = limit
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (a.subarray(lo, mid).equals(b.subarray(lo, mid))) lo = mid
    else hi = mid - 1
  }
  return lo
}

function commonSuffix(a: Buffer, b: Buffer, limit: number): number {
  let lo = 0
  let hi = limit
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (a.subarray(a.length - mid, a.length - lo).equals(b.subarray(b.length - mid, b.length - lo))) lo = mid
    else hi = mid - 1
  }
  return lo
}

export class PreimageStore {
  private readonly index = new Map<string, Entry>()
  /** The last content kept or read per file path: the base a next delta of that file is computed against. */
  private readonly latest = new Map<string, { hash: string; content: Buffer }>()
  private latestBytes = 0
  private end: number
  private chain: Promise<unknown> = Promise.resolve()
  /** The background fsync in flight, and whether records were appended after it began. */
  private syncing: Promise<void> | null = null
  private dirty = false
  private syncTimer: NodeJS.Timeout | null = null
  /** Where the pack ended when its last fsync began that succeeded (-1: none yet): all before it is durable. */
  private syncedEnd = -1

  private constructor(
    private readonly handle: FileHandle,
    readonly file: string,
    end: number,
  ) {
    this.end = end
  }

  /**
   * Opens (or creates) the pack in `dir`. A torn record at the end (a crash mid-append) is cut off; the
   * records before it are intact.
   */
  static async open(dir: string): Promise<PreimageStore> {
    await mkdir(dir, { recursive: true })
    const file = join(dir, PACK_NAME)
    // Not O_APPEND: appends go at `end`, so a record that failed half-way is overwritten by the next one.
    const handle = await open(file, constants.O_RDWR | constants.O_CREAT, 0o600)
    try {
      const size = (await handle.stat()).size
      const store = new PreimageStore(handle, file, 0)
      store.end = await store.scan(size)
      if (store.end < size) await handle.truncate(store.end)
      return store
    } catch (error) {
      await handle.close().catch(() => undefined)
      throw error
    }
  }

  /**
   * Reads the headers from the start, a window of SCAN_WINDOW bytes at a time, by direct system calls (a window
   * is a quick read; the event loop is given back every few milliseconds): the records of small files (most of
   * them) are indexed many to a read. After a record larger than a header's read, only HEADER_READ bytes are
   * read at the next one: a pack of large contents is indexed without reading their payloads. Returns where the
   * intact records end.
   */
  private async scan(size: number): Promise<number> {
    const slices = new TimeSlices()
    let at = 0
    const window = Buffer.alloc(Math.min(SCAN_WINDOW, Math.max(size, HEADER_READ)))
    let windowAt = 0
    let windowLen = 0
    let lastLen = 0
    while (at < size) {
      // The header must be whole inside the window; otherwise the window moves to it.
      let nl = at >= windowAt && at < windowAt + windowLen ? window.indexOf(10, at - windowAt) : -1
      if (nl < 0 || nl >= windowLen) {
        await slices.tick()
        const want = lastLen > HEADER_READ ? HEADER_READ : window.length
        windowLen = readSync(this.handle.fd, window, 0, want, at)
        windowAt = at
        nl = window.subarray(0, Math.min(windowLen, HEADER_READ)).indexOf(10)
        if (nl < 0) break
      } else if (nl - (at - windowAt) > HEADER_READ) break
      let header: RecordHeader
      try {
        header = JSON.parse(window.toString('utf8', at - windowAt, nl)) as RecordHeader
      } catch {
        break
      }
      if (typeof header.hash !== 'string' || !Number.isInteger(header.len) || header.len < 0) break
      const payload = windowAt + nl + 1
      if (payload + header.len + 1 > size) break
      this.index.set(header.hash, { ...header, at: payload })
      at = payload + header.len + 1
      lastLen = header.len
    }
    return at
  }

  has(hash: string): boolean {
    return this.index.has(hash)
  }

  /**
   * Keeps `content` (the content of `path` at some moment) and returns its hash. Already kept: nothing is
   * written. Resolves once the record is in the file (the OS has it: a crash of the app does not lose it); its
   * fsync runs in the background and `flush` waits for it.
   */
  put(path: string, content: Buffer, hash: string = sha256(content)): Promise<string> {
    const run = this.chain.then(() => this.append(path, content, hash))
    this.chain = run.catch(() => undefined)
    return run
  }

  private async append(path: string, content: Buffer, hash: string): Promise<string> {
    const known = this.index.get(hash)
    if (known) {
      this.remember(path, hash, content)
      return hash
    }
    const header: RecordHeader = { hash, len: content.length }
    let payload = content
    const base = this.latest.get(path)
    const baseEntry = base && this.index.get(base.hash)
    if (base && baseEntry && (baseEntry.depth ?? 0) < MAX_DEPTH) {
      const limit = Math.min(base.content.length, content.length)
      const prefix = commonPrefix(base.content, content, limit)
      const suffix = commonSuffix(base.content, content, limit - prefix)
      const middle = content.subarray(prefix, content.length - suffix)
      if (middle.length <= content.length * DELTA_MAX_SHARE) {
        Object.assign(header, {
          len: middle.length,
          base: base.hash,
          prefix,
          suffix,
          depth: (baseEntry.depth ?? 0) + 1,
        })
        payload = middle
      }
    }
    const head = Buffer.from(JSON.stringify(header) + '\n', 'utf8')
    const record = Buffer.concat([head, payload, Buffer.from('\n')])
    const at = this.end
    try {
      // A small record (most are: a command's 20,000 new files are kept when undone) is one direct write, as a
      // small read is: cheaper than a round trip through the thread pool each.
      if (record.length <= BLOCKING_MAX_BYTES) {
        if (writeSync(this.handle.fd, record, 0, record.length, at) !== record.length)
          throw new Error('the disk took only part of it')
      } else await this.handle.write(record, 0, record.length, at)
    } catch (error) {
      // Whatever part landed is cut at the next open (or overwritten by the next append, from the same offset).
      throw new PreimageError('io', `Could not keep the file's content: ${(error as Error).message}`)
    }
    this.end = at + record.length
    this.index.set(hash, { ...header, at: at + head.length })
    this.remember(path, hash, content)
    this.scheduleSync()
    return hash
  }

  /**
   * Makes appends durable in the background, SYNC_DELAY_MS after the last of a burst and one fsync at a time:
   * an fsync started while the tool's own write is being fsynced would make that write wait for it. A process
   * crash loses nothing either way (the records are in the OS); a power loss within the delay can lose the
   * newest records, which a rewind then reports as missing (every read is checked) instead of restoring.
   */
  private scheduleSync(): void {
    this.dirty = true
    if (this.syncTimer) clearTimeout(this.syncTimer)
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null
      if (this.syncing) return
      const loop = async (): Promise<void> => {
        while (this.dirty) {
          this.dirty = false
          await this.datasync().catch(() => undefined)
        }
        this.syncing = null
      }
      this.syncing = loop()
    }, SYNC_DELAY_MS)
    // Never what keeps a process alive: close() and flush() sync whatever is left.
    this.syncTimer.unref?.()
  }

  private remember(path: string, hash: string, content: Buffer): void {
    const old = this.latest.get(path)
    if (old) this.latestBytes -= old.content.length
    this.latest.delete(path)
    this.latest.set(path, { hash, content })
    this.latestBytes += content.length
    for (const [key, value] of this.latest) {
      if (this.latestBytes <= LATEST_MAX_BYTES || key === path) break
      this.latest.delete(key)
      this.latestBytes -= value.content.length
    }
  }

  /** The content whose hash is `hash`, checked against the hash. Throws PreimageError (missing, corrupt). */
  async get(hash: string): Promise<Buffer> {
    await this.chain
    const links: Entry[] = []
    for (let h: string | undefined = hash; h !== undefined;) {
      const entry = this.index.get(h)
      if (!entry) {
        throw new PreimageError(
          'missing',
          h === hash
            ? `The content ${hash.slice(0, 12)} is not in this session's store.`
            : `The content ${hash.slice(0, 12)} is stored as a change of ${h.slice(0, 12)}, which is missing.`,
        )
      }
      links.push(entry)
      // Lanes never writes a longer chain; a damaged or forged pack could hold one that loops on itself.
      if (links.length > MAX_DEPTH + 1)
        throw new PreimageError(
          'corrupt',
          `The stored content ${hash.slice(0, 12)} is a chain of changes that never ends.`,
        )
      h = entry.base
    }
    let content: Buffer | undefined
    for (const entry of links.reverse()) {
      const payload = Buffer.allocUnsafe(entry.len)
      // A small record (most are) is one direct read: cheaper than a round trip through the thread pool.
      const bytesRead =
        entry.len <= BLOCKING_MAX_BYTES
          ? readSync(this.handle.fd, payload, 0, entry.len, entry.at)
          : (await this.handle.read(payload, 0, entry.len, entry.at)).bytesRead
      if (bytesRead !== entry.len)
        throw new PreimageError('corrupt', `The stored content ${entry.hash} is cut short.`)
      if (entry.base === undefined) content = payload
      else {
        const prior = content as Buffer
        const prefix = entry.prefix ?? 0
        const suffix = entry.suffix ?? 0
        if (prefix + suffix > prior.length)
          throw new PreimageError('corrupt', `The stored change ${entry.hash} does not fit its base.`)
        content = Buffer.concat([prior.subarray(0, prefix), payload, prior.subarray(prior.length - suffix)])
      }
    }
    const result = content as Buffer
    if (sha256(result) !== hash) {
      throw new PreimageError(
        'corrupt',
        `The stored content ${hash.slice(0, 12)} is damaged (its hash does not match).`,
      )
    }
    return result
  }

  /** Makes everything kept so far survive a power loss. */
  async flush(): Promise<void> {
    await this.chain
    if (this.syncTimer) clearTimeout(this.syncTimer)
    this.syncTimer = null
    await this.syncing
    this.dirty = false
    // Nothing appended since the last fsync (a rewind whose contents the store already had, a landing that
    // replaced nothing): no fsync, which would still cost the disk a cache flush.
    if (this.syncedEnd === this.end) return
    await this.datasync()
  }

  private async datasync(): Promise<void> {
    const end = this.end
    await this.handle.datasync()
    this.syncedEnd = Math.max(this.syncedEnd, end)
  }

  /** Bytes the pack takes. */
  get size(): number {
    return this.end
  }

  async close(): Promise<void> {
    await this.flush().catch(() => undefined)
    await this.handle.close()
  }
}

/** The store's folder inside a session's folder: a subfolder, so read_file's access to outputs never sees it. */
export function preimagesDir(sessionFolder: string): string {
  return join(sessionFolder, 'preimages')
}

/** How long after a file tool's write the file's identity is taken: past a fine clock's granularity, with margin. */
const IDENTITY_AFTER_MS = 150
/** Identities waiting to be taken (see `identitiesTaken`), each with its timer. */
const identities = new Map<Promise<void>, NodeJS.Timeout>()

/**
 * Takes the identity of a file a tool just wrote once the clock's granularity has passed, when the file is still
 * what it wrote (read and hashed again), and logs it with a snapshot: an undo then finds the file unchanged by one
 * lstat (file-identity.ts). Only small files (read by direct system calls); a larger one is read by the undo.
 */
function identifyLater(
  path: string,
  content: Buffer,
  hash: string,
  log: (draft: SessionEventDraft<'file.snapshot'>) => Promise<unknown>,
): void {
  if (content.length > BLOCKING_MAX_BYTES) return
  let timer!: NodeJS.Timeout
  const taken = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      const still = stillIdentity(path, hash, BLOCKING_MAX_BYTES)
      if (still === undefined) return resolve()
      // A log closed meanwhile (the session ended) takes nothing: the undo reads the file instead.
      void Promise.resolve()
        .then(() => log({ type: 'file.snapshot', path, mtimeMs: still.mtimeMs, hash, id: still.id }))
        .catch(() => undefined)
        .then(() => resolve())
    }, IDENTITY_AFTER_MS)
  })
  // Never what keeps a process alive (unless waited for): an identity not taken only costs an undo a read.
  timer.unref()
  identities.set(taken, timer)
  void taken.then(() => identities.delete(taken))
}

/**
 * Resolves once the identities of the files written so far are taken (or found not to be had): at most
 * IDENTITY_AFTER_MS. For a session closing right after its last write, whose log would otherwise lose them.
 */
export async function identitiesTaken(): Promise<void> {
  for (const timer of identities.values()) timer.ref()
  await Promise.all([...identities.keys()])
}

/**
 * The ChangeKeeper the file tools get for one call: contents go to the store, and the content before the
 * change is logged (file.preimage) before the tool writes, so the log never holds a change it cannot undo.
 */
export function changeKeeper(
  store: () => Promise<PreimageStore>,
  callId: string,
  log: (draft: SessionEventDraft<'file.preimage' | 'file.snapshot'>) => Promise<unknown>,
): ChangeKeeper {
  return {
    async before({ path, relPath, content, hash: known }) {
      try {
        const hash = content === null ? null : await (await store()).put(path, content, known)
        await log({ type: 'file.preimage', callId, path, relPath, hash })
        return { ok: true }
      } catch (error) {
        return { ok: false, error: (error as Error).message }
      }
    },
    async after({ path, content, hash }) {
      // For showing "as Lanes left it" in a rewind's conflict view, and for the roll-back of a rewind that finds
      // the file unchanged by its identity (not read); the change itself is already made.
      await (await store()).put(path, content, hash).catch(() => undefined)
      identifyLater(path, content, hash, log)
    },
  }
}
