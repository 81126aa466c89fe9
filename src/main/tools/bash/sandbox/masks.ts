import {
  lstatSync,
  promises as fsp,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  watch,
  type Dirent,
  type FSWatcher,
} from 'node:fs'
import { join, sep } from 'node:path'
import {
  BARE_REPO_ROOT_DIRS,
  BARE_REPO_ROOT_FILES,
  GIT_WORKSPACE_RULES,
  isProtectedPath,
  isSecretPath,
} from '../../sensitive-paths'

/**
 * What the sandbox hides or pins inside one workspace, found by name with the one list of secret and
 * protected paths (sensitive-paths.ts): `secrets` are masked (a file reads as empty, a folder as an empty folder),
 * `protected` are bound read-only when the workspace is otherwise writable. Absolute real paths.
 *
 * The tree is walked once per workspace and kept. `current()` revalidates it by one `stat` per folder: creating,
 * renaming or deleting an entry changes its folder's mtime, so a changed folder is read again and only it. A
 * folder whose mtime is close to the moment it was read may change again within the file system's timestamp
 * granularity without its mtime moving ("racy", as git calls it), so it is read again every time until it is
 * old enough. On the benchmark's 100k-file tree (2,400 folders) that costs about 9 ms of CPU.
 *
 * `fresh()`, before each command, does without those `stat`s on Linux: every folder is watched (inotify, through
 * `fs.watch`) from before it is read, so an entry added, removed or renamed in it since marks it changed. It first
 * lets the event loop read every event already queued (a change made before the call is seen, as with a `stat`),
 * then reads again only the changed folders, and `stat`s the sub-folders of those (one may have been replaced by
 * another of the same name, whose watch is not ours); with no change at all, the last walk's findings stand (on
 * the 100k-file tree: 0.03 ms instead of 9). Where a watch cannot be had (another platform, beyond WATCH_BUDGET or
 * the system's limit) that folder is `stat`ed as `current()` does. The kernel drops events when its queue
 * overflows, and says so in a way Node does not pass on; so when many events came since the last look (a quarter
 * of the queue's size), `fresh()` revalidates every folder by `stat`. Each event costs a callback (about 1.5 µs):
 * deleting 20,000 files in watched folders, some 25 ms of CPU.
 */
export interface Masks {
  secrets: MaskPath[]
  protected: MaskPath[]
}

export interface MaskPath {
  path: string
  kind: 'file' | 'dir'
}

/** A workspace with more folders than this is not walked on every command: refused, with the reason. */
export const MAX_FOLDERS = 200_000

/** Folders whose mtime is at most this close to their last read are read again (timestamp granularity). */
const RACY_MS = 2_000

/**
 * Linux only: there `fs.watch` is inotify, whose events are queued in the kernel as the change is made. Elsewhere
 * they may come later (macOS batches them), and a folder is `stat`ed before each command.
 */
const WATCHES = process.platform === 'linux'

/**
 * Watches this process sets at most, over every workspace: a quarter of the user's limit, which the editor and
 * other tools share. The folders beyond it are `stat`ed before each command.
 */
const WATCH_BUDGET = Math.min(50_000, Math.floor(inotifySetting('max_user_watches', 8_192) / 4))

/**
 * More events than this since the last `fresh()` and the kernel's queue (16,384 events unless the system says
 * otherwise) may have overflowed, which drops events silently: every folder is `stat`ed then.
 */
const SUSPECT_EVENTS = Math.floor(inotifySetting('max_queued_events', 16_384) / 4)

/** Events seen by every index's watches in this thread: the kernel's queue is shared by all of them. */
let eventsSeen = 0
/** Watches set by every index in this process. */
let watchesSet = 0

function inotifySetting(name: string, otherwise: number): number {
  try {
    const n = Number(readFileSync(`/proc/sys/fs/inotify/${name}`, 'utf8').trim())
    return Number.isFinite(n) && n > 0 ? n : otherwise
  } catch {
    return otherwise
  }
}

/**
 * Resolves after the event loop has begun a poll of its I/O since the call, which reads every inotify event that
 * was queued before it: the second `setImmediate` runs after the poll that follows the first.
 */
function eventsRead(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
}

/**
 * Protected folders the sandbox pins only in part, so that the program that owns them still works: an
 * approved `git commit` writes objects and refs, but neither the config nor the hooks that run code.
 */
const PINNED_INSIDE = new Map<string, readonly string[]>([['.git', ['config', 'hooks', 'info']]])

/** Bare-repository names that make git treat a workspace root without `.git` as a repository. */
const BARE_REPO_ROOT = [...BARE_REPO_ROOT_FILES, ...BARE_REPO_ROOT_DIRS]

/** What a walk found, before the names pinned inside `.git` are looked up. */
interface Found {
  secrets: MaskPath[]
  protected: MaskPath[]
  /** Folders (`.git`) whose pinned names are looked up each time. */
  pinnedIn: string[]
  /** The root holds no `.git`: its bare-repository names are pinned. */
  bareRoot: boolean
}

interface FolderEntry {
  mtimeMs: number
  readAt: number
  /** `dev:ino` of the folder read: another folder moved to the same path is read again. */
  id: string
  /** Its watch was set before it was read: a change since shows in `MaskIndex.changed`. */
  watched: boolean
  /** Sub-folders (absolute) walked from here. */
  children: string[]
  secrets: MaskPath[]
  protected: MaskPath[]
  /** Folders such as `.git` whose pinned entries are looked up on every call (they are not walked). */
  pinnedIn: string[]
  /** The folder holds a `.git` (a folder, or a file naming one): it is a repository's working tree. */
  repo: boolean
  /** Regular files' names by `dev:ino`, read only once some secret file has other names (hard links). */
  files?: Map<string, string[]>
  /** Could not be read: masked whole, and tried again on every walk (a `chmod` moves no mtime and no watch). */
  unreadable?: true
}

export class MaskIndex {
  private readonly folders = new Map<string, FolderEntry>()
  private readonly watchers = new Map<string, FSWatcher>()
  /** Watched folders with an entry added, removed or renamed since they were last read. */
  private readonly changed = new Set<string>()
  /** `eventsSeen` at the last `fresh()`. */
  private eventsAtFresh = eventsSeen
  /** Counts every change to what the index holds or watches: a walk's result stands while it does not move. */
  private version = 0
  /** The last walk's findings, when every folder it went through was watched and unchanged after it. */
  private lastWalk: { version: number; found: Found } | undefined
  private closed = false

  /** `root` is the workspace's real path. */
  constructor(private readonly root: string) {}

  /**
   * Walks the whole tree once, asynchronously, so that the first `current()` only revalidates (a `stat` per
   * folder): started in the background when a session opens the workspace, it keeps the first command's sandbox
   * set-up from waiting for a walk. Folders are read a few at a time; errors are left for `current()` to report.
   */
  async warm(): Promise<void> {
    const pending = [this.root]
    let count = 0
    while (pending.length > 0) {
      const batch = pending.splice(0, 64)
      count += batch.length
      if (count > MAX_FOLDERS) return
      const children = await Promise.all(
        batch.map(async (dir) => {
          try {
            const watched = this.watch(dir)
            const st = await fsp.stat(dir)
            const readAt = Date.now()
            const names = await fsp.readdir(dir, { withFileTypes: true })
            const entry = this.classify(dir, names, { mtimeMs: st.mtimeMs, readAt, id: idOf(st), watched })
            this.version++
            this.folders.set(dir, entry)
            return entry.children
          } catch {
            return []
          }
        }),
      )
      for (const list of children) pending.push(...list)
    }
  }

  /** Stops watching the tree (the workspace is forgotten). */
  close(): void {
    this.closed = true
    for (const dir of [...this.watchers.keys()]) this.unwatch(dir)
  }

  /** Folders (absolute) that are a repository's working tree (they hold `.git`), as of the last `current()`. */
  repositories(): string[] {
    return [...this.folders].filter(([, entry]) => entry.repo).map(([dir]) => dir)
  }

  /**
   * Every regular file's names by `dev:ino`, in the folders the last `current()` walked (secret folders are not
   * walked: their files are masked whole). Costs a `stat` per file the first time a folder is seen, so it is
   * asked for only when a secret file has more than one name.
   */
  fileIdentities(): Map<string, string[]> {
    const all = new Map<string, string[]>()
    for (const [dir, entry] of this.folders) {
      if (entry.files === undefined) {
        entry.files = new Map()
        let names: string[] = []
        try {
          names = readdirSync(dir)
        } catch {
          // Gone or unreadable since: nothing in it to read.
        }
        for (const name of names) {
          try {
            const st = lstatSync(join(dir, name))
            if (!st.isFile()) continue
            const id = `${st.dev}:${st.ino}`
            entry.files.set(id, [...(entry.files.get(id) ?? []), join(dir, name)])
          } catch {
            // Removed in between.
          }
        }
      }
      for (const [id, paths] of entry.files) all.set(id, [...(all.get(id) ?? []), ...paths])
    }
    return all
  }

  /**
   * Current masks, every folder revalidated by `stat`; throws with a plain reason when the tree cannot be walked.
   * Synchronous: for a caller that cannot wait for the watches' events (see `fresh`).
   */
  current(): Masks {
    return this.walk(false)
  }

  /**
   * Current masks before a command: as `current()`, but a watched folder with no change since it was read is
   * taken as it is, without a `stat` (see the module's note).
   */
  async fresh(): Promise<Masks> {
    await eventsRead()
    const trust = eventsSeen - this.eventsAtFresh < SUSPECT_EVENTS
    this.eventsAtFresh = eventsSeen
    // Nothing seen since a walk that found every folder watched: its findings stand (the pinned names are looked
    // up again: `.git` is not walked, so not watched).
    const last = this.lastWalk
    if (trust && last !== undefined && last.version === this.version) return this.masksOf(last.found)
    return this.walk(trust)
  }

  private walk(trustWatches: boolean): Masks {
    const seen = new Set<string>()
    const pending = [this.root]
    /**
     * Sub-folders of a folder read again in this walk: one may be another folder under the same name (its watch
     * normally says so too, as the old folder moved or was deleted; this does not rest on that event alone).
     */
    const check = new Set<string>()
    while (pending.length > 0) {
      const dir = pending.pop() as string
      if (seen.has(dir)) continue
      seen.add(dir)
      if (seen.size > MAX_FOLDERS)
        throw new Error(
          `the workspace has more than ${MAX_FOLDERS.toLocaleString('en')} folders, too many to check for secret files before each command`,
        )
      let entry = this.folders.get(dir)
      if (trustWatches && entry !== undefined && this.unchanged(dir, entry) && !check.has(dir)) {
        pending.push(...entry.children)
        continue
      }
      let mtimeMs: number
      let id: string
      try {
        const st = statSync(dir)
        mtimeMs = st.mtimeMs
        id = idOf(st)
      } catch {
        this.forget(dir) // removed since: nothing left in it to hide
        continue
      }
      if (
        !entry ||
        entry.unreadable === true ||
        entry.id !== id ||
        entry.mtimeMs !== mtimeMs ||
        this.changed.has(dir) ||
        entry.readAt - entry.mtimeMs < RACY_MS
      ) {
        // Another folder under this name: the watch there is the old one's, wherever it went.
        if (entry && entry.id !== id) this.unwatch(dir)
        entry = this.read(dir, mtimeMs, id)
        this.folders.set(dir, entry)
        for (const child of entry.children) check.add(child)
      }
      pending.push(...entry.children)
    }
    for (const dir of [...this.folders.keys()]) if (!seen.has(dir)) this.forget(dir)
    const found: Found = { secrets: [], protected: [], pinnedIn: [], bareRoot: false }
    let allWatched = true
    for (const dir of seen) {
      const entry = this.folders.get(dir)
      if (!entry) continue
      found.secrets.push(...entry.secrets)
      found.protected.push(...entry.protected)
      found.pinnedIn.push(...entry.pinnedIn)
      if (!this.unchanged(dir, entry)) allWatched = false
    }
    found.bareRoot = !this.folders.get(this.root)?.pinnedIn.includes(join(this.root, '.git'))
    this.lastWalk = allWatched ? { version: this.version, found } : undefined
    return this.masksOf(found)
  }

  /** A walk's findings as masks, with the names pinned inside `.git` (and at a bare root) as they are now. */
  private masksOf(found: Found): Masks {
    const pinned = found.pinnedIn.flatMap((folder) => this.pinned(folder))
    return {
      secrets: [...found.secrets],
      protected: [
        ...found.protected,
        ...pinned,
        ...(found.bareRoot ? this.existingNames(this.root, BARE_REPO_ROOT) : []),
      ],
    }
  }

  /** Watched since before it was read, and nothing added, removed or renamed in it since. */
  private unchanged(dir: string, entry: FolderEntry): boolean {
    return entry.watched && entry.unreadable !== true && this.watchers.has(dir) && !this.changed.has(dir)
  }

  /** Watches `dir` (if it can be): true when its changes from now on will show in `changed`. */
  private watch(dir: string): boolean {
    if (!WATCHES || this.closed) return false
    if (this.watchers.has(dir)) return true
    if (watchesSet >= WATCH_BUDGET) return false
    try {
      // Not persistent: a watch never keeps the process alive (`lanes run` exits when its run ends).
      const watcher = watch(dir, { persistent: false }, (type) => {
        eventsSeen++
        // 'change' is a file's content or attributes; 'rename' an entry added, removed or renamed.
        if (type !== 'rename') return
        this.changed.add(dir)
        this.version++
      })
      watcher.on('error', () => {
        this.changed.add(dir)
        this.unwatch(dir)
      })
      this.watchers.set(dir, watcher)
      watchesSet++
      return true
    } catch {
      return false // the system's limit on watches, or gone: `stat`ed instead
    }
  }

  private unwatch(dir: string): void {
    this.version++
    const watcher = this.watchers.get(dir)
    if (watcher === undefined) return
    watcher.close()
    this.watchers.delete(dir)
    watchesSet--
  }

  private forget(dir: string): void {
    this.folders.delete(dir)
    this.changed.delete(dir)
    this.unwatch(dir)
  }

  private read(dir: string, mtimeMs: number, id: string): FolderEntry {
    this.version++
    // Watched before it is read, and marked unchanged before: a change during the read marks it again.
    const watched = this.watch(dir)
    this.changed.delete(dir)
    const readAt = Date.now()
    let names: Dirent[]
    try {
      names = readdirSync(dir, { withFileTypes: true })
    } catch (err) {
      if (dir === this.root) throw err
      // What it holds is unknown, so it is hidden whole: unreadable to the sandbox now, but a command could
      // `chmod` it open and read a secret file in it that no scan has seen (nor its values).
      return {
        mtimeMs,
        readAt,
        id,
        watched,
        children: [],
        secrets: [{ path: dir, kind: 'dir' }],
        protected: [],
        pinnedIn: [],
        repo: false,
        unreadable: true,
      }
    }
    return this.classify(dir, names, { mtimeMs, readAt, id, watched })
  }

  private classify(
    dir: string,
    names: Dirent[],
    read: Pick<FolderEntry, 'mtimeMs' | 'readAt' | 'id' | 'watched'>,
  ): FolderEntry {
    const entry: FolderEntry = {
      ...read,
      children: [],
      secrets: [],
      protected: [],
      pinnedIn: [],
      repo: false,
    }
    const relDir = dir === this.root ? '' : dir.slice(this.root.length + 1)
    for (const d of names) {
      if (d.name === '.git') entry.repo = true
      const abs = join(dir, d.name)
      const rel = relDir === '' ? d.name : `${relDir}/${d.name}`
      if (d.isSymbolicLink()) {
        // A link is not mounted over (bwrap refuses); what it points to is. A secret name pointing at a
        // file with a plain name inside the workspace hides that file; a target outside is not in the
        // sandbox at all.
        if (isSecretPath(rel)) {
          const target = this.realTarget(abs)
          if (target) entry.secrets.push(target)
        }
        continue
      }
      const kind = d.isDirectory() ? 'dir' : 'file'
      if (isSecretPath(rel)) {
        entry.secrets.push({ path: abs, kind })
        continue
      }
      if (kind === 'dir' && PINNED_INSIDE.has(d.name)) {
        entry.pinnedIn.push(abs)
        continue
      }
      // The root's bare-repository names are added by `current`, which knows whether the root has a `.git`.
      if (isProtectedPath(rel, GIT_WORKSPACE_RULES)) entry.protected.push({ path: abs, kind })
      if (kind === 'dir') entry.children.push(abs)
    }
    return entry
  }

  private realTarget(link: string): MaskPath | null {
    try {
      const real = realpathSync(link)
      if (real !== this.root && !real.startsWith(this.root + sep)) return null
      return { path: real, kind: statSync(real).isDirectory() ? 'dir' : 'file' }
    } catch {
      return null // dangling: nothing to read
    }
  }

  private existing(path: string): MaskPath | null {
    try {
      const st = lstatSync(path)
      if (st.isSymbolicLink()) return null
      return { path, kind: st.isDirectory() ? 'dir' : 'file' }
    } catch {
      return null
    }
  }

  private pinned(folder: string): MaskPath[] {
    const name = folder.slice(folder.lastIndexOf(sep) + 1)
    return this.existingNames(folder, PINNED_INSIDE.get(name) ?? [])
  }

  private existingNames(folder: string, names: readonly string[]): MaskPath[] {
    return names.map((name) => this.existing(join(folder, name))).filter((p): p is MaskPath => p !== null)
  }
}

function idOf(st: { dev: number; ino: number }): string {
  return `${st.dev}:${st.ino}`
}
