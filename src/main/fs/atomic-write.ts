import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fchownSync,
  fdatasync,
  fstatSync,
  fsyncSync,
  openSync,
  promises as fs,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import type { Stats } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { FolderPool, openFolder, tempNameFor, THROUGH_FD, type Folder } from './checked-folder'
import { HeldFiles } from './held-files'
import { BLOCKING_MAX_BYTES } from './quick-read'

export { cleanStrayTempFiles } from './checked-folder'

/**
 * Crash-safe file replacement: whoever looks at the target (or a crash at any instant) sees either the whole
 * old content or the whole new content, never a torn mix. The data goes to a temp file in the same directory
 * (same file system, so `rename` is atomic), is fsynced, renamed over the target, and the directory is
 * fsynced so the rename itself survives a power loss.
 *
 * The folder is the one that was checked, not whatever its name leads to by the time of the write: swapping a
 * checked folder for a symbolic link while a write is under way must not put the file outside the workspace.
 * The folder is opened first and its real path compared with the checked one; then, on Linux, every step
 * goes through that open folder (`/proc/self/fd/<dir>/<name>`, which resolves through the descriptor, as
 * openat and renameat would), so a later swap changes nothing. Elsewhere the steps use the path and the
 * result is verified after the rename: a write that landed in another folder is removed and reported.
 */

export type AtomicWriteResult =
  | { ok: true; mtimeMs: number; size: number; created: boolean }
  /** `reason` is a phrase that follows the file's name: "<file> is read-only (mode 444), ...". */
  | { ok: false; reason: string; conflict?: boolean }

export interface AtomicWriteOptions {
  /**
   * What the caller planned against, checked just before the rename: `null` when the target must not exist,
   * otherwise the mtime and size it must still have. Narrows the window in which a change made by someone
   * else between our read and our write would be overwritten.
   */
  expect?: { mtimeMs: number; size: number } | null
  /** The mode of a new file (default: 0o666 less the umask, as any editor would); an existing file keeps its own. */
  mode?: number
  /**
   * The existing file as the caller has just seen it (its lstat: a regular file), so it is not looked at once
   * more before the write (a rewind of many files, which checked each one a moment ago). Used only with
   * `expect`, whose check just before the rename still catches a change made since.
   */
  seen?: { mode: number; uid: number; gid: number }
}

/** What a write does with its temp file: a FileHandle, or a DirectFile. */
interface TempFile {
  writeFile(data: string | Buffer): Promise<void>
  stat(): Promise<Stats>
  chmod(mode: number): Promise<void>
  chown(uid: number, gid: number): Promise<void>
  sync(): Promise<void>
  datasync(): Promise<void>
  close(): Promise<void>
}

/**
 * A temp file written by direct system calls: a small file in a batch (a rewind of a hundred files), where each
 * call is microseconds and a trip through the thread pool tens of them; the batch's caller gives the event loop
 * back between files. Only the batch's closing fsync, side by side with the others, goes through the pool.
 */
class DirectFile implements TempFile {
  constructor(private readonly fd: number) {}
  async writeFile(data: string | Buffer): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    for (let at = 0; at < bytes.length;) at += writeSync(this.fd, bytes, at, bytes.length - at, at)
  }
  async stat(): Promise<Stats> {
    return fstatSync(this.fd)
  }
  async chmod(mode: number): Promise<void> {
    fchmodSync(this.fd, mode)
  }
  async chown(uid: number, gid: number): Promise<void> {
    fchownSync(this.fd, uid, gid)
  }
  async sync(): Promise<void> {
    fsyncSync(this.fd)
  }
  datasync(): Promise<void> {
    return new Promise((resolve, reject) =>
      fdatasync(this.fd, (error) => (error ? reject(error) : resolve())),
    )
  }
  async close(): Promise<void> {
    closeSync(this.fd)
  }
}

/** The calls a write makes by path: through the thread pool, or directly (DirectFile). */
interface WriteCalls {
  stat(path: string): Promise<Stats>
  create(path: string, mode: number): Promise<TempFile>
  unlink(path: string): Promise<void>
  rename(from: string, to: string): Promise<void>
}

const POOLED: WriteCalls = {
  stat: (path) => fs.stat(path),
  create: (path, mode) => fs.open(path, 'wx', mode),
  unlink: (path) => fs.unlink(path),
  rename: (from, to) => fs.rename(from, to),
}

const DIRECT: WriteCalls = {
  stat: async (path) => statSync(path),
  create: async (path, mode) => new DirectFile(openSync(path, 'wx', mode)),
  unlink: async (path) => unlinkSync(path),
  // The rename stays on the thread pool: replacing a file whose new data is not written yet makes ext4 start
  // writing it then (and free the old file's blocks), which blocks for a while and overlaps only when several
  // renames are in flight (see quick-read.ts). Unless the batch holds the file it replaces (lookHolding): the
  // blocks are then freed later, and the rename is made directly (writeInFolder).
  rename: (from, to) => fs.rename(from, to),
}

/** Files a batch keeps open until its `sync()`; the rest are closed and reopened then. */
const BATCH_MAX_OPEN = 256
/**
 * Replaced files a batch keeps open past their renames (see WriteBatch.lookHolding): on Linux, where it pays
 * (ext4 frees a replaced file's blocks inside the rename otherwise). O_NONBLOCK: a FIFO put in the file's place
 * cannot hang the open; O_NOFOLLOW: a link put there is looked at by path, as before.
 */
const HOLD_REPLACED = process.platform === 'linux'
const HOLD_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

export async function writeFileAtomic(
  path: string,
  data: string | Buffer,
  opts: AtomicWriteOptions & {
    /** One of many writes made together (a rewind): its folder and its durability are the batch's. */
    batch?: WriteBatch
  } = {},
): Promise<AtomicWriteResult> {
  const dir = dirname(path)
  const batch = opts.batch
  if (batch)
    return batch.folders.use(dir, (folder) =>
      'reason' in folder ? folder : writeInFolder(folder, basename(path), data, opts, batch),
    )
  const folder = await openFolder(dir)
  if ('reason' in folder) return folder
  try {
    return await writeInFolder(folder, basename(path), data, opts)
  } finally {
    await folder.handle?.close().catch(() => undefined)
  }
}

/**
 * Removes a file through its checked folder, as a write goes (a folder swapped for a link meanwhile cannot
 * turn the removal onto a file elsewhere); an absent file is already removed. In a batch the folder's fsync is
 * the batch's; otherwise the folder is fsynced so the removal survives a power loss.
 */
export async function removeFile(
  path: string,
  opts: { batch?: WriteBatch } = {},
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const dir = dirname(path)
  // A folder that is gone holds no file to remove; it is not made again to find that out. (One the batch has
  // open already was there: not looked at again for each of its files.)
  if (!opts.batch?.folders.has(dir) && !existsSync(dir)) return { ok: true }
  const remove = async (folder: Folder): Promise<{ ok: true } | { ok: false; reason: string }> => {
    // In a batch (a rewind removing 20,000 files), a direct system call: an unlink is microseconds, a trip
    // through the thread pool tens of them; the batch's caller gives the event loop back between files.
    if (opts.batch) return removeNow(folder.inDir(basename(path)))
    try {
      await fs.unlink(folder.inDir(basename(path)))
      await folder.handle?.sync().catch(() => undefined)
      return { ok: true }
    } catch (error) {
      return removal(error)
    }
  }
  if (opts.batch) {
    // Its folder open already (the next of a folder's files): removed at once, without a chain of promises.
    const now = opts.batch.folders.useNow(dir, (folder) =>
      'reason' in folder ? folder : removeNow(folder.inDir(basename(path))),
    )
    if (now !== undefined) return now
    return opts.batch.folders.use(dir, (folder) => ('reason' in folder ? folder : remove(folder)))
  }
  const folder = await openFolder(dir, false)
  if ('reason' in folder) return folder
  try {
    return await remove(folder)
  } finally {
    await folder.handle?.close().catch(() => undefined)
  }
}

/** Removes an entry by a direct system call (in a batch); an absent one is already removed. */
function removeNow(entry: string): { ok: true } | { ok: false; reason: string } {
  try {
    unlinkSync(entry)
    return { ok: true }
  } catch (error) {
    return removal(error)
  }
}

function removal(error: unknown): { ok: true } | { ok: false; reason: string } {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true }
  return { ok: false, reason: `could not be removed (${(error as Error).message})` }
}

/**
 * Many files replaced together (a rewind of a hundred files). Each folder is opened and checked once, exactly as
 * a single write checks it, and the writes then go into that very folder. Durability is shared too: a write in
 * a batch does not fsync its temp file before the rename (one fsync each would wait for a journal commit each);
 * it keeps the file open, and `sync()` flushes them all side by side, then their folders, so the file system
 * commits them together. Until `sync()` resolves, each replacement is atomic for every reader and for a crash
 * of the app, and only a power loss can undo it: callers keep a journal for that (the rewind's intent).
 * `close()` (always, after `sync()` or on failure) releases what is still open.
 */
export class WriteBatch {
  /** Folders written into, closed early beyond the pool's bound: made durable by path by `sync()`. */
  private readonly closedFolders: string[] = []
  /** The folders written into (made when missing), checked once each. */
  readonly folders = new FolderPool(true, (dir) => this.closedFolders.push(dir))
  /** Written files still open, to be flushed by `sync()`. */
  private readonly open: TempFile[] = []
  /** Written files beyond BATCH_MAX_OPEN, closed already: reopened by `sync()`. */
  private readonly closed: string[] = []
  /** What renames wait for while it is pending (see `holdRenamesUntil`). */
  private held: Promise<void> | undefined
  /** Replaced files kept open past their renames (see `lookHolding`), closed by `sync()` or `close()`. */
  private readonly replaced = new HeldFiles(BATCH_MAX_OPEN)

  /**
   * Until `until` resolves (the caller's journal made durable), a write in the batch goes only as far as its temp
   * file, whose data is synced at once, and renames it in after: nothing in its folder changes before the journal
   * covers it, and the journal and the files' data cost one round of fsyncs side by side instead of two in a row.
   * When `until` rejects, those writes fail and leave nothing behind. Writes begun after it resolved go as usual.
   */
  holdRenamesUntil(until: Promise<void>): void {
    this.held = until
    until.then(
      () => {
        if (this.held === until) this.held = undefined
      },
      () => undefined,
    )
  }

  /** What a write must wait for before its rename, if anything. */
  gate(): Promise<void> | undefined {
    return this.held
  }

  /** Takes a written file (still open) whose fsync is deferred; closes it at once when enough are open. */
  async keep(file: TempFile, path: string): Promise<void> {
    if (this.open.length < BATCH_MAX_OPEN && process.platform !== 'win32') {
      this.open.push(file)
      return
    }
    await file.close()
    this.closed.push(path)
  }

  /**
   * The file a write is about to replace, looked at (its fstat) through a descriptor the batch keeps open until
   * `sync()`: the rename then only unlinks a name, and freeing the replaced file's blocks (ext4 does it inside
   * the rename of the last name, a good part of a rename's cost) happens when the descriptor is closed, side by
   * side with the batch's fsyncs. null: nothing there; undefined: not held (another platform, enough open, or
   * not to be opened: a link, an unreadable file), for the caller to look by path.
   */
  lookHolding(entry: string): Stats | null | undefined {
    if (!HOLD_REPLACED || !this.replaced.hasRoom) return undefined
    let fd: number
    try {
      fd = openSync(entry, HOLD_FLAGS)
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined
    }
    this.replaced.hold(fd)
    return fstatSync(fd)
  }

  /** A folder whose entries changed outside the batch's writes (a folder removed from it): fsynced by `sync()`. */
  touched(dir: string): void {
    this.closedFolders.push(dir)
  }

  /**
   * Makes every file written in the batch, and its name in its folder, survive a power loss. The files and their
   * folders are fsynced side by side, in one round: ordering them (files first) would buy nothing, since every
   * rename already happened before any fsync and the file system may have committed it meanwhile; until this
   * resolves, the caller's journal is what covers a power loss, and after it everything is on disk either way.
   */
  async sync(): Promise<void> {
    await Promise.all([
      ...this.open.map((file) => file.datasync()),
      this.replaced.release(),
      ...this.closed.map(async (path) => {
        const file = await fs.open(path, 'r').catch(() => undefined)
        if (!file) return // removed since: nothing to make durable
        try {
          await file.datasync()
        } finally {
          await file.close().catch(() => undefined)
        }
      }),
      // Some platforms and file systems (Windows, some network mounts) cannot fsync a folder; the renames have
      // still happened, only their durability across a power loss is weaker there. A folder closed early is
      // reopened by its path: only the durability of its names would be at stake if it was swapped since.
      this.folders.each((folder) => folder.handle?.sync().catch(() => undefined) ?? Promise.resolve()),
      ...[...new Set(this.closedFolders)].map(async (dir) => {
        const folder = await fs.open(dir, 'r').catch(() => undefined)
        await folder?.sync().catch(() => undefined)
        await folder?.close().catch(() => undefined)
      }),
    ])
  }

  async close(): Promise<void> {
    const files = this.open.splice(0)
    await Promise.all([...files.map((file) => file.close().catch(() => undefined)), this.replaced.release()])
    await this.folders.close()
  }
}

async function writeInFolder(
  folder: Folder,
  name: string,
  data: string | Buffer,
  opts: AtomicWriteOptions,
  batch?: WriteBatch,
): Promise<AtomicWriteResult> {
  const { dir, handle: dirHandle, inDir } = folder
  const tmpName = tempNameFor(name)
  const calls =
    batch !== undefined &&
    (typeof data === 'string' ? Buffer.byteLength(data) : data.length) <= BLOCKING_MAX_BYTES
      ? DIRECT
      : POOLED
  let fh: TempFile | undefined
  let tmpCreated = false
  try {
    let existing: { mode: number; uid: number; gid: number } | null = null
    if (opts.seen && opts.expect) existing = opts.seen
    else {
      let info: Stats | null = null
      try {
        info = await calls.stat(inDir(name))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
      if (info !== null && !info.isFile())
        return { ok: false, reason: 'exists and is not a regular file, so it was not replaced' }
      existing = info
    }
    // Write permission is checked by the kernel on the directory only (and root bypasses it): honour a file
    // the user made read-only on purpose.
    if (existing !== null && (existing.mode & 0o222) === 0)
      return {
        ok: false,
        reason: `is read-only (mode ${(existing.mode & 0o7777).toString(8)}), so it was not changed`,
      }

    // 0o666 lets the umask pick a new file's mode (0o644 usually), as any editor would.
    fh = await calls.create(inDir(tmpName), existing === null ? (opts.mode ?? 0o666) : existing.mode & 0o7777)
    tmpCreated = true
    await fh.writeFile(data)
    if (!batch) await fh.sync()
    const written = await fh.stat()
    if (existing !== null) {
      // The umask also applied to the mode given to open: the old mode is set exactly when it took some away
      // (rarely: a file's mode seldom has a bit the umask clears), before the rename, so no reader ever sees
      // the file with another mode.
      if ((written.mode & 0o7777) !== (existing.mode & 0o7777)) await fh.chmod(existing.mode & 0o7777)
      const uid = process.getuid?.()
      if (uid !== undefined && (existing.uid !== uid || existing.gid !== process.getgid?.())) {
        // Running as root on someone else's file: keep its owner. Without privileges this fails; the file
        // then belongs to us, which is what any editor's save does too.
        await fh.chown(existing.uid, existing.gid).catch(() => undefined)
      }
    }
    // A batch whose caller's journal is not durable yet: the temp file's data is synced now, side by side with the
    // journal, and the rename waits for it (a rejected gate fails the write and removes the temp file).
    const gate = batch?.gate()
    if (gate !== undefined) {
      const [synced, opened] = await Promise.allSettled([fh.datasync(), gate])
      if (synced.status === 'rejected') throw synced.reason
      if (opened.status === 'rejected') throw opened.reason
      await fh.close()
    } else if (batch) await batch.keep(fh, join(dir, name))
    else await fh.close()
    fh = undefined

    let held: Stats | null | undefined
    if (opts.expect !== undefined) {
      held = opts.expect !== null && calls === DIRECT ? batch?.lookHolding(inDir(name)) : undefined
      const now =
        held !== undefined
          ? held
          : await calls.stat(inDir(name)).catch((error: NodeJS.ErrnoException) => {
              if (error.code === 'ENOENT') return null
              throw error
            })
      const expected = opts.expect
      const same =
        expected === null
          ? now === null
          : now !== null && now.mtimeMs === expected.mtimeMs && now.size === expected.size
      if (!same) {
        await calls.unlink(inDir(tmpName)).catch(() => undefined)
        tmpCreated = false
        return {
          ok: false,
          conflict: true,
          reason: 'changed on disk while the change was being prepared, so it was not overwritten',
        }
      }
    }

    // The file it replaces held open (the batch frees it later), a rename is microseconds: a direct system call.
    if (held) renameSync(inDir(tmpName), inDir(name))
    else await calls.rename(inDir(tmpName), inDir(name))
    tmpCreated = false
    if (!THROUGH_FD) {
      const elsewhere = await landedElsewhere(dir, name, dirHandle, written)
      if (elsewhere !== null) return { ok: false, reason: elsewhere }
    }
    // So the rename itself survives a power loss. Some platforms and file systems (Windows, some network
    // mounts) cannot fsync a folder; the rename has still happened, only its durability is weaker there.
    if (!batch) await dirHandle?.sync().catch(() => undefined)
    return { ok: true, mtimeMs: written.mtimeMs, size: written.size, created: existing === null }
  } catch (error) {
    if (fh !== undefined) await fh.close().catch(() => undefined)
    if (tmpCreated) await calls.unlink(inDir(tmpName)).catch(() => undefined)
    return { ok: false, reason: `could not be written (${(error as Error).message})` }
  }
}

/**
 * After a rename by path (not Linux): the new file must be in the folder that was checked. If the folder was
 * swapped in between, the file is removed from wherever it landed, and the write reported as not done.
 */
async function landedElsewhere(
  dir: string,
  name: string,
  dirHandle: FileHandle | undefined,
  written: Stats,
): Promise<string | null> {
  const [open, real] = await Promise.all([
    dirHandle?.stat() ?? fs.stat(dir),
    fs.realpath(dir).catch(() => dir),
  ])
  const target = await fs.lstat(join(dir, name)).catch(() => null)
  const byPath = await fs.stat(dir).catch(() => null)
  const inPlace =
    real === dir &&
    byPath !== null &&
    byPath.ino === open.ino &&
    byPath.dev === open.dev &&
    target !== null &&
    target.ino === written.ino
  if (inPlace) return null
  const landed = join(real, name)
  const there = await fs.lstat(landed).catch(() => null)
  if (there !== null && there.ino === written.ino) await fs.unlink(landed).catch(() => undefined)
  return `was not written: its folder ${dir} was replaced while the write was under way, so the file landed in ${real}; it was removed from there`
}

/**
 * Replaces a JSON file (settings, rules) in one step, so a crash never leaves half a file that would lose
 * everything in it. Throws with the file's name on failure: these files belong to the app, not the user.
 */
export async function writeJsonAtomic(
  path: string,
  value: unknown,
  opts: { mode?: number } = {},
): Promise<void> {
  // The app's own folders may be reached through links (a dotfiles `~/.config`): written in their real place.
  const real = await fs
    .mkdir(dirname(path), { recursive: true })
    .then(async () => join(await fs.realpath(dirname(path)), basename(path)))
    .catch(() => path)
  const written = await writeFileAtomic(real, JSON.stringify(value, null, 2), opts)
  if (!written.ok) throw new Error(`${path} ${written.reason}`)
}
