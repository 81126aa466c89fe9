import { chmodSync, opendirSync, readFileSync, readlinkSync, type Stats } from 'node:fs'
import { join } from 'node:path'
import { lstatIfPresentSync } from '../../../fs/lstat-if-present'
import { readFileQuick } from '../../../fs/quick-read'

/**
 * Reading a command's change set out of its overlay's upper layer (issue 20). The upper folder holds exactly
 * what the command changed: a new or changed file or link whole, a removed entry as a whiteout (a character
 * device 0/0), a folder that was removed and made again as an opaque folder (listed by the wrapper, see
 * overlay.ts), a folder whose mode changed as a copy of it. A renamed file is a removal and an addition.
 *
 * Entries come out one at a time, in an order in which they can be applied: a folder before what goes into
 * it, what is removed from a folder before the folder itself, so a change set of a million files is never
 * held in memory (only the path of the folder being read, and its children's names).
 *
 * The layer is read with direct system calls (an lstat is a few microseconds; a trip through the thread pool
 * costs tens, hundreds under load, and 20,000 new files cost several of each) by a plain generator: the
 * caller gives the event loop back every few milliseconds between changes (TimeSlices).
 */

/** What is at a path: absent (null), a regular file, a symbolic link or a folder. */
export type Seen =
  | null
  | { kind: 'file'; mode: number; size: number }
  | { kind: 'link'; target: string }
  | { kind: 'dir'; mode: number }

export interface Change {
  /** Workspace-relative, `/`-separated. */
  rel: string
  /** In the workspace now (the overlay's lower layer). */
  before: Seen
  /** As the command left it (a folder: only its own mode; what is in it comes as its own changes). */
  after: Seen
  /** The upper layer's copy of a file or link that the command left (after.kind file or link). */
  source?: string
  /**
   * A folder that is new, in a folder that is not (so is everything in it): it can land whole, by one rename of
   * `source`, when everything in it lands.
   */
  whole?: true
  /** In the layer but nothing a command can land (a device, a socket): not a change, and not landed. */
  odd?: true
  /**
   * The folder this change is part of the removal or replacement of (a removed tree, a folder removed and made
   * again): a rule that holds that folder holds the change too.
   */
  scope?: string
  /**
   * What is in the workspace here changed after the command took its copy of it (or removed or replaced it): a
   * change of someone else's, an editor's, made while the command ran, that landing would undo unseen.
   */
  meanwhile?: true
}

export function seenOf(st: Stats, target?: string): Seen {
  if (st.isSymbolicLink()) return { kind: 'link', target: target ?? '' }
  if (st.isDirectory()) return { kind: 'dir', mode: st.mode & 0o7777 }
  if (st.isFile()) return { kind: 'file', mode: st.mode & 0o7777, size: st.size }
  return null
}

function look(path: string): { st: Stats; seen: Seen } | null {
  const st = lstatIfPresentSync(path)
  if (st === null) return null
  const target = st.isSymbolicLink() ? readlinkSync(path) : undefined
  return { st, seen: seenOf(st, target) }
}

/**
 * Set-user-ID and set-group-ID: a program with either runs as its owner (the user) or group for whoever starts
 * it. A command's files land with their permission bits alone (executable ones included): these two are taken off
 * the layer's file as it is read, so what lands (by a rename of that very file) never has them.
 */
const SET_ID = 0o6000

function withoutSetId(path: string, seen: Seen): Seen {
  if (seen?.kind !== 'file' || (seen.mode & SET_ID) === 0) return seen
  chmodSync(path, seen.mode & ~SET_ID)
  return { ...seen, mode: seen.mode & ~SET_ID }
}

function isWhiteout(st: Stats): boolean {
  return st.isCharacterDevice() && st.rdev === 0
}

/**
 * The paths (relative to the upper layer) the wrapper found opaque, or null when it did not finish. Read by direct
 * system calls unless large (quick-read.ts): the list is most often a few bytes.
 */
export async function readOpaque(file: string): Promise<Set<string> | null> {
  let text: string
  try {
    text = (await readFileQuick(file)).toString('utf8')
  } catch {
    return null
  }
  return parseOpaque(text)
}

/** readOpaque by a direct system call, for a layer known to be empty (its list is a few bytes). */
export function readOpaqueSync(file: string): Set<string> | null {
  try {
    return parseOpaque(readFileSync(file, 'utf8'))
  } catch {
    return null
  }
}

function parseOpaque(text: string): Set<string> | null {
  const parts = text.split('\0')
  if (parts.at(-2) !== 'done') return null
  return new Set(parts.slice(0, -2))
}

/** A folder's entries, a buffer of them at a time. */
function* names(dir: string): Generator<string> {
  const handle = opendirSync(dir, { bufferSize: 256 })
  try {
    for (let d = handle.readSync(); d !== null; d = handle.readSync()) yield d.name
  } finally {
    handle.closeSync()
  }
}

const join2 = (rel: string, name: string) => (rel === '' ? name : `${rel}/${name}`)

/**
 * The workspace's `st` changed after `took`: when the command took its copy of the entry, made it, or removed it
 * (the upper layer's entry was born then; 0 where the layer's file system keeps no birth time, and nothing is
 * found). Both times come from the kernel's coarse clock: a change in the very tick of the copy (a few
 * milliseconds) may have been read or not, and is taken as read. A folder's own time moves with its entries,
 * which are judged themselves.
 */
function changedSince(st: Stats, took: number): { meanwhile?: true } {
  return took > 0 && !st.isDirectory() && st.ctimeMs > took ? { meanwhile: true } : {}
}

/** Everything under a folder of the workspace that is going away, deepest first, then the folder itself. */
function* removeTree(
  workspace: string,
  rel: string,
  found: { st: Stats; seen: Seen },
  scope: string,
  took: number,
): Generator<Change> {
  const before = found.seen
  if (before?.kind === 'dir') {
    for (const name of names(join(workspace, rel))) {
      const child = join2(rel, name)
      const inside = look(join(workspace, child))
      if (inside) yield* removeTree(workspace, child, inside, scope, took)
    }
  }
  if (before !== null)
    yield { rel, before, after: null, ...(scope !== rel ? { scope } : {}), ...changedSince(found.st, took) }
}

/**
 * The changes recorded in `upper` against `workspace`. `opaque` is what the wrapper listed; null when it did
 * not get to (killed outright): then a folder made again is taken as merged with the old one, and the caller
 * says the capture may be incomplete.
 */
export function* readChangeSet(
  workspace: string,
  upper: string,
  opaque: ReadonlySet<string> | null,
): Generator<Change> {
  yield* readFolder(workspace, upper, '', undefined, opaque)
}

function* readFolder(
  workspace: string,
  upper: string,
  rel: string,
  /**
   * Set inside a folder that hides the workspace's (opaque, or inside one): every entry of the workspace's
   * folder that the upper one does not name is gone. The outermost such folder.
   */
  scope: string | undefined,
  opaque: ReadonlySet<string> | null,
  /** The workspace has no folder here: nothing in this one was there before (not looked for, 20,000 times). */
  fresh = false,
  /** When `scope` was made again (see changedSince). */
  scopeTook = 0,
): Generator<Change> {
  const named = scope !== undefined ? new Set<string>() : null
  const tag = scope !== undefined ? { scope } : {}
  for (const name of names(join(upper, rel))) {
    named?.add(name)
    const child = join2(rel, name)
    const up = look(join(upper, child))
    if (!up) continue
    up.seen = withoutSetId(join(upper, child), up.seen)
    const low = fresh ? null : look(join(workspace, child))
    const before = low?.seen ?? null
    const took = up.st.birthtimeMs
    if (isWhiteout(up.st)) {
      if (low && before) yield* removeTree(workspace, child, low, scope ?? child, took)
      continue
    }
    // A device or a socket: nothing a command can land in a workspace.
    if (up.seen === null) {
      yield { rel: child, before, after: before, odd: true }
      continue
    }
    if (up.seen.kind === 'dir') {
      if (before?.kind === 'dir') {
        if (before.mode !== up.seen.mode) yield { rel: child, before, after: up.seen, ...tag }
        const hides = scope ?? (opaque?.has(child) ? child : undefined)
        yield* readFolder(
          workspace,
          upper,
          child,
          hides,
          opaque,
          false,
          scope === undefined ? took : scopeTook,
        )
      } else {
        // Made where there was nothing, a file or a link: what was there goes, the folder comes whole.
        if (low && before) yield* removeTree(workspace, child, low, scope ?? child, took)
        const whole = fresh ? {} : { whole: true as const, source: join(upper, child) }
        yield { rel: child, before: null, after: up.seen, ...whole, ...tag }
        yield* readFolder(workspace, upper, child, undefined, opaque, true)
      }
      continue
    }
    if (low && before?.kind === 'dir') {
      yield* removeTree(workspace, child, low, scope ?? child, took)
      yield { rel: child, before: null, after: up.seen, source: join(upper, child), ...tag }
    } else {
      const meanwhile = low ? changedSince(low.st, took) : {}
      yield { rel: child, before, after: up.seen, source: join(upper, child), ...tag, ...meanwhile }
    }
  }
  if (named && scope !== undefined) {
    for (const name of names(join(workspace, rel))) {
      if (named.has(name)) continue
      const child = join2(rel, name)
      const low = look(join(workspace, child))
      if (low) yield* removeTree(workspace, child, low, scope, scopeTook)
    }
  }
}
