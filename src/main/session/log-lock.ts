import { readFileSync, unlinkSync } from 'node:fs'
import { link, readFile, stat, unlink, writeFile } from 'node:fs/promises'
import { hostname, uptime } from 'node:os'
import { randomBytes } from 'node:crypto'
import { SessionLogError, sessionPaths } from './log-paths'

/**
 * The lock: one writer per session, across windows and processes. `<sessionsDir>/<id>.lock` holds its owner
 * (pid, host, boot); a lock whose owner is gone is stale and taken over.
 */

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

export async function acquireLock(lockPath: string): Promise<string> {
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

export async function releaseLock(lockPath: string, token: string): Promise<void> {
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
