import { existsSync, lstatSync, mkdirSync, promises as fs, readdirSync, renameSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { RewindChange } from '../../shared/events'
import { openFolder } from '../fs/checked-folder'
import { parseToken } from '../fs/path-token'

/**
 * Folders a rewind removes whole (issue 20: undoing an `npm install` that made 20,000 files): a folder the
 * undone calls made, everything in it unchanged since and going too, is moved by one rename into the rewind's
 * trash, a folder in the session's store folder, instead of being emptied file by file. Nothing in it needs
 * reading or keeping: putting it back (a roll-back, a rewind a crash cut short) is the rename back. The rewind's
 * journal (rewind.started `trash`) names the trash and each folder's place in it (`<dir>/<index>`); the trash
 * is deleted once the rewind is done and durable, in the background (the user does not wait for it), and what a
 * crash left of it is deleted on the next start (clearTrash).
 *
 * Only where the trash is on the folder's file system (a rename cannot cross one; the caller falls back to
 * removing file by file, keeping every content first, when the rename says EXDEV after all).
 */

export interface Trash {
  dir: string
  /** The folders moved whole, in order: the i-th goes to `<dir>/<i>`. */
  folders: string[]
}

/** The session's trash folder: inside the store's folder (`preimagesDir`), which the tools never read. */
export function trashRoot(storeDir: string): string {
  return join(storeDir, 'trash')
}

/** The folders of `changes` that can go whole, outermost only (see the module's comment). */
export function foldersToTrash(
  changes: readonly RewindChange[],
  root: string,
  /** Paths whose content is kept whatever happens (a conflict the user chose to rewind anyway). */
  keep: ReadonlySet<string>,
): string[] {
  const byPath = new Map<string, RewindChange>()
  const children = new Map<string, Set<string>>()
  for (const change of changes) {
    byPath.set(change.path, change)
    const parent = dirname(change.path)
    let names = children.get(parent)
    if (!names) children.set(parent, (names = new Set()))
    names.add(change.path.slice(parent.length + 1))
  }
  const removed = changes.filter((c) => parseToken(c.from).kind === 'dir' && c.to === null)
  if (removed.length === 0) return []
  let rootDev: number | undefined
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 })
    rootDev = statSync(root).dev
  } catch {
    return []
  }
  const whole = new Map<string, boolean>()
  const goesWhole = (path: string): boolean => {
    const known = whole.get(path)
    if (known !== undefined) return known
    const change = byPath.get(path)
    let ok = change !== undefined && change.to === null && !keep.has(path)
    if (ok && parseToken(change?.from ?? null).kind === 'dir') {
      // Everything in it now is a change of the rewind that goes too: nothing the user added, nothing skipped.
      const planned = children.get(path) ?? new Set<string>()
      let names: string[] = []
      try {
        names = readdirSync(path)
      } catch {
        ok = false
      }
      ok &&=
        names.length === planned.size &&
        names.every((name) => planned.has(name) && goesWhole(join(path, name)))
    }
    whole.set(path, ok)
    return ok
  }
  const out: string[] = []
  for (const change of removed) {
    if (!goesWhole(change.path) || goesWhole(dirname(change.path))) continue
    try {
      if (lstatSync(change.path).dev === rootDev) out.push(change.path)
    } catch {
      // gone meanwhile: removed the usual way (or found missing)
    }
  }
  return out
}

/** Whether `path` is `folder` or inside it. */
export function inFolder(path: string, folder: string): boolean {
  return path === folder || (path.startsWith(folder) && path[folder.length] === '/')
}

/** The trashed folder that holds `path` (or is it), if any. */
export function trashedAbove(path: string, folders: ReadonlySet<string>): string | undefined {
  for (let at = path.indexOf('/', 1); ; at = path.indexOf('/', at + 1)) {
    const folder = at < 0 ? path : path.slice(0, at)
    if (folders.has(folder)) return folder
    if (at < 0) return undefined
  }
}

/**
 * `fn` with the entry of `path` named through its checked folder (checked-folder.ts), as writes go: a folder on
 * the way swapped for a link to elsewhere since the rewind looked is refused, never followed.
 */
async function throughFolder<T>(path: string, create: boolean, fn: (entry: string) => T): Promise<T> {
  const folder = await openFolder(dirname(path), create)
  if ('reason' in folder) throw new Error(`its folder ${folder.reason}`)
  try {
    return fn(folder.inDir(basename(path)))
  } finally {
    await folder.handle?.close().catch(() => undefined)
  }
}

/**
 * Moves the i-th folder into the trash. False when the rename cannot cross to the trash's file system (EXDEV:
 * another mount of it), which nothing above could tell; any other failure throws.
 */
export async function moveToTrash(trash: Trash, i: number): Promise<boolean> {
  try {
    await throughFolder(trash.folders[i] as string, false, (entry) =>
      renameSync(entry, join(trash.dir, String(i))),
    )
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EXDEV') return false
    throw error
  }
}

/**
 * What is in the i-th trashed folder that the rewind did not plan to remove (`expected`: the paths it removes,
 * as they were in the workspace): something put there between the rewind's last look and its rename.
 */
export function strayInTrash(trash: Trash, i: number, expected: ReadonlySet<string>): string | undefined {
  const folder = trash.folders[i] as string
  const walk = (inTrash: string, was: string): string | undefined => {
    for (const entry of readdirSync(inTrash, { withFileTypes: true })) {
      const path = join(was, entry.name)
      if (!expected.has(path)) return path
      if (entry.isDirectory()) {
        const found = walk(join(inTrash, entry.name), path)
        if (found !== undefined) return found
      }
    }
    return undefined
  }
  return walk(join(trash.dir, String(i)), folder)
}

/**
 * Puts trashed folders back where they were, last first (a roll-back, a rewind a crash cut short), and makes
 * that durable. A folder whose place is taken again stays in the trash: its name is returned.
 */
export async function restoreFromTrash(trash: Trash): Promise<string[]> {
  const stuck: string[] = []
  const touched = new Set<string>([trash.dir])
  for (let i = trash.folders.length - 1; i >= 0; i--) {
    const folder = trash.folders[i] as string
    const inTrash = join(trash.dir, String(i))
    if (lstatIfThere(inTrash) === null) continue
    if (lstatIfThere(folder) !== null) {
      stuck.push(folder)
      continue
    }
    try {
      await throughFolder(folder, true, (entry) => renameSync(inTrash, entry))
      touched.add(dirname(folder))
    } catch {
      stuck.push(folder)
    }
  }
  await Promise.all([...touched].map(syncFolder))
  return stuck
}

function lstatIfThere(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path)
  } catch {
    return null
  }
}

export async function syncFolder(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r').catch(() => undefined)
  await handle?.sync().catch(() => undefined)
  await handle?.close().catch(() => undefined)
}

/** Trash deletions under way in the background. */
const deleting = new Set<Promise<void>>()

/** Deletes a trash in the background (never fatal: what is left is deleted on a later start). */
export function deleteTrash(dir: string): void {
  const done: Promise<void> = fs
    .rm(dir, { recursive: true, force: true, maxRetries: 2 })
    .catch(() => undefined)
    .finally(() => deleting.delete(done))
  deleting.add(done)
}

/** Resolves once every trash deletion begun so far is over (tests, benchmarks, quitting). */
export async function trashDeleted(): Promise<void> {
  while (deleting.size > 0) await Promise.all([...deleting])
}

/** A rewind's trash (`<root>/<rewindId>`); `-kept` marks one a roll-back could not put back whole. */
const TRASH_NAME = /^rw-[0-9a-z]+-[0-9a-f]+$/

/** Whether `rewindId` is one applyRewind makes (so `<root>/<rewindId>` is a folder of the trash). */
export function isRewindId(rewindId: string): boolean {
  return TRASH_NAME.test(rewindId)
}

/**
 * Deletes what rewinds left in the session's trash (a deletion cut short by a quit or a crash), except the trash
 * of `open` (a rewind still to be recovered). Run once a cut-short rewind has been recovered.
 */
export function clearTrash(root: string, open?: string): void {
  // Most sessions never had one: a failed readdir costs an exception (its stack) on every rewind's start.
  if (!existsSync(root)) return
  let names: string[]
  try {
    names = readdirSync(root)
  } catch {
    return
  }
  for (const name of names) if (TRASH_NAME.test(name) && name !== open) deleteTrash(join(root, name))
}

/** A trash a roll-back could not empty back into the workspace is kept, under a name no clean-up deletes. */
export function keepTrash(dir: string): string {
  const kept = `${dir}-kept`
  try {
    renameSync(dir, kept)
    return kept
  } catch {
    return dir
  }
}
