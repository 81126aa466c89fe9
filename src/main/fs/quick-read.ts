import { closeSync, fstatSync, openSync, promises as fs, readFileSync, type BigIntStats } from 'node:fs'

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

/**
 * readFileQuick, with the open file's fstat (bigint times) when it was read by direct calls: what the content
 * read is the content of (file-identity.ts).
 */
export function readFileSeen(
  path: string,
): { content: Buffer; st?: BigIntStats } | Promise<{ content: Buffer; st?: BigIntStats }> {
  const fd = openSync(path, 'r')
  try {
    const st = fstatSync(fd, { bigint: true })
    if (st.size > BigInt(BLOCKING_MAX_BYTES)) return fs.readFile(path).then((content) => ({ content }))
    return { content: readFileSync(fd), st }
  } finally {
    closeSync(fd)
  }
}
