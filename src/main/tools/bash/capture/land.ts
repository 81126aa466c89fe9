import { createHash } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  createReadStream,
  mkdirSync,
  promises as fs,
  realpathSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs'
import { dirname, join, sep } from 'node:path'
import { createInterface } from 'node:readline'
import type {
  CommandChangeCounts,
  CommandChangedPath,
  HeldPath,
  SessionEventDraft,
} from '../../../../shared/events'
import {
  contentHashOf,
  dirToken,
  fileToken,
  linkToken,
  parseToken,
  type PathToken,
} from '../../../fs/path-token'
import { lstatIfPresentSync } from '../../../fs/lstat-if-present'
import { putPathState } from '../../../fs/put-path'
import { readFileQuick } from '../../../fs/quick-read'
import { TimeSlices } from '../../../fs/time-slices'
import type { SensitivePathRules } from '../../sensitive-paths'
import { readChangeSet, type Change, type Seen } from './change-set'
import { heldReason } from './held'

/**
 * Landing a command's change set in the workspace (issue 20), exactly like a write: what was at each path
 * before is kept in the session's store and logged (file.preimage with `before` and `after`) before anything
 * moves, so undo and rewind cover it. Then the journal's intent (command.landing) is synced, the changes are
 * applied in the change set's order (a file or link is *moved* out of the layer: a rename on the same file
 * system, never a copy where a rename works), and command.landed closes it. A failure half-way (a full disk making a folder, a file in the way) puts back what had landed, so
 * nothing is ever half-landed; a crash half-way is finished or rolled back on the next start (recover.ts).
 *
 * Memory stays bounded whatever the size: the change set is streamed from the layer, each landed change goes
 * to a plan file in the layer (one JSON line), and the apply streams that file back; contents are read one
 * file at a time.
 */

/** What the landing needs of the session: its store of contents and its log. */
export interface CaptureHost {
  /** Keeps a content in the session's store; its hash. */
  keep(path: string, content: Buffer): Promise<string>
  /** A kept content (roll-back). */
  content(hash: string): Promise<Buffer>
  log(draft: SessionEventDraft): Promise<unknown>
  /** Makes the store and the log durable. */
  sync(): Promise<void>
  /** Protected changes land too (`lanes run --land-protected`); otherwise they are discarded and reported. */
  landProtected: boolean
}

export interface Landed {
  counts: CommandChangeCounts
  /** The first PATHS_SHOWN changes. */
  paths: CommandChangedPath[]
  /** Held protected changes (the first PATHS_SHOWN) and how many. */
  held: HeldPath[]
  heldCount: number
  heldLanded: boolean
  /** Changed files too large to keep their previous content: they landed but cannot be undone. */
  notUndoable: string[]
  /** Why nothing landed (and the workspace is as before the command). */
  error?: string
}

/** Paths listed in a result; the counts say how many there were. */
export const PATHS_SHOWN = 200
/** A previous content larger than this is not kept (the change lands; undoing it is refused and says why). */
const KEEP_MAX_BYTES = 64 * 1024 * 1024
/** Plan lines are written to the plan file in batches of about this many bytes. */
const PLAN_FLUSH_BYTES = 256 * 1024
/** Events in flight to the log at once while logging the pre-images. */
const LOG_WINDOW = 512

interface PlanLine {
  rel: string
  before: PathToken
  after: PathToken
  source?: string
  /** A new folder that lands whole (see Change.whole), unless something in it does not land. */
  whole?: true
}

/** The outermost folder of `wholes` that holds `rel`, if any. */
function wholeAbove(rel: string, wholes: ReadonlySet<string>): string | undefined {
  let found: string | undefined
  for (let at = rel.indexOf('/'); at > 0; at = rel.indexOf('/', at + 1)) {
    const folder = rel.slice(0, at)
    if (wholes.has(folder)) found ??= folder
  }
  return found
}

async function tokenOf(
  path: string,
  seen: Seen,
  keep?: (content: Buffer) => Promise<string>,
): Promise<{
  token: PathToken
  kept: boolean
}> {
  if (seen === null) return { token: null, kept: true }
  if (seen.kind === 'dir') return { token: dirToken(seen.mode), kept: true }
  if (seen.kind === 'link') return { token: linkToken(seen.target), kept: true }
  if (seen.size > KEEP_MAX_BYTES) return { token: fileToken(await hashStream(path), seen.mode), kept: false }
  // Most files a command leaves are small: read by direct system calls (see quick-read.ts).
  const content = await readFileQuick(path)
  const hash = keep ? await keep(content) : createHash('sha256').update(content).digest('hex')
  return { token: fileToken(hash, seen.mode), kept: true }
}

async function hashStream(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

function kindOf(before: PathToken, after: PathToken): CommandChangedPath['change'] {
  if (before === null) return 'added'
  if (after === null) return 'removed'
  const a = parseToken(before)
  const b = parseToken(after)
  if (a.kind === 'file' && b.kind === 'file' && a.hash === b.hash) return 'mode'
  if (a.kind === 'dir' && b.kind === 'dir') return 'mode'
  return 'changed'
}

function entryKind(token: PathToken): CommandChangedPath['kind'] {
  const parsed = parseToken(token)
  return parsed.kind === 'absent' ? 'file' : parsed.kind
}

export async function landChangeSet(opts: {
  workspace: string
  callId: string
  layer: { dir: string; upper: string }
  opaque: ReadonlySet<string> | null
  rules: SensitivePathRules
  host: CaptureHost
}): Promise<Landed> {
  const { workspace, callId, layer, host } = opts
  const landed: Landed = {
    counts: { added: 0, changed: 0, removed: 0, modeChanged: 0 },
    paths: [],
    held: [],
    heldCount: 0,
    heldLanded: host.landProtected,
    notUndoable: [],
  }
  const planFile = join(layer.dir, 'plan.jsonl')
  const plan = await fs.open(planFile, 'w', 0o600)
  let entries = 0
  const heldFolders = new Set<string>()
  // New folders that may land by one rename each, and those of them holding something that does not land.
  const wholes = new Set<string>()
  const partial = new Set<string>()
  const notLanding = (rel: string) => {
    const folder = wholeAbove(rel, wholes)
    if (folder !== undefined) partial.add(folder)
  }
  const holdsHeld = new Set<string>()
  const inFlight: Promise<unknown>[] = []
  // Plan lines go to the file a batch at a time: one write per line would cost a round trip each.
  let pending: string[] = []
  let pendingBytes = 0
  const flushPlan = async (): Promise<void> => {
    if (pending.length === 0) return
    const text = pending.join('\n') + '\n'
    pending = []
    pendingBytes = 0
    await plan.write(text)
  }
  try {
    const slices = new TimeSlices()
    for (const change of readChangeSet(workspace, layer.upper, opts.opaque)) {
      await slices.tick()
      if (change.odd) {
        notLanding(change.rel)
        continue
      }
      const abs = join(workspace, change.rel)
      const before = await tokenOf(abs, change.before, (content) => host.keep(abs, content))
      const after = change.source
        ? await tokenOf(change.source, change.after)
        : await tokenOf(abs, change.after)
      if (before.token === after.token) continue // opened for writing, or touched: nothing changed
      const reason = heldFor(change, opts.rules, heldFolders, holdsHeld)
      if (reason !== null) {
        landed.heldCount++
        if (landed.held.length < PATHS_SHOWN) landed.held.push({ relPath: change.rel, reason })
        if (!host.landProtected) {
          notLanding(change.rel)
          if (change.whole) partial.add(change.rel)
          continue
        }
      }
      if (change.whole) wholes.add(change.rel)
      const kind = kindOf(before.token, after.token)
      const counted = kind === 'mode' ? 'modeChanged' : kind
      landed.counts[counted]++
      if (landed.paths.length < PATHS_SHOWN)
        landed.paths.push({ relPath: change.rel, change: kind, kind: entryKind(after.token ?? before.token) })
      if (!before.kept) landed.notUndoable.push(change.rel)
      const line: PlanLine = {
        rel: change.rel,
        before: before.token,
        after: after.token,
        ...(change.source ? { source: change.source } : {}),
        ...(change.whole ? { whole: true as const } : {}),
      }
      pending.push(JSON.stringify(line))
      pendingBytes += pending[pending.length - 1]!.length + 1
      if (pendingBytes >= PLAN_FLUSH_BYTES) await flushPlan()
      entries++
      inFlight.push(
        host.log({
          type: 'file.preimage',
          callId,
          path: abs,
          relPath: change.rel,
          hash: before.kept ? contentHashOf(before.token) : null,
          before: before.token,
          after: after.token,
        }),
      )
      if (inFlight.length >= LOG_WINDOW) await Promise.all(inFlight.splice(0))
    }
    await Promise.all(inFlight.splice(0))
    await flushPlan()
  } catch (error) {
    await Promise.allSettled(inFlight)
    await plan.close()
    return {
      ...landed,
      error: `the command’s changes could not be read: ${message(error)}; nothing was changed`,
    }
  }
  await plan.close()
  if (landed.heldCount > 0)
    await host.log({
      type: 'command.held',
      callId,
      paths: landed.held,
      count: landed.heldCount,
      landed: host.landProtected,
    })
  if (entries === 0) return landed

  await host.log({ type: 'command.landing', callId, layer: layer.dir, entries })
  await host.sync()
  const failure = await applyPlan(workspace, planFile, host, partial)
  if (failure !== undefined) {
    await host.log({ type: 'command.landed', callId, outcome: 'rolled-back', error: failure })
    await host.sync()
    return { ...landed, error: failure }
  }
  await host.log({ type: 'command.landed', callId, outcome: 'done' })
  return landed
}

function heldFor(
  change: Change,
  rules: SensitivePathRules,
  heldFolders: Set<string>,
  holdsHeld: Set<string>,
): string | null {
  let reason = heldReason(change.rel, rules)
  if (reason === null && change.scope !== undefined && heldReason(change.scope, rules) !== null)
    reason = `inside ${change.scope}, which is held (${heldReason(change.scope, rules) as string})`
  if (reason === null) {
    for (let at = change.rel.lastIndexOf('/'); at > 0; at = change.rel.lastIndexOf('/', at - 1)) {
      if (heldFolders.has(change.rel.slice(0, at))) {
        reason = `inside ${change.rel.slice(0, at)}, which is held`
        break
      }
    }
  }
  // What makes a folder a repository for git: removing it (moving `.git` away) would send git looking above.
  if (
    reason === null &&
    change.after?.kind !== change.before?.kind &&
    /(?:^|\/)\.git\/(?:HEAD|objects|refs)$/i.test(change.rel)
  )
    reason = 'git would no longer find its repository here'
  // A folder that loses its last entry only after a held removal is held with it (it would not be empty).
  if (reason === null && change.after === null && change.before?.kind === 'dir' && holdsHeld.has(change.rel))
    reason = 'it holds a held change'
  if (reason !== null) {
    if (change.after?.kind === 'dir') heldFolders.add(change.rel)
    for (let at = change.rel.lastIndexOf('/'); at > 0; at = change.rel.lastIndexOf('/', at - 1))
      holdsHeld.add(change.rel.slice(0, at))
  }
  return reason
}

async function* planLines(planFile: string): AsyncGenerator<PlanLine> {
  const lines = createInterface({ input: createReadStream(planFile), crlfDelay: Infinity })
  for await (const line of lines) if (line !== '') yield JSON.parse(line) as PlanLine
}

/**
 * Applies the plan; on failure puts back what it had applied and returns why. Folders' modes are set last,
 * deepest first (a read-only folder would refuse what goes into it).
 */
async function applyPlan(
  workspace: string,
  planFile: string,
  host: Pick<CaptureHost, 'content'>,
  /** New folders with something in them that does not land: made entry by entry, not moved whole. */
  partial: ReadonlySet<string>,
): Promise<string | undefined> {
  // Only how many landed is kept; a roll-back reads them back from the plan (memory stays bounded).
  let done = 0
  const modes: { path: string; mode: number }[] = []
  const checked = new Set<string>([workspace])
  let failure: string | undefined
  const slices = new TimeSlices()
  // The folder moved in whole last: the lines inside it follow it in the plan and have landed with it.
  let moved: string | undefined
  for await (const line of planLines(planFile)) {
    if (moved !== undefined && line.rel.startsWith(moved)) {
      done++
      continue
    }
    moved = undefined
    const path = join(workspace, line.rel)
    let failed: string | undefined
    try {
      if (
        line.whole &&
        line.source !== undefined &&
        !partial.has(line.rel) &&
        moveWhole(workspace, path, line, checked)
      )
        moved = `${line.rel}/`
      else failed = applyOne(workspace, path, line, checked, modes)
    } catch (error) {
      failed = message(error)
    }
    await slices.tick()
    if (failed !== undefined) {
      failure = `${line.rel}: ${failed}`
      break
    }
    done++
  }
  if (failure === undefined) {
    // What moved in is as durable as the command's own writes would have been without Lanes: the system writes
    // it back as it does any file. Not fsynced one by one (20,000 files of an `npm install` would pay 20,000
    // journal commits), nor the whole file system at once (a syncfs waits for every other program's writes).
    // What the landing must never lose is already durable: the previous contents and the journal (synced
    // before anything moved), so a power loss can cost the command's output, never what it replaced.
    for (const { path, mode } of modes.reverse()) await fs.chmod(path, mode).catch(() => undefined)
    return undefined
  }
  const landed: PlanLine[] = []
  for await (const line of planLines(planFile)) {
    if (landed.length >= done) break
    landed.push(line)
  }
  const stuck = await rollBackLines(workspace, landed, host)
  return `the command’s changes could not be landed (${failure}); the workspace was put back as it was before the command${stuck}`
}

/** Puts the lines back to their `before`, last first. Returns a note on what could not be. */
async function rollBackLines(
  workspace: string,
  done: readonly PlanLine[],
  host: Pick<CaptureHost, 'content'>,
): Promise<string> {
  const stuck: string[] = []
  for (const line of [...done].reverse()) {
    const hash = contentHashOf(line.before)
    const failed = await putPathState(join(workspace, line.rel), line.before, () =>
      hash === null ? Promise.reject(new Error('no content')) : host.content(hash),
    )
    if (failed !== undefined) stuck.push(line.rel)
  }
  return stuck.length === 0 ? '.' : `, except ${stuck.slice(0, 20).join(', ')}.`
}

/**
 * A new folder moved in with everything in it by one rename (the layer is on the workspace's file system):
 * 20,000 new files in 200 new folders are 200 renames. False when it cannot be (another file system, or the
 * folder is no longer where it was): then it lands entry by entry. The new folder must not be there: a rename
 * would replace an empty folder made meanwhile, so that is checked first.
 */
function moveWhole(workspace: string, path: string, line: PlanLine, checked: Set<string>): boolean {
  const dir = dirname(path)
  if (!checked.has(dir)) {
    const real = realpathSync.native(dir)
    if (real !== dir || !(real + sep).startsWith(workspace + sep)) return false
    checked.add(dir)
  }
  if (lstatIfPresentSync(path) !== null) return false
  try {
    renameSync(line.source as string, path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EXDEV') return false
    throw error
  }
}

/**
 * One line of the plan, by direct system calls (each a few microseconds, where a trip through the thread pool
 * costs tens: 20,000 new files are 20,000 renames); the caller gives the event loop back between lines.
 */
function applyOne(
  workspace: string,
  path: string,
  line: PlanLine,
  checked: Set<string>,
  modes: { path: string; mode: number }[],
): string | undefined {
  // The folder it goes into is a folder of the workspace, not a link to elsewhere made since the capture.
  const dir = dirname(path)
  if (!checked.has(dir)) {
    const real = realpathSync.native(dir)
    if (real !== dir || !(real + sep).startsWith(workspace + sep))
      return 'its folder is no longer where it was'
    checked.add(dir)
  }
  const want = parseToken(line.after)
  const was = parseToken(line.before)
  switch (want.kind) {
    case 'absent':
      if (was.kind === 'dir') rmdirSync(path)
      else {
        try {
          unlinkSync(path)
        } catch (error) {
          ignoreMissing(error)
        }
      }
      return undefined
    case 'dir':
      if (was.kind === 'file' || was.kind === 'link') unlinkSync(path)
      if (was.kind !== 'dir') mkdirSync(path, { mode: 0o700 })
      modes.push({ path, mode: want.mode })
      return undefined
    case 'file':
    case 'link': {
      if (line.source === undefined) return 'its new content is missing from the layer'
      if (was.kind === 'dir') rmdirSync(path)
      try {
        renameSync(line.source, path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
        // The layer is on another file system: copied beside, then renamed in (still atomic for readers).
        const temp = `${path}.lanes-${process.pid}-land`
        if (want.kind === 'link') symlinkSync(want.target, temp)
        else {
          copyFileSync(line.source, temp)
          chmodSync(temp, want.mode ?? 0o644)
        }
        renameSync(temp, path)
      }
      return undefined
    }
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
