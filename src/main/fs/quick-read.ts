import {
  closeSync,
  fstatSync,
  openSync,
  promises as fs,
  readFileSync,
  readSync,
  type BigIntStats,
} from 'node:fs'

/**
 * Reading many small files at once (a rewind planning a hundred files), fast and without holding the event
 * loop for long. Each thread-pool operation costs a round trip (tens of microseconds, more under load), and a
 * read takes five (lstat, open, fstat, read, close); as direct system calls the same read costs a few
 * microseconds. So small files are read with blocking calls, by callers that give the event loop back every
 * few milliseconds (`TimeSlices`), and large ones through the thread pool, which never blocks.
 *
 * Renames stay on the thread pool: replacing a file costs the file system real disk work at the rename
 * (ext4 starts writing the new data then), which only overlaps when several writes are in flight. The rest of a
 * small write in a batch (its temp file made, written, looked at) goes by direct calls (atomic-write.ts).
 */

/** Files up to this size are read with blocking calls in batch work: well under a millisecond each. */
export const BLOCKING_MAX_BYTES = 256 * 1024

/**
 * The file's content: by direct system calls when it is small (checked on the open file, so a file that grew
 * since it was looked at is not read blocking), through the thread pool otherwise.
 */
export function readFileQuick(path: string): Buffer | Promise<Buffer> {
  const read = readFileSeen(path)
  return 'then' in read ? read.then((r) => r.content) : read.content
}

/** A file's content, with the open file's fstat (bigint times) when it was read by direct calls. */
export interface SeenRead {
  content: Buffer
  st?: BigIntStats
  /** The file, still open (asked for with `keepOpen`, read by direct calls): the caller closes it. */
  fd?: number
}

/**
 * readFileQuick, with the open file's fstat (bigint times) when it was read by direct calls: what the content
 * read is the content of (file-identity.ts). `keepOpen`: the file is left open when read by direct calls.
 */
export function readFileSeen(path: string, opts: { keepOpen?: boolean } = {}): SeenRead | Promise<SeenRead> {
  const fd = openSync(path, 'r')
  let open = true
  try {
    const st = fstatSync(fd, { bigint: true })
    if (st.size > BigInt(BLOCKING_MAX_BYTES)) return fs.readFile(path).then((content) => ({ content }))
    const content = readWhole(fd, Number(st.size))
    if (!opts.keepOpen) return { content, st }
    open = false
    return { content, st, fd }
  } finally {
    if (open) closeSync(fd)
  }
}

/**
 * The `size` bytes fstat found, read into one buffer: readFileSync(fd) would fstat the file again and read it in a
 * buffer of its own, twice the time for a small file. A file that reports no size (in /proc) is read to its end.
 */
function readWhole(fd: number, size: number): Buffer {
  if (size === 0) return readFileSync(fd)
  const buffer = Buffer.allocUnsafeSlow(size)
  let at = 0
  while (at < size) {
    const read = readSync(fd, buffer, at, size - at, at)
    if (read === 0) break
    at += read
  }
  return at === size ? buffer : buffer.subarray(0, at)
}
