import { promises as fs } from 'node:fs'
import { dirname } from 'node:path'
import {
  HELD_GROUPS_MAX,
  type HeldDecision,
  type HeldFile,
  type HeldFolderDecision,
  type HeldGroup,
} from '../../../../shared/events'
import { parseToken, type PathToken } from '../../../fs/path-token'
import { fileDiff } from '../../file-diff'
import { isSecretPath } from '../../sensitive-paths'

/**
 * The per-file review of a command's held changes (issue 20): what the user is shown for each held change (a
 * diff, or a note where there is no text to diff), and which of them may land once the user has decided.
 * A change lands only when the user accepted it and the changes it stands on are there: a file in a folder
 * whose making was rejected, a folder whose removal would leave a rejected entry in it, or a second change to
 * a path whose first change was rejected does not land either, and says why.
 */

/** What the review needs of a held line of the plan. */
export interface HeldLine {
  rel: string
  before: PathToken
  after: PathToken
  /** The layer's copy of a file or link the command left. */
  source?: string
  /** Why it is held. */
  held: string
}

/** The user's decisions, as the review's reply gives them. */
export interface HeldVerdict {
  /** `cli`: `lanes run --continue` finished a review the app left waiting (it cannot ask anyone). */
  by: 'user' | 'stopped' | 'cli'
  files: readonly HeldDecision[]
  /** Decisions on whole folders (a group of the review): a file's own decision wins, then the deepest folder's. */
  folders?: readonly HeldFolderDecision[]
  /** Every held change is accepted (`--land-protected`). */
  acceptAll?: boolean
}

/** The review shows at most this many characters of diffs in all (one log line carries them). */
const REVIEW_DIFF_BUDGET = 1024 * 1024
/** A file larger than this is not diffed (its size is named instead). */
const DIFF_FILE_MAX = 1024 * 1024

export const REJECTED_BY_USER = 'rejected by the user'
/** Why a change that is not protected is held: the review asked to see the command's changes first. */
export const HELD_FOR_REVIEW = 'you asked to review the command’s changes'
export const REJECTED_BY_STOP = 'the run was stopped before the review was done'
export const REJECTED_BY_CLI =
  'discarded: the review was finished by `lanes run`, which cannot ask (give --land-protected to land it)'

export function changeOf(before: PathToken, after: PathToken): HeldFile['change'] {
  if (before === null) return 'added'
  if (after === null) return 'removed'
  const a = parseToken(before)
  const b = parseToken(after)
  if (
    a.kind === b.kind &&
    (a.kind === 'dir' || (a.kind === 'file' && b.kind === 'file' && a.hash === b.hash))
  )
    return 'mode'
  return 'changed'
}

async function textOf(path: string | undefined, token: PathToken): Promise<string | null | { note: string }> {
  const parsed = parseToken(token)
  if (parsed.kind === 'absent') return null
  if (parsed.kind !== 'file' || path === undefined) return { note: '' }
  const st = await fs.stat(path)
  if (st.size > DIFF_FILE_MAX) return { note: `${st.size} bytes: too large to show` }
  const bytes = await fs.readFile(path)
  if (bytes.includes(0)) return { note: 'a binary file' }
  return bytes.toString('utf8')
}

function describe(token: PathToken): string {
  const t = parseToken(token)
  switch (t.kind) {
    case 'absent':
      return 'nothing'
    case 'dir':
      return `a folder (mode ${t.mode.toString(8)})`
    case 'link':
      return `a link to ${t.target}`
    case 'file':
      return t.mode === undefined ? 'a file' : `a file (mode ${t.mode.toString(8)})`
  }
}

/**
 * What the review shows of one held change. `learn` is told the new text of a held secret file first, so the
 * redactor hides its values in the diff (the review is logged, and the log passes the redactor).
 */
/** A held change as a review group's page lists it: what it does and why it is held, without its diff. */
export function heldEntry(line: HeldLine): HeldFile {
  const before = parseToken(line.before)
  const after = parseToken(line.after)
  const kind = after.kind === 'absent' ? (before.kind === 'absent' ? 'file' : before.kind) : after.kind
  return {
    relPath: line.rel,
    change: changeOf(line.before, line.after),
    kind,
    // Only a protected change carries a reason (the review shows it as a warning).
    ...(line.held !== HELD_FOR_REVIEW ? { reason: line.held } : {}),
  }
}

export async function heldFileView(
  workspacePath: string,
  line: HeldLine,
  budget: { chars: number },
  learn: ((rel: string, text: string) => void) | undefined,
): Promise<HeldFile> {
  const before = parseToken(line.before)
  const after = parseToken(line.after)
  const view = heldEntry(line)
  if (
    (before.kind !== 'file' && before.kind !== 'absent') ||
    (after.kind !== 'file' && after.kind !== 'absent')
  )
    return { ...view, note: `${describe(line.before)} becomes ${describe(line.after)}` }
  try {
    const old = await textOf(workspacePath, line.before)
    const now = await textOf(line.source, line.after)
    if (old !== null && typeof old === 'object') return { ...view, note: `before: ${old.note}` }
    if (now !== null && typeof now === 'object') return { ...view, note: `after: ${now.note}` }
    if (now !== null && learn && isSecretPath(line.rel)) learn(line.rel, now)
    const diff = fileDiff(line.rel, old, now ?? '')
    let size = 0
    for (const hunk of diff.hunks) for (const l of hunk.lines) size += l.length + 1
    if (size > budget.chars) return { ...view, note: 'the diff is too large to show here' }
    budget.chars -= size
    const modeNote =
      before.kind === 'file' &&
      after.kind === 'file' &&
      before.mode !== after.mode &&
      after.mode !== undefined
        ? { note: `mode ${after.mode.toString(8)}` }
        : {}
    return {
      ...view,
      ...modeNote,
      diff: {
        kind: 'write',
        path: line.rel,
        hunks: diff.hunks,
        ...(diff.truncated ? { truncated: true, hunksCut: true } : {}),
        // The diff's "protected path" badge only where it is true: a change held because the user asked to
        // see it first (or because its command was cut short) is not a warning.
        protected: view.reason !== undefined,
      },
    }
  } catch (error) {
    return { ...view, note: `could not be read (${error instanceof Error ? error.message : String(error)})` }
  }
}

export function reviewBudget(): { chars: number } {
  return { chars: REVIEW_DIFF_BUDGET }
}

/**
 * Goes through the held lines in the plan's order and says, for each, whether it lands: only an accepted one
 * whose folder will be there, whose path is as it expects, and (a folder's removal) that leaves nothing behind.
 */
export class HeldDecider {
  private readonly wanted = new Map<string, boolean>()
  private readonly folderWanted = new Map<string, boolean>()
  /**
   * The states the decisions so far leave held folders in (a path that is, was or becomes a folder): what a later
   * change inside one stands on. Files are not kept (a million held files stay out of memory): a second change
   * to the same file comes right after its first in the plan (`previous`).
   */
  private readonly virtual = new Map<string, PathToken>()
  private previous: { rel: string; state: PathToken } | undefined
  /** Folders something stays in, because a change in them does not land. */
  private readonly keepsEntries = new Set<string>()

  constructor(private readonly verdict: HeldVerdict) {
    // A stopped run lands nothing held, whatever was ticked.
    if (verdict.by === 'stopped') return
    for (const f of verdict.files) this.wanted.set(f.relPath, f.decision === 'accepted')
    for (const f of verdict.folders ?? []) this.folderWanted.set(f.folder, f.decision === 'accepted')
  }

  /**
   * What the user chose for this path: its own decision (a folder's row decides the folder too), else its deepest
   * folder's; nothing chosen rejects.
   */
  private wants(rel: string): boolean {
    if (this.verdict.by === 'stopped') return false
    if (this.verdict.acceptAll === true) return true
    const own = this.wanted.get(rel) ?? this.folderWanted.get(rel)
    if (own !== undefined) return own
    for (let at = rel.lastIndexOf('/'); at > 0; at = rel.lastIndexOf('/', at - 1)) {
      const folder = this.folderWanted.get(rel.slice(0, at))
      if (folder !== undefined) return folder
    }
    return this.folderWanted.get('') ?? false
  }

  /** Null: it lands. Otherwise why it does not. */
  decide(line: HeldLine): string | null {
    let why: string | null = this.wants(line.rel) ? null : this.refusal()
    if (why === null) {
      const parent = dirname(line.rel)
      const folder = parent !== '.' && this.virtual.has(parent) ? this.virtual.get(parent) : undefined
      if (folder !== undefined && parseToken(folder).kind !== 'dir')
        why = `not landed: its folder ${parent} was rejected`
      else if (
        (this.virtual.has(line.rel) && this.virtual.get(line.rel) !== line.before) ||
        (this.previous?.rel === line.rel && this.previous.state !== line.before)
      )
        why = 'not landed: an earlier change to it was rejected'
      else if (
        parseToken(line.before).kind === 'dir' &&
        parseToken(line.after).kind !== 'dir' &&
        this.keepsEntries.has(line.rel)
      )
        why = 'not landed: something in it was rejected and stays'
    }
    const state = why === null ? line.after : line.before
    this.previous = { rel: line.rel, state }
    if (parseToken(line.before).kind === 'dir' || parseToken(line.after).kind === 'dir')
      this.virtual.set(line.rel, state)
    if (why !== null) {
      if (line.before !== null)
        for (let at = line.rel.lastIndexOf('/'); at > 0; at = line.rel.lastIndexOf('/', at - 1))
          this.keepsEntries.add(line.rel.slice(0, at))
    }
    return why
  }

  private refusal(): string {
    switch (this.verdict.by) {
      case 'stopped':
        return REJECTED_BY_STOP
      case 'cli':
        return REJECTED_BY_CLI
      case 'user':
        return REJECTED_BY_USER
    }
  }
}

/**
 * The group a held change is listed in: its folder, cut to `depth` segments (null: the whole folder). A change to
 * a folder itself is listed in the folder that holds it.
 */
export function groupKey(rel: string, depth: number | null): string {
  const parts = rel.split('/')
  parts.pop()
  return (depth === null ? parts : parts.slice(0, depth)).join('/')
}

/**
 * Held changes counted by folder as the change set streams by, in bounded memory: past HELD_GROUPS_MAX folders
 * every group is cut one segment shallower (and so is every change after), until they fit.
 */
export class HeldGroups {
  private readonly groups = new Map<string, HeldGroup>()
  private cut: number | null = null

  /** How deep the groups go (null: whole folders), for a page of one group later (`groupKey`). */
  get depth(): number | null {
    return this.cut
  }

  add(rel: string, change: HeldFile['change'], isProtected: boolean): void {
    const key = groupKey(rel, this.cut)
    let group = this.groups.get(key)
    if (!group) {
      group = { folder: key, added: 0, changed: 0, removed: 0, mode: 0, protected: 0 }
      this.groups.set(key, group)
    }
    group[change]++
    if (isProtected) group.protected++
    while (this.groups.size > HELD_GROUPS_MAX) this.shallower()
  }

  private shallower(): void {
    let deepest = 0
    for (const key of this.groups.keys()) deepest = Math.max(deepest, key === '' ? 0 : key.split('/').length)
    this.cut = Math.max(0, deepest - 1)
    const merged = [...this.groups.values()]
    this.groups.clear()
    for (const g of merged) {
      const key = g.folder.split('/').slice(0, this.cut).join('/')
      const into = this.groups.get(key)
      if (!into) this.groups.set(key, { ...g, folder: key })
      else for (const k of ['added', 'changed', 'removed', 'mode', 'protected'] as const) into[k] += g[k]
    }
  }

  list(): HeldGroup[] {
    return [...this.groups.values()].sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0))
  }
}
