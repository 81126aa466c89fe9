import { randomBytes } from 'node:crypto'
import { constants as fsConstants, existsSync, promises as fs } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, join, relative, resolve } from 'node:path'

/**
 * Folders opened after checking they are the folders their paths name (atomic-write.ts writes through them,
 * checked-read.ts reads through them): a folder swapped for a symbolic link must not turn a write, a removal,
 * a folder made or a read onto a place elsewhere. The folder is opened and its real path compared with the
 * path; on Linux its entries are then named through the open descriptor (`/proc/self/fd/<dir>/<name>`, as
 * openat would), so a later swap changes nothing.
 */

// `.<base>.lanes-<12 hex>.tmp`; the base is shortened so the temp name stays under NAME_MAX (255 bytes).
const TEMP_NAME = /^\..*\.lanes-[0-9a-f]{12}\.tmp$/
const MAX_BASE_IN_TEMP = 100
const STALE_AFTER_MS = 60_000
/** Folders a pool keeps open at most (beyond them, the least recently used one not in use is closed). */
const POOL_MAX_OPEN = 64

const cleanedDirs = new Set<string>()

/** The name of a new temp file for `name`, in its folder. */
export function tempNameFor(name: string): string {
  return `.${name.slice(0, MAX_BASE_IN_TEMP)}.lanes-${randomBytes(6).toString('hex')}.tmp`
}

/** A folder opened for writes into it, after checking it is the folder its path names. */
export interface Folder {
  dir: string
  /** Absent on Windows, which cannot open a folder as a file. */
  handle: FileHandle | undefined
  /** The path of an entry, through the open folder where the platform allows. */
  inDir(entry: string): string
}

/**
 * `absent`: the folder (or one above it) does not exist, when it was not to be created; `ledTo`: the name leads
 * to another folder (the real path it led to).
 */
export type FolderRefusal = { ok: false; reason: string; absent?: true; ledTo?: string }

/** Opens and checks `dir`; `create`: make it first when missing (a write), else a missing folder is a refusal. */
export async function openFolder(dir: string, create = true): Promise<Folder | FolderRefusal> {
  let handle: FileHandle | undefined
  try {
    if (create) {
      const refused = await makeFolder(dir)
      if (refused !== undefined) return { ok: false, reason: swappedReason(dir, refused), ledTo: refused }
    }
    // Windows cannot open a folder as a file; its paths are then verified by real path alone.
    if (process.platform !== 'win32')
      handle = await fs.open(dir, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY)
    const opened = await openedFolder(handle, dir)
    if (opened !== dir) {
      await handle?.close().catch(() => undefined)
      return { ok: false, reason: swappedReason(dir, opened), ledTo: opened }
    }
  } catch (error) {
    await handle?.close().catch(() => undefined)
    const code = (error as NodeJS.ErrnoException).code
    const absent = !create && (code === 'ENOENT' || code === 'ENOTDIR')
    // Missing behind a link to elsewhere: writing there would make it elsewhere; said so, not "absent".
    const ledTo = absent ? await missingElsewhere(dir).catch(() => undefined) : undefined
    if (ledTo !== undefined) return { ok: false, reason: swappedReason(dir, ledTo), ledTo }
    return {
      ok: false,
      reason: `could not be written (${(error as Error).message})`,
      ...(absent ? { absent: true as const } : {}),
    }
  }
  if (!cleanedDirs.has(dir)) {
    cleanedDirs.add(dir)
    // Leftovers of a crashed earlier process; never awaited, never fatal: it only tidies up.
    void cleanStrayTempFiles(dir)
  }
  const fd = handle?.fd
  const inDir =
    THROUGH_FD && fd !== undefined
      ? (entry: string) => `/proc/self/fd/${fd}/${entry}`
      : (entry: string) => join(dir, entry)
  return { dir, handle, inDir }
}

/**
 * For a missing `dir`: where it would be made when the deepest folder above it that exists is not the folder
 * its path names (a link to elsewhere, even one that leads nowhere); undefined when it would be made in place.
 */
async function missingElsewhere(dir: string): Promise<string | undefined> {
  let at = dirname(dir)
  for (;;) {
    const info = await fs.lstat(at).catch(() => undefined)
    if (info !== undefined) {
      const real = info.isSymbolicLink()
        ? await fs.realpath(at).catch(async () => resolve(dirname(at), await fs.readlink(at)))
        : await fs.realpath(at)
      return real === at ? undefined : join(real, relative(at, dir))
    }
    if (dirname(at) === at) return undefined
    at = dirname(at)
  }
}

/**
 * Makes `dir` when it is missing, one folder at a time inside the deepest one that exists, after checking that
 * one is the folder its path names: a link in the way (a folder swapped for a link to elsewhere) must not have
 * folders made wherever it leads. Returns where the existing folder really led when it was not that folder.
 */
async function makeFolder(dir: string): Promise<string | undefined> {
  if (
    await fs.stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    )
  )
    return undefined
  if (!THROUGH_FD) {
    await fs.mkdir(dir, { recursive: true })
    return undefined
  }
  const missing: string[] = []
  let at = dir
  while (
    !(await fs.lstat(at).then(
      () => true,
      () => false,
    ))
  ) {
    missing.unshift(basename(at))
    at = dirname(at)
  }
  let handle = await fs.open(at, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY)
  try {
    const real = await fs.readlink(`/proc/self/fd/${handle.fd}`)
    if (real !== at) return real
    for (const name of missing) {
      const entry = `/proc/self/fd/${handle.fd}/${name}`
      await fs.mkdir(entry).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error
      })
      const next = await fs.open(
        entry,
        fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW,
      )
      await handle.close()
      handle = next
    }
    return undefined
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/** Linux names an open folder's entries through its descriptor; checked once. */
export const THROUGH_FD = process.platform === 'linux' && existsSync('/proc/self/fd')

/**
 * The real path of the folder that was opened: on Linux the kernel's own answer for the descriptor; elsewhere
 * the path's real path, trusted only when it is the very folder that is open (same device and inode).
 */
async function openedFolder(handle: FileHandle | undefined, dir: string): Promise<string> {
  if (handle === undefined) return fs.realpath(dir)
  if (THROUGH_FD) return fs.readlink(`/proc/self/fd/${handle.fd}`)
  const [real, byPath, open] = await Promise.all([fs.realpath(dir), fs.stat(dir), handle.stat()])
  return byPath.dev === open.dev && byPath.ino === open.ino ? real : `${real} (another folder)`
}

function swappedReason(dir: string, opened: string): string {
  return `was not written: its folder ${dir} was replaced while the write was under way (it led to ${opened}), so nothing was written there`
}

/**
 * Removes our own temp files (`.<name>.lanes-<hex>.tmp`) left in `dir` by a process that died mid-write.
 * Only those older than `olderThanMs` (a minute): a younger one may belong to a write still under way in
 * another Lanes process. Returns how many were removed; never throws.
 */
export async function cleanStrayTempFiles(dir: string, opts: { olderThanMs?: number } = {}): Promise<number> {
  const olderThanMs = opts.olderThanMs ?? STALE_AFTER_MS
  let removed = 0
  try {
    const names = await fs.readdir(dir)
    const now = Date.now()
    for (const name of names) {
      if (!TEMP_NAME.test(name)) continue
      const full = join(dir, name)
      try {
        const st = await fs.lstat(full)
        if (!st.isFile() || now - st.mtimeMs < olderThanMs) continue
        await fs.unlink(full)
        removed++
      } catch {
        // Gone already (another cleaner) or not ours to remove: leave it.
      }
    }
  } catch {
    // Unreadable directory: nothing to clean.
  }
  return removed
}

/**
 * Checked folders for work over many files (a rewind), each opened and checked once and reused, but never more
 * than POOL_MAX_OPEN held open at once: a rewind of files in a thousand folders must not run out of descriptors
 * (a desktop allows 1024). A folder is used inside `use` only: it is never closed while in use, since its
 * entries' paths go through its descriptor, which could otherwise name another file once reused.
 * `onClose` hears of each folder closed early (a batch makes it durable by path later).
 */
export class FolderPool {
  private readonly entries = new Map<
    string,
    { folder: Promise<Folder | FolderRefusal>; users: number; opened?: Folder | FolderRefusal }
  >()

  constructor(
    private readonly create: boolean,
    private readonly onClose?: (dir: string) => void,
  ) {}

  /** Whether `dir` is open (or being opened) in the pool. */
  has(dir: string): boolean {
    return this.entries.has(dir)
  }

  /**
   * `fn` run at once, without a wait, with a folder the pool has already opened and checked (undefined when it
   * has not: then `use`). Nothing can close the folder while a synchronous `fn` runs; the 20,000 files of a
   * rewind in a few hundred folders are then not each a chain of promises.
   */
  useNow<T>(dir: string, fn: (folder: Folder | FolderRefusal) => T): T | undefined {
    const entry = this.entries.get(dir)
    if (entry?.opened === undefined) return undefined
    this.entries.delete(dir) // to the end: the most recently used
    this.entries.set(dir, entry)
    return fn(entry.opened)
  }

  async use<T>(dir: string, fn: (folder: Folder | FolderRefusal) => Promise<T> | T): Promise<T> {
    let entry = this.entries.get(dir)
    if (entry)
      this.entries.delete(dir) // to the end: the most recently used
    else {
      const opening = { folder: openFolder(dir, this.create), users: 0 } as {
        folder: Promise<Folder | FolderRefusal>
        users: number
        opened?: Folder | FolderRefusal
      }
      void opening.folder.then((folder) => (opening.opened = folder))
      entry = opening
    }
    this.entries.set(dir, entry)
    entry.users++
    try {
      await this.trim()
      return await fn(await entry.folder)
    } finally {
      entry.users--
    }
  }

  /** Every open folder, for a last step over all of them (a batch's fsync); none is closed meanwhile. */
  async each(fn: (folder: Folder) => Promise<void>): Promise<void> {
    await Promise.all(
      [...this.entries.keys()].map((dir) => this.use(dir, (f) => ('inDir' in f ? fn(f) : undefined))),
    )
  }

  private async trim(): Promise<void> {
    for (const [dir, entry] of this.entries) {
      if (this.entries.size <= POOL_MAX_OPEN) return
      if (entry.users > 0) continue
      this.entries.delete(dir)
      const folder = await entry.folder
      if ('inDir' in folder) {
        this.onClose?.(dir)
        await folder.handle?.close().catch(() => undefined)
      }
    }
  }

  async close(): Promise<void> {
    const entries = [...this.entries.values()]
    this.entries.clear()
    for (const entry of entries) {
      const folder = await entry.folder
      if ('inDir' in folder) await folder.handle?.close().catch(() => undefined)
    }
  }
}
