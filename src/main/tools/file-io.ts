import {
  closeSync,
  fchmodSync,
  fchownSync,
  fdatasyncSync,
  fstatSync,
  lstatSync,
  openSync,
  promises as fs,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs'

/**
 * The file operations a write or a read makes, in two kinds:
 * - `asyncIo`: each operation one round trip to libuv's thread pool. Never blocks the event loop, whatever the
 *   file's size or the disk's speed; what single writes (the file tools) use.
 * - `blockingIo`: the same operations as direct system calls, an order of magnitude cheaper each, for work on
 *   many small files at once (a rewind of a hundred files). Callers keep it to small files and run it in time
 *   slices (`TimeSlices`), so the event loop is never held for long, and never fsync with it: they sync the
 *   files together afterwards with the async `syncFiles`.
 *
 * The algorithms (atomic write, reading a file as it is) are written once over this interface.
 */

type Maybe<T> = T | Promise<T>

export interface OpenFileIo {
  writeAll(data: string | Buffer): Maybe<void>
  datasync(): Maybe<void>
  stat(): Maybe<Stats>
  chmod(mode: number): Maybe<void>
  chown(uid: number, gid: number): Maybe<void>
  readAll(): Maybe<Buffer>
  close(): Maybe<void>
}

export interface FileIo {
  /** True for the system-call kind: the caller bounds how long it runs (small files, time slices). */
  readonly blocking: boolean
  stat(path: string): Maybe<Stats>
  lstat(path: string): Maybe<Stats>
  open(path: string, flags: string | number, mode?: number): Maybe<OpenFileIo>
  readFile(path: string): Maybe<Buffer>
  rename(from: string, to: string): Maybe<void>
  unlink(path: string): Maybe<void>
}

export const asyncIo: FileIo = {
  blocking: false,
  stat: (path) => fs.stat(path),
  lstat: (path) => fs.lstat(path),
  async open(path, flags, mode) {
    const handle = await fs.open(path, flags, mode)
    return {
      writeAll: (data) => handle.writeFile(data),
      datasync: () => handle.datasync(),
      stat: () => handle.stat(),
      chmod: (m) => handle.chmod(m),
      chown: (uid, gid) => handle.chown(uid, gid),
      readAll: () => handle.readFile(),
      close: () => handle.close(),
    }
  },
  readFile: (path) => fs.readFile(path),
  rename: (from, to) => fs.rename(from, to),
  unlink: (path) => fs.unlink(path),
}

export const blockingIo: FileIo = {
  blocking: true,
  stat: (path) => statSync(path),
  lstat: (path) => lstatSync(path),
  open(path, flags, mode) {
    const fd = openSync(path, flags, mode)
    return {
      writeAll: (data) => writeFileSync(fd, data),
      datasync: () => fdatasyncSync(fd),
      stat: () => fstatSync(fd),
      chmod: (m) => fchmodSync(fd, m),
      chown: (uid, gid) => fchownSync(fd, uid, gid),
      readAll: () => readFileSync(fd),
      close: () => closeSync(fd),
    }
  },
  readFile: (path) => readFileSync(path),
  rename: (from, to) => renameSync(from, to),
  unlink: (path) => unlinkSync(path),
}

/** Files up to this size are read and written with `blockingIo` in batch work: well under a millisecond each. */
export const BLOCKING_MAX_BYTES = 256 * 1024

/** The kind of I/O for a batch's file of `size` bytes. */
export function ioFor(size: number): FileIo {
  return size <= BLOCKING_MAX_BYTES ? blockingIo : asyncIo
}

/**
 * Bounds how long blocking work holds the event loop: `tick()` between items yields (setImmediate) once the
 * current slice has run `budgetMs`, so timers, IPC and the UI's messages are served in between.
 */
export class TimeSlices {
  private sliceStart = performance.now()

  constructor(private readonly budgetMs = 4) {}

  async tick(): Promise<void> {
    if (performance.now() - this.sliceStart < this.budgetMs) return
    await new Promise<void>((resolve) => setImmediate(resolve))
    this.sliceStart = performance.now()
  }
}
