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
