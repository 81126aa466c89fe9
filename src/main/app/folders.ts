import type { Dirent } from 'node:fs'
import { mkdir, readdir, readFile, realpath, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { basename, dirname, join, parse as parsePath, sep } from 'node:path'
import type { FolderListing, Result, WorkspaceInfo } from '../../shared/ipc'
import { writeJsonAtomic } from '../fs/atomic-write'

/**
 * Folders the user works in: opening one (a path typed, picked in the native dialog or in browser mode's
 * folder browser), the folder a session recorded, the listing the folder browser shows, and the folders
 * opened recently. Expected failures are values (`Result`), never exceptions.
 */

function ok<T>(value: T): Result<T> {
  return { ok: true, value }
}

function fail<T = never>(code: Extract<Result<T>, { ok: false }>['code'], error: string): Result<T> {
  return { ok: false, error, code }
}

/**
 * Resolves a folder the user asked for; a missing path or a file is an error value, never an exception. `~` and
 * `~/...` name the home folder, as in a terminal (`~user` does not: it is taken as it is).
 */
export async function resolveWorkspace(input: string): Promise<Result<WorkspaceInfo>> {
  const path = input === '~' ? homedir() : input.startsWith('~/') ? join(homedir(), input.slice(2)) : input
  let real: string
  try {
    real = await realpath(path)
  } catch {
    return fail('not-found', `The folder "${input}" does not exist.`)
  }
  try {
    const info = await stat(real)
    if (!info.isDirectory()) return fail('invalid-input', `"${input}" is a file, not a folder.`)
  } catch (e) {
    return fail('failed', `Cannot open "${input}": ${(e as Error).message}`)
  }
  return ok(folderInfo(real))
}

/**
 * Why a folder is too broad to be a project, or null. A workspace is what the agent may search and read without
 * asking: the whole disk (`/`), your home folder or a folder above it would give it your SSH keys, browser
 * profiles, every other project's secrets and Lanes' own sessions, under names no list of secret files can
 * foresee. Such a folder is refused; the folder browser starts in HOME so you can pick a project inside it.
 */
export function tooBroadReason(real: string, home: string = homedir()): string | null {
  const isRoot = real === parsePath(real).root
  const holdsHome = home !== '' && (home === real || home.startsWith(real.endsWith(sep) ? real : real + sep))
  if (!isRoot && !holdsHome) return null
  const what = isRoot
    ? 'the whole disk'
    : real === home
      ? 'your home folder'
      : 'a folder that holds your home folder'
  return (
    `${real} is ${what}: as a project it would let the agent search and read everything in it (your SSH keys, ` +
    'browser profiles, other projects and their secrets, Lanes’ own sessions). Open the folder of one project instead.'
  )
}

/** A folder to work in, as the user asked for it: resolved, and not one that exposes everything (`tooBroadReason`). */
export async function openWorkspace(input: string): Promise<Result<WorkspaceInfo>> {
  const resolved = await resolveWorkspace(input)
  if (!resolved.ok) return resolved
  const broad = tooBroadReason(resolved.value.path)
  return broad === null ? resolved : fail('invalid-input', broad)
}

function folderInfo(real: string): WorkspaceInfo {
  return { path: real, name: basename(real) || real }
}

/**
 * The folder a session works in is the one its log recorded at creation, whatever folder the app has open
 * now: approving or continuing it must never write into another project. A folder that is gone (moved,
 * deleted, or now a link to somewhere else) is refused with a message that says so.
 */
export async function recordedWorkspace(recorded: string): Promise<Result<WorkspaceInfo>> {
  const resolved = await openWorkspace(recorded)
  if (!resolved.ok && resolved.code === 'invalid-input') return resolved
  if (resolved.ok && resolved.value.path === recorded) return resolved
  return fail(
    'not-found',
    `This session worked in ${recorded}, which is gone (moved or deleted), so it cannot go on there. ` +
      'Put the folder back at that path to continue it; its history stays available to replay.',
  )
}

/** Folders listed at most per directory; a larger one says it was cut. */
const MAX_LISTED = 2000

/**
 * One directory's subfolders for the folder browser, with the way back up (breadcrumbs from the root) and
 * the places to start from (home, recent folders). Hidden folders (a leading dot) are left out, since a
 * project is rarely one; files are not listed, only folders can be opened.
 */
export async function listFolder(
  path: string | undefined,
  recent: WorkspaceInfo[],
): Promise<Result<FolderListing>> {
  // Real, as every listed path is, so the page can tell when it shows home itself.
  const home = await realpath(homedir()).catch(() => homedir())
  const resolved = await resolveWorkspace(path ?? home)
  if (!resolved.ok) return resolved
  const here = resolved.value.path
  let entries: Dirent[]
  try {
    entries = await readdir(here, { withFileTypes: true })
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    return fail(
      'failed',
      code === 'EACCES' || code === 'EPERM'
        ? `You cannot open ${here}: permission denied.`
        : `Cannot list ${here}: ${(e as Error).message}`,
    )
  }
  const names: string[] = []
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue
    if (entry.isDirectory()) names.push(entry.name)
    else if (entry.isSymbolicLink()) {
      // A link to a folder is a folder to the user; a dangling link is nothing.
      const target = await stat(join(here, entry.name)).catch(() => null)
      if (target?.isDirectory()) names.push(entry.name)
    }
  }
  names.sort((a, b) => a.localeCompare(b, undefined, { sensitivity: 'base', numeric: true }))
  const root = parsePath(here).root
  const crumbs: WorkspaceInfo[] = []
  for (let at = here; ; at = dirname(at)) {
    crumbs.unshift(folderInfo(at))
    if (at === root || dirname(at) === at) break
  }
  return ok({
    path: here,
    name: basename(here) || here,
    parent: here === root ? null : dirname(here),
    crumbs,
    folders: names.slice(0, MAX_LISTED).map((name) => ({ name, path: join(here, name) })),
    truncated: names.length > MAX_LISTED,
    home,
    recent,
  })
}

/** The recent folders of one data folder (the file sits beside its sessions and settings). */
export function recentFolders(sessionsDir: string): RecentFolders {
  return new RecentFolders(join(sessionsDir, 'recent-folders.json'))
}

/** How many recently opened folders are remembered. */
const RECENT_LIMIT = 8

/**
 * The folders opened lately, newest first, kept in one small JSON file beside the sessions. Folders that no longer exist are left out when listed.
 */
export class RecentFolders {
  constructor(private readonly file: string) {}

  async list(): Promise<WorkspaceInfo[]> {
    const found: WorkspaceInfo[] = []
    for (const path of await this.read()) {
      const resolved = await resolveWorkspace(path)
      if (resolved.ok && resolved.value.path === path) found.push(resolved.value)
    }
    return found
  }

  async add(folder: WorkspaceInfo): Promise<void> {
    const paths = [folder.path, ...(await this.read()).filter((p) => p !== folder.path)].slice(
      0,
      RECENT_LIMIT,
    )
    await mkdir(dirname(this.file), { recursive: true })
    await writeJsonAtomic(this.file, { recent: paths })
  }

  private async read(): Promise<string[]> {
    try {
      const saved = JSON.parse(await readFile(this.file, 'utf8')) as { recent?: unknown }
      return Array.isArray(saved.recent) ? saved.recent.filter((p): p is string => typeof p === 'string') : []
    } catch {
      return []
    }
  }
}
