import { createHash } from 'node:crypto'
import { constants, promises as fs } from 'node:fs'

/**
 * Optimistic concurrency for file changes (DESIGN 2). Each read or write records what the session saw of a
 * file (mtime + SHA-256); a later overwrite is refused when the file has changed on disk since, so the agent
 * never silently clobbers an edit the user made in their editor meanwhile.
 */

export interface FileSnapshot {
  /** Absolute real path. */
  path: string
  mtimeMs: number
  /** SHA-256 of the whole content, hex. */
  hash: string
}

export class SnapshotStore {
  private readonly byPath = new Map<string, FileSnapshot>()
  // Snapshots of large files whose hash is still being computed after read_file already answered.
  private readonly pending = new Map<string, Promise<void>>()
  private readonly onRecord: ((s: FileSnapshot) => void) | undefined

  constructor(opts: { onRecord?: (s: FileSnapshot) => void } = {}) {
    this.onRecord = opts.onRecord
  }

  get(path: string): FileSnapshot | undefined {
    return this.byPath.get(path)
  }

  record(s: FileSnapshot): void {
    // A newer fact wins over a background hash of an older read still in flight.
    this.pending.delete(s.path)
    const copy = { path: s.path, mtimeMs: s.mtimeMs, hash: s.hash }
    this.byPath.set(s.path, copy)
    this.onRecord?.(copy)
  }

  /**
   * Replaces what the store holds with snapshots from the session log (a continued session, or a rewind that
   * dropped some): already logged, so no onRecord.
   */
  restore(snaps: Iterable<FileSnapshot>): void {
    this.byPath.clear()
    for (const s of snaps) this.byPath.set(s.path, { path: s.path, mtimeMs: s.mtimeMs, hash: s.hash })
  }

  all(): FileSnapshot[] {
    return [...this.byPath.values()]
  }

  /**
   * Records the snapshot once `snapshot` resolves (null: the file changed while being hashed, nothing is
   * recorded). Used for large files, whose hash is computed after the read has answered.
   */
  expect(path: string, snapshot: Promise<FileSnapshot | null>): void {
    const settled: Promise<void> = snapshot
      .then((s) => {
        if (s !== null && this.pending.get(path) === settled) this.record(s)
      })
      // The background hash must never become an unhandled rejection that takes the process down.
      .catch(() => undefined)
      .finally(() => {
        if (this.pending.get(path) === settled) this.pending.delete(path)
      })
    this.pending.set(path, settled)
  }

  /** Resolves once no snapshot of `path` is still being computed. */
  settled(path: string): Promise<void> {
    return this.pending.get(path) ?? Promise.resolve()
  }
}

const HASH_CHUNK = 1 << 20

/** Streaming SHA-256 (hex) of a file: memory stays at one chunk whatever the file size. */
export async function hashFile(path: string): Promise<string> {
  const hash = createHash('sha256')
  const fh = await fs.open(path, constants.O_RDONLY)
  try {
    const buf = Buffer.allocUnsafe(HASH_CHUNK)
    let position = 0
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, position)
      if (bytesRead === 0) break
      hash.update(buf.subarray(0, bytesRead))
      position += bytesRead
    }
  } finally {
    await fh.close()
  }
  return hash.digest('hex')
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex')
}

export type ConflictCheck = { ok: true } | { ok: false; reason: string }

/** What the caller saw of the file just now; `null` when it does not exist. */
export type ObservedFile = { mtimeMs: number; hash?: string } | null

/**
 * May `path` be overwritten? A file that does not exist needs no prior read. An existing one must have been
 * read (or written) in this session, and must not have changed since: mtime moved AND content hash differs.
 * A touch or a same-content rewrite is not a conflict; its snapshot is refreshed to the new mtime.
 *
 * `observed` lets a caller that has just read the file pass its mtime and hash, so the judgement is about
 * the very bytes it will change. When the hash is known it is compared even if the mtime did not move:
 * a file system with coarse timestamps (or a tool resetting mtime) must not hide a real change.
 */
export async function checkConflict(
  store: SnapshotStore,
  path: string,
  opts: { observed?: ObservedFile; displayPath?: string } = {},
): Promise<ConflictCheck> {
  const shown = opts.displayPath ?? path
  try {
    await store.settled(path)
    let observed = opts.observed
    if (observed === undefined) {
      try {
        observed = { mtimeMs: (await fs.stat(path)).mtimeMs }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
        observed = null
      }
    }
    if (observed === null) return { ok: true }
    const snap = store.get(path)
    if (snap === undefined)
      return {
        ok: false,
        reason:
          `${shown} already exists and has not been read in this session. ` +
          'Read it first with read_file, then retry, so its current content is not lost by mistake.',
      }
    if (observed.mtimeMs === snap.mtimeMs && (observed.hash === undefined || observed.hash === snap.hash))
      return { ok: true }
    const hash = observed.hash ?? (await hashFile(path))
    if (hash === snap.hash) {
      if (observed.mtimeMs !== snap.mtimeMs) store.record({ path, mtimeMs: observed.mtimeMs, hash })
      return { ok: true }
    }
    return {
      ok: false,
      reason:
        `${shown} has changed on disk since you last read it (edited by the user or another program). ` +
        'Read it again with read_file and base your change on its current content.',
    }
  } catch (error) {
    return { ok: false, reason: `Could not check ${shown} for changes: ${(error as Error).message}` }
  }
}
