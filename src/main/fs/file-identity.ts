import { createHash } from 'node:crypto'
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'
import type { BigIntStats } from 'node:fs'

/**
 * A file's identity (issue 20): its device, inode, size, and modification and change times in nanoseconds, as
 * one string. Taken when Lanes knows a file's content (a command's file as it lands), it lets a later undo tell
 * that the file is unchanged by one lstat instead of reading and hashing it: any write, truncation, chmod,
 * rename over it or `touch` sets the change time (ctime) to the clock's time, which no program can set back.
 *
 * The racy-git rule: a file's times are only as fine as the file system's clock (a kernel tick, milliseconds; a
 * second or two on some file systems). A change made within the same tick as the one the identity shows would
 * leave every field equal, so an identity is taken only when both times are older than the moment it was taken
 * by more than that granularity: any later change then gets a later time. Otherwise nothing is recorded and the
 * undo reads and hashes the file, as it does for a file with no identity (an older session, a file that was
 * copied rather than moved, a change on a file system whose clock runs ahead).
 *
 * A file a file tool wrote is just written, so its identity cannot be trusted then; `stillIdentity` takes it once
 * the granularity has passed, by reading the file again: its content, hashed, must still be what the tool wrote.
 */

/** A kernel tick is at most 10 ms (HZ=100); the coarse clock lags the real one by up to a tick. With margin. */
const FINE_GRANULARITY_MS = 100
/** Times without a sub-second part: a file system that keeps whole seconds (two for FAT's modification time). */
const COARSE_GRANULARITY_MS = 2000

/**
 * The identity of a file seen by `st` (an lstat or fstat with bigint times), when it can be trusted: both times
 * older than `takenAtMs` (the wall clock read after `st` was taken) by more than the file system's granularity.
 */
export function trustedIdentity(st: BigIntStats, takenAtMs: number): string | undefined {
  const second = 1_000_000_000n
  const coarse = st.mtimeNs % second === 0n && st.ctimeNs % second === 0n
  const granularity = coarse ? COARSE_GRANULARITY_MS : FINE_GRANULARITY_MS
  const before = BigInt(Math.floor(takenAtMs - granularity)) * 1_000_000n
  if (st.ctimeNs >= before || st.mtimeNs >= before) return undefined
  return identityOf(st)
}

/** The identity of what `st` shows, to compare with a recorded one. */
export function identityOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
}

/** Open flags for a look at a workspace file: a link is not followed, a FIFO does not hang the open. */
const LOOK_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

/**
 * The trusted identity of the regular file at `path` (and its mtime, as an lstat without bigint gives it) when its
 * content is still the one whose SHA-256 is `hash`: read and hashed now (by direct system calls: for files of at
 * most `maxBytes`, small ones), its identity taken from the open file after the read. Undefined when it is not
 * (changed, gone, not a regular file, larger) or its times are still too recent to trust (see trustedIdentity).
 */
export function stillIdentity(
  path: string,
  hash: string,
  maxBytes: number,
): { id: string; mtimeMs: number } | undefined {
  let fd: number
  try {
    fd = openSync(path, LOOK_FLAGS)
  } catch {
    return undefined
  }
  try {
    const st = fstatSync(fd, { bigint: true })
    if (!st.isFile() || st.size > BigInt(maxBytes)) return undefined
    const size = Number(st.size)
    // One byte more than its size: a file that grew since its fstat reads longer, and is not taken.
    const content = Buffer.allocUnsafe(size + 1)
    if (readSync(fd, content, 0, size + 1, 0) !== size) return undefined
    if (createHash('sha256').update(content.subarray(0, size)).digest('hex') !== hash) return undefined
    // Taken after the read: a change made since the read has a ctime too recent to trust, so a trusted identity
    // is of the content that was read.
    const after = fstatSync(fd, { bigint: true })
    const id = trustedIdentity(after, Date.now())
    const ns = after.mtimeNs
    return id === undefined
      ? undefined
      : { id, mtimeMs: Number(ns / 1_000_000_000n) * 1e3 + Number(ns % 1_000_000_000n) / 1e6 }
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}
