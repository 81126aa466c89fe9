import { closeSync, constants, fstatSync, lstatSync, openSync, read, readFileSync, readSync } from 'node:fs'
import type { BigIntStats, Stats } from 'node:fs'
import { basename, dirname } from 'node:path'
import { promisify } from 'node:util'
import { FolderPool, type Folder, type FolderRefusal } from './checked-folder'
import { identityOf } from './file-identity'
import { BLOCKING_MAX_BYTES } from './quick-read'

/**
 * Reading files by the paths a session's log names (a rewind planning what to put back), as writes go: through
 * the folder that was checked, never through whatever a name leads to now. A folder swapped for a symbolic link
 * (to a folder outside the workspace, to the home folder) is reported, not followed; the file itself is opened
 * without following a link, and without blocking, so a FIFO put in its place cannot hang the reader; anything
 * that is not a regular file, or is larger than the caller takes, is reported without being read.
 *
 * One reader per batch of work: each folder is opened and checked once; `close()` releases them.
 */

export type CheckedFile =
  | { kind: 'absent' }
  | { kind: 'file'; content: Buffer; stat: Stats }
  /** There, but not to be read: `reason` follows the file's name ("<file> is a symbolic link"). */
  | { kind: 'odd'; reason: string; stat?: Stats }

const readFd = promisify(read)

// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

export class FolderReader {
  private readonly folders = new FolderPool(false)
  /** Large files are read one at a time, so memory stays bounded by the largest one, not by a batch of them. */
  private large: Promise<unknown> = Promise.resolve()

  /** `fn` with where `path`'s entry is, through its checked folder; or what the file is instead. */
  private at<T>(path: string, fn: (entry: string) => T): Promise<T | CheckedFile> {
    const inFolder = (folder: Folder | FolderRefusal): T | CheckedFile => {
      if ('inDir' in folder) return fn(folder.inDir(basename(path)))
      if (folder.absent) return { kind: 'absent' as const }
      const why = folder.ledTo
        ? `now leads to ${folder.ledTo}`
        : folder.reason.replace(/^could not be written/, 'could not be opened')
      return { kind: 'odd' as const, reason: `was left alone: its folder ${dirname(path)} ${why}` }
    }
    // `fn` is a direct system call: with its folder open already, no promise is made for it.
    const dir = dirname(path)
    if (this.folders.has(dir)) {
      try {
        const now = this.folders.useNow(dir, inFolder)
        if (now !== undefined) return Promise.resolve(now)
      } catch (error) {
        return Promise.reject(error as Error)
      }
    }
    return this.folders.use(dir, inFolder)
  }

  /** The entry's lstat through its checked folder (a cheap look, without reading); null when absent. */
  async look(path: string): Promise<Stats | null | CheckedFile> {
    const found = await this.at(path, (entry) => {
      try {
        return lstatSync(entry)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw error
      }
    })
    return found !== null && 'kind' in found && found.kind === 'absent' ? null : found
  }

  /**
   * The identity of the regular file at `path` (file-identity.ts) and its lstat, through its checked folder; null
   * when there is no regular file there (absent, a link, a folder: the caller reads it the usual way).
   */
  async identity(path: string): Promise<{ id: string; stat: BigIntStats } | null> {
    const found = await this.at(path, (entry) => {
      try {
        const stat = lstatSync(entry, { bigint: true })
        return stat.isFile() ? { id: identityOf(stat), stat } : null
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw error
      }
    })
    return found !== null && 'kind' in found ? null : found
  }

  /** The file's content, read through its checked folder; `maxBytes`: larger files are reported, not read. */
  async read(path: string, maxBytes: number): Promise<CheckedFile> {
    // The folder is needed only to open the file: the read goes on from the open file.
    const opened = await this.at(path, (entry): number | CheckedFile => {
      try {
        return openSync(entry, OPEN_FLAGS)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT') return { kind: 'absent' }
        if (code === 'ELOOP') return { kind: 'odd', reason: 'is a symbolic link, not a regular file' }
        // A socket cannot be opened (ENXIO).
        if (code === 'ENXIO') return { kind: 'odd', reason: 'is no longer a regular file' }
        // Unreadable (its permissions, an I/O error): that file is named and left, the others go on.
        return { kind: 'odd', reason: `could not be read (${(error as Error).message})` }
      }
    })
    if (typeof opened !== 'number') return opened
    const fd = opened
    let closed = false
    try {
      const stat = fstatSync(fd)
      if (!stat.isFile()) return { kind: 'odd', reason: 'is no longer a regular file', stat }
      if (stat.size > maxBytes)
        return {
          kind: 'odd',
          reason: `is ${(stat.size / 2 ** 20).toFixed(1)} MiB, larger than Lanes keeps (${maxBytes / 2 ** 20} MiB)`,
          stat,
        }
      if (stat.size <= BLOCKING_MAX_BYTES) return { kind: 'file', content: readSmall(fd, stat.size), stat }
      const whole = this.large.then(() => readLarge(fd, stat.size, maxBytes))
      this.large = whole.catch(() => undefined)
      closed = true // readLarge closes it, when its turn has come
      const content = await whole
      if (content === null)
        return { kind: 'odd', reason: `grew past ${maxBytes / 2 ** 20} MiB while it was being read`, stat }
      return { kind: 'file', content, stat }
    } finally {
      if (!closed) closeSync(fd)
    }
  }

  close(): Promise<void> {
    return this.folders.close()
  }
}

/**
 * A small file read whole by one system call where it can be (a rewind of 20,000 small files): asked for one
 * byte more than its size, it gives exactly its size when that is all there is. Otherwise (it grew or shrank
 * since its stat) it is read again from its start to its end.
 */
function readSmall(fd: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size + 1)
  // A positional read: the descriptor's offset stays at 0 for the read again.
  const bytesRead = readSync(fd, buffer, 0, size + 1, 0)
  return bytesRead === size ? buffer.subarray(0, size) : readFileSync(fd)
}

/** Reads an open file through the thread pool to its end (null past `maxBytes`), then closes it. */
async function readLarge(fd: number, size: number, maxBytes: number): Promise<Buffer | null> {
  try {
    const chunks: Buffer[] = []
    let total = 0
    for (let chunk = Buffer.allocUnsafe(Math.max(size, 64 * 1024)); ;) {
      const { bytesRead } = await readFd(fd, chunk, 0, chunk.length, total)
      if (bytesRead === 0) break
      chunks.push(chunk.subarray(0, bytesRead))
      total += bytesRead
      if (total > maxBytes) return null
      if (bytesRead === chunk.length) chunk = Buffer.allocUnsafe(64 * 1024)
      else chunk = chunk.subarray(bytesRead)
    }
    return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total)
  } finally {
    closeSync(fd)
  }
}
