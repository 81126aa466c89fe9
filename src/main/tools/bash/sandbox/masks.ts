import { lstatSync, promises as fsp, readdirSync, realpathSync, statSync, type Dirent } from 'node:fs'
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
 * The tree is walked once per workspace and kept, then revalidated before every command by one `stat` per
 * folder: creating, renaming or deleting an entry changes its folder's mtime, so a changed folder is read
 * again and only it. A folder whose mtime is close to the moment it was read may change again within the
 * file system's timestamp granularity without its mtime moving ("racy", as git calls it), so it is read
 * again every time until it is old enough. On the benchmark's 100k-file tree (2,400 folders) the revalidation
 * costs a few milliseconds; the first walk, once, about as long as a `git status`.
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
 * Protected folders the sandbox pins only in part, so that the program that owns them still works: an
 * approved `git commit` writes objects and refs, but neither the config nor the hooks that run code.
 */
const PINNED_INSIDE: Record<string, readonly string[]> = { '.git': ['config', 'hooks', 'info'] }

/** Bare-repository names that make git treat a workspace root without `.git` as a repository. */
const BARE_REPO_ROOT = [...BARE_REPO_ROOT_FILES, ...BARE_REPO_ROOT_DIRS]

interface FolderEntry {
  mtimeMs: number
  readAt: number
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
}

export class MaskIndex {
  private readonly folders = new Map<string, FolderEntry>()

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
            const { mtimeMs } = await fsp.stat(dir)
            const readAt = Date.now()
            const names = await fsp.readdir(dir, { withFileTypes: true })
            const entry = this.classify(dir, names, mtimeMs, readAt)
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

  /** Current masks; throws with a plain reason when the tree cannot be walked. */
  current(): Masks {
    const seen = new Set<string>()
    const pending = [this.root]
    while (pending.length > 0) {
      const dir = pending.pop() as string
      if (seen.has(dir)) continue
      seen.add(dir)
      if (seen.size > MAX_FOLDERS)
        throw new Error(
          `the workspace has more than ${MAX_FOLDERS.toLocaleString('en')} folders, too many to check for secret files before each command`,
        )
      let mtimeMs: number
      try {
        mtimeMs = statSync(dir).mtimeMs
      } catch {
        this.folders.delete(dir) // removed since: nothing left in it to hide
        continue
      }
      let entry = this.folders.get(dir)
      if (!entry || entry.mtimeMs !== mtimeMs || entry.readAt - entry.mtimeMs < RACY_MS) {
        entry = this.read(dir, mtimeMs)
        this.folders.set(dir, entry)
      }
      pending.push(...entry.children)
    }
    for (const dir of this.folders.keys()) if (!seen.has(dir)) this.folders.delete(dir)
    const masks: Masks = { secrets: [], protected: [] }
    for (const dir of seen) {
      const entry = this.folders.get(dir)
      if (!entry) continue
      masks.secrets.push(...entry.secrets)
      masks.protected.push(...entry.protected)
      for (const folder of entry.pinnedIn) masks.protected.push(...this.pinned(folder))
    }
    if (!this.folders.get(this.root)?.pinnedIn.includes(join(this.root, '.git')))
      masks.protected.push(...this.existingNames(this.root, BARE_REPO_ROOT))
    return masks
  }

  private read(dir: string, mtimeMs: number): FolderEntry {
    const readAt = Date.now()
    let names: Dirent[]
    try {
      names = readdirSync(dir, { withFileTypes: true })
    } catch (err) {
      if (dir === this.root) throw err
      // Unreadable to us: unreadable to the sandbox too.
      return { mtimeMs, readAt, children: [], secrets: [], protected: [], pinnedIn: [], repo: false }
    }
    return this.classify(dir, names, mtimeMs, readAt)
  }

  private classify(dir: string, names: Dirent[], mtimeMs: number, readAt: number): FolderEntry {
    const entry: FolderEntry = {
      mtimeMs,
      readAt,
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
      if (kind === 'dir' && d.name in PINNED_INSIDE) {
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
    return this.existingNames(folder, PINNED_INSIDE[name] ?? [])
  }

  private existingNames(folder: string, names: readonly string[]): MaskPath[] {
    return names.map((name) => this.existing(join(folder, name))).filter((p): p is MaskPath => p !== null)
  }
}
