import { createHash } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  copyFileSync,
  createReadStream,
  mkdirSync,
  openSync,
  promises as fs,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { dirname, join, sep } from 'node:path'
import { StringDecoder } from 'node:string_decoder'
import type {
  CommandChangeCounts,
  CommandChangedPath,
  HeldFile,
  HeldGroup,
  HeldPath,
  SessionEventDraft,
} from '../../../../shared/events'
import type { ContentFacts } from '../../../../shared/file-content'
import {
  contentHashOf,
  dirToken,
  fileToken,
  linkToken,
  parseToken,
  tokenMatches,
  type PathToken,
} from '../../../fs/path-token'
import { lstatIfPresentSync } from '../../../fs/lstat-if-present'
import { putPathState, tokenAt } from '../../../fs/put-path'
import { HeldFiles } from '../../../fs/held-files'
import { readFileSeen } from '../../../fs/quick-read'
import { trustedIdentity } from '../../../fs/file-identity'
import { TimeSlices } from '../../../fs/time-slices'
import { contentFacts } from '../../content-facts'
import type { SensitivePathRules } from '../../sensitive-paths'
import { readChangeSet, type Change, type Seen } from './change-set'
import { heldReason } from './held'
import {
  changeOf,
  HeldDecider,
  heldFileView,
  HeldGroups,
  HELD_FOR_REVIEW,
  REJECTED_BY_USER,
  reviewBudget,
  type HeldLine,
  type HeldVerdict,
} from './held-review'

/**
 * Landing a command's change set in the workspace (issue 20), exactly like a write: what was at each path
 * before is kept in the session's store and logged (file.preimage with `before` and `after`) before anything
 * moves, so undo and rewind cover it. Then the journal's intent (command.landing) is synced, the changes are
 * applied in the change set's order (a file or link is *moved* out of the layer: a rename on the same file
 * system, never a copy where a rename works; files moving in go a few dozen renames at a time, see Moves, and the
 * files they replace are held open until the landing is over, see HeldFiles), and
 * command.landed closes it. A failure half-way (a full disk making a folder, a file in the way) puts back what had landed, so
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
  /**
   * In the app: held changes wait for the user's per-file review (logged as command.held with `review`), and
   * this resolves with the decisions (the run is paused meanwhile). Without it (headless) they are discarded,
   * or land with `landProtected`.
   */
  review?: () => Promise<HeldVerdict>
  /** Tells the redactor the values in a held secret file's new text, before its diff is logged for the review. */
  learnSecrets?: (relPath: string, text: string) => void
}

export interface Landed {
  counts: CommandChangeCounts
  /** The first PATHS_SHOWN changes. */
  paths: CommandChangedPath[]
  /** Held protected changes (the first PATHS_SHOWN) and how many. */
  held: HeldPath[]
  heldCount: number
  heldLanded: boolean
  /** After a per-file review: how many held changes landed, and those that did not (the first PATHS_SHOWN). */
  reviewed?: { by: HeldVerdict['by']; accepted: number; rejected: HeldPath[]; rejectedCount: number }
  /** Changed files too large to keep their previous content: they landed but cannot be undone. */
  notUndoable: string[]
  /** Why nothing landed (and the workspace is as before the command). */
  error?: string
  /** More changes than `paths` lists: every one counted by folder, for the card (at most HELD_GROUPS_MAX). */
  folders?: HeldGroup[]
}

/** A landing of nothing: what a change set without a single change comes to. */
export function nothingLanded(landProtected: boolean): Landed {
  return {
    counts: { added: 0, changed: 0, removed: 0, modeChanged: 0 },
    paths: [],
    held: [],
    heldCount: 0,
    heldLanded: landProtected,
    notUndoable: [],
  }
}

/**
 * The mode a folder is made with while the landing runs (only its owner can enter it); its own mode is set once
 * everything has landed. A crash in between leaves it so, and the recovery knows it for the landing's.
 */
export const LANDING_FOLDER_MODE = 0o700

/** Paths listed in a result; the counts say how many there were. */
export const PATHS_SHOWN = 200
/** A previous content larger than this is not kept (the change lands; undoing it is refused and says why). */
const KEEP_MAX_BYTES = 64 * 1024 * 1024
/** Plan lines are written to the plan file, and read back, in batches of about this many bytes. */
const PLAN_FLUSH_BYTES = 256 * 1024
/** Events in flight to the log at once while logging the pre-images. */
const LOG_WINDOW = 512

/**
 * What a held review needs to be finished after a restart (issue 20), kept in the layer beside its plan and synced
 * before the review is logged: the layer then holds everything (the plan, the new contents, this), and the
 * session's store holds what was there before. `ran` is the tool's own account of the command (its result
 * without the changes), given back to it to answer the call.
 */
export interface HeldState {
  version: 1
  partial: string[]
  held: HeldPath[]
  heldCount: number
  /** How deep the review's folder groups go (HeldGroups.depth). */
  groupDepth: number | null
  ran?: unknown
  /** The command was killed before its layer was read whole (CommandChanges.incomplete). */
  incomplete?: true
}

export const HELD_STATE_FILE = 'held.json'
export const PLAN_FILE = 'plan.jsonl'

export interface PlanLine {
  rel: string
  before: PathToken
  after: PathToken
  source?: string
  /** A new folder that lands whole (see Change.whole), unless something in it does not land. */
  whole?: true
  /** Held for the review, and why (not landed unless the user accepts it). */
  held?: string
  /** A held change whose previous content was too large to keep. */
  unkept?: true
  /** What the new content is (size, binary or text), for the card: left out of what lands. */
  content?: ContentFacts
  /** The identity of the file as it lands, when trusted (logged with its file.preimage). */
  afterId?: string
  /** A held file the layer knows by other names too: it lands as a copy, a file of its own (see planAndLand). */
  alone?: true
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

/**
 * A plan file written a batch of lines at a time (one write per line would cost a system call each), by direct
 * system calls: a batch is at most about PLAN_FLUSH_BYTES, a quick write (see quick-read.ts), where the thread pool
 * would cost a round trip for the open, each write and the close, more than the writes themselves for most plans.
 */
class PlanWriter {
  private pending: string[] = []
  private bytes = 0
  private constructor(private fd: number | null) {}

  static open(path: string): PlanWriter {
    return new PlanWriter(openSync(path, 'w', 0o600))
  }

  add(line: PlanLine): void {
    const text = JSON.stringify(line)
    this.pending.push(text)
    this.bytes += text.length + 1
    if (this.bytes >= PLAN_FLUSH_BYTES) this.flush()
  }

  private flush(): void {
    if (this.pending.length === 0 || this.fd === null) return
    const data = Buffer.from(this.pending.join('\n') + '\n', 'utf8')
    this.pending = []
    this.bytes = 0
    for (let at = 0; at < data.length;) {
      const written = writeSync(this.fd, data, at, data.length - at)
      if (written <= 0) throw new Error('the disk accepted no data')
      at += written
    }
  }

  /** Writes what is pending and closes the file; once closed, nothing more. */
  close(): void {
    if (this.fd === null) return
    try {
      this.flush()
    } finally {
      closeSync(this.fd)
      this.fd = null
    }
  }
}

async function tokenOf(
  path: string,
  seen: Seen,
  opts: {
    /** Keeps the content (what was there before) in the store; its hash is the token's. */
    keep?: (content: Buffer) => Promise<string>
    /** Where the file, read by direct calls, stays open until the landing is over (see HeldFiles). */
    replaced?: HeldFiles
    /** Record the file's identity (it lands by a move that keeps it: inside a folder that lands whole). */
    identify?: boolean
  } = {},
): Promise<{
  token: PathToken
  kept: boolean
  /** The file's identity, when asked for and trusted (file-identity.ts). */
  id?: string
  /** A file read whole: what the command's card shows of it (size, binary or text, type, lines). */
  content?: CommandChangedPath['content']
}> {
  if (seen === null) return { token: null, kept: true }
  if (seen.kind === 'dir') return { token: dirToken(seen.mode), kept: true }
  if (seen.kind === 'link') return { token: linkToken(seen.target), kept: true }
  if (seen.size > KEEP_MAX_BYTES) return { token: fileToken(await hashStream(path), seen.mode), kept: false }
  // Most files a command leaves are small: read by direct system calls (see quick-read.ts).
  const { content, st, fd } = await readFileSeen(path, { keepOpen: opts.replaced !== undefined })
  if (fd !== undefined) opts.replaced?.hold(fd)
  // Taken after the read: the identity is of what was read, and only trusted if older than this moment.
  const id = opts.identify === true && st ? trustedIdentity(st, Date.now()) : undefined
  // What was there is kept, and hashed by the store; what the command left is described for the card (the same
  // facts a write's review shows, without the image: a command may change hundreds of files), and its hash is the
  // description's. Each content is hashed once, and never decoded.
  if (opts.keep) return { token: fileToken(await opts.keep(content), seen.mode), kept: true }
  const { sha256, ...facts } = contentFacts(content, undefined, { image: false })
  return { token: fileToken(sha256 as string, seen.mode), kept: true, content: facts, ...(id ? { id } : {}) }
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
  /** Every change is held for the review (the user asked to see them first), protected or not. */
  holdAll?: boolean
  /** The tool's account of the command, kept with a held review so it can answer the call after a restart. */
  ran?: unknown
}): Promise<Landed> {
  const replaced = new HeldFiles()
  try {
    return await planAndLand(opts, replaced)
  } finally {
    void replaced.release()
  }
}

async function planAndLand(opts: Parameters<typeof landChangeSet>[0], replaced: HeldFiles): Promise<Landed> {
  const { workspace, callId, layer, host } = opts
  const landed = nothingLanded(host.landProtected)
  // Held changes wait in the plan for the review (in the app); headless, they are left out (or land as allowed).
  const reviewing = host.review !== undefined && !host.landProtected
  const planFile = join(layer.dir, PLAN_FILE)
  const groups = new HeldGroups()
  const plan = PlanWriter.open(planFile)
  const heldFolders = new Set<string>()
  // New folders that may land by one rename each, and those of them holding something that does not land.
  const wholes = new Set<string>()
  const partial = new Set<string>()
  const notLanding = (rel: string) => {
    const folder = wholeAbove(rel, wholes)
    if (folder !== undefined) partial.add(folder)
  }
  const holdsHeld = new Set<string>()
  let heldInPlan = 0
  try {
    const slices = new TimeSlices()
    for (const change of readChangeSet(workspace, layer.upper, opts.opaque)) {
      await slices.tick()
      if (change.odd) {
        notLanding(change.rel)
        continue
      }
      // Landing would put the command's older view over it, with nothing to say so: the command runs again instead.
      if (change.meanwhile) {
        closeQuietly(plan)
        return {
          ...nothingLanded(host.landProtected),
          error: `${change.rel} was changed in the workspace while the command ran, after the command had read it; nothing was changed (run the command again)`,
        }
      }
      const abs = join(workspace, change.rel)
      // What was there is kept now, held or not: an accepted held change is undoable like the rest.
      const before = await tokenOf(abs, change.before, {
        keep: (content) => host.keep(abs, content),
        replaced,
      })
      const after = change.source
        ? await tokenOf(change.source, change.after, {
            identify: change.whole === true || wholeAbove(change.rel, wholes) !== undefined,
          })
        : await tokenOf(abs, change.after)
      if (before.token === after.token) continue // opened for writing, or touched: nothing changed
      const line: PlanLine = {
        rel: change.rel,
        before: before.token,
        after: after.token,
        ...(change.source ? { source: change.source } : {}),
        ...(change.whole ? { whole: true as const } : {}),
        ...(before.kept ? {} : { unkept: true as const }),
        ...(after.content ? { content: after.content } : {}),
        ...(after.id ? { afterId: after.id } : {}),
      }
      const reason =
        heldFor(change, opts.rules, heldFolders, holdsHeld) ?? (opts.holdAll ? HELD_FOR_REVIEW : null)
      if (reason !== null) {
        // A hard link the command made gives the held file another name that may land unreviewed: accepted, the
        // file lands as a copy, so that name never writes what the user reviewed (an editor saving in place).
        if (change.after?.kind === 'file' && (lstatIfPresentSync(change.source ?? abs)?.nlink ?? 1) > 1) {
          line.alone = true
          notLanding(change.rel)
        }
        landed.heldCount++
        if (landed.held.length < PATHS_SHOWN) landed.held.push({ relPath: change.rel, reason })
        if (reviewing || !host.landProtected) {
          // A new folder holding it (or being it) lands entry by entry, whatever the review decides.
          notLanding(change.rel)
          if (change.whole) partial.add(change.rel)
        }
        if (reviewing) {
          groups.add(change.rel, changeOf(line.before, line.after), reason !== HELD_FOR_REVIEW)
          plan.add({ ...line, held: reason })
          heldInPlan++
          continue
        }
        if (!host.landProtected) continue
      }
      if (change.whole) wholes.add(change.rel)
      plan.add(line)
    }
    plan.close()
  } catch (error) {
    closeQuietly(plan)
    return {
      ...landed,
      error: `the command’s changes could not be read: ${message(error)}; nothing was changed`,
    }
  }
  let verdict: HeldVerdict | undefined
  if (heldInPlan > 0) {
    const state: HeldState = {
      version: 1,
      partial: [...partial],
      held: landed.held,
      heldCount: landed.heldCount,
      groupDepth: groups.depth,
      ...(opts.ran !== undefined ? { ran: opts.ran } : {}),
      ...(opts.opaque === null ? { incomplete: true as const } : {}),
    }
    try {
      await keepForReview(layer.dir, planFile, state)
    } catch (error) {
      return { ...landed, error: `the command’s changes could not be kept for the review: ${message(error)}` }
    }
    // The review survives the app: the layer, the store of what was there before and the log are durable first.
    // It may wait long: the files it would replace are not held open meanwhile.
    void replaced.release()
    await host.sync()
    verdict = await askReview(workspace, callId, planFile, landed, host, groups)
  } else if (landed.heldCount > 0)
    await host.log({
      type: 'command.held',
      callId,
      paths: landed.held,
      count: landed.heldCount,
      landed: host.landProtected,
    })
  return landPlan({ workspace, callId, layerDir: layer.dir, host, verdict, partial, landed })
}

/** The plan file and the held review's state, synced, with the folder that names them. */
async function keepForReview(dir: string, planFile: string, state: HeldState): Promise<void> {
  const statePath = join(dir, HELD_STATE_FILE)
  await fs.writeFile(statePath, JSON.stringify(state), { mode: 0o600 })
  for (const path of [planFile, statePath, dir]) {
    const handle = await fs.open(path, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  }
}

/** The held review a stopped app left waiting in this layer, or null when there is none. */
export async function readHeldState(layerDir: string): Promise<HeldState | null> {
  try {
    const state = JSON.parse(await fs.readFile(join(layerDir, HELD_STATE_FILE), 'utf8')) as HeldState
    return state.version === 1 ? state : null
  } catch {
    return null
  }
}

/**
 * Finishes a held review that the app left waiting when it stopped (quit or crashed), from what the layer kept:
 * the review is asked again (its command.held is in the log already, the run pauses on it), then only what the
 * user accepts lands, exactly as if the app had never stopped. Headless (`lanes run --continue`), held changes
 * are discarded, or land with --land-protected; the others land.
 */
export async function resumeLanding(opts: {
  workspace: string
  callId: string
  layerDir: string
  state: HeldState
  host: CaptureHost
}): Promise<Landed> {
  const { state, host } = opts
  const landed: Landed = {
    ...nothingLanded(host.landProtected),
    held: state.held,
    heldCount: state.heldCount,
  }
  const verdict: HeldVerdict = host.review
    ? await host.review()
    : { by: 'cli', files: [], ...(host.landProtected ? { acceptAll: true } : {}) }
  return landPlan({
    workspace: opts.workspace,
    callId: opts.callId,
    layerDir: opts.layerDir,
    host,
    verdict,
    partial: new Set(state.partial),
    landed,
  })
}

/**
 * The plan lands: the held lines as the verdict decides, each landing line logged with what was there before
 * (file.preimage), then the journal's intent, the moves, and the outcome.
 */
async function landPlan(opts: {
  workspace: string
  callId: string
  layerDir: string
  host: CaptureHost
  verdict: HeldVerdict | undefined
  partial: ReadonlySet<string>
  landed: Landed
}): Promise<Landed> {
  const { workspace, callId, host, verdict, partial, landed } = opts
  const folders = new HeldGroups()
  const layer = { dir: opts.layerDir }
  const planFile = join(layer.dir, PLAN_FILE)
  // What lands, in the change set's order: each change logged with what was there before (file.preimage) before
  // anything moves. Nothing is logged before the review is over: a log that shows a change always means it lands.
  const landFile = join(layer.dir, 'land.jsonl')
  const out = PlanWriter.open(landFile)
  const window = new LogWindow(host)
  const decider = verdict ? new HeldDecider(verdict) : undefined
  const accepted: string[] = []
  const rejected: HeldPath[] = []
  let acceptedCount = 0
  let rejectedCount = 0
  let entries = 0
  // A review may wait long (across a restart, even): what it lands over must still be what the command saw, or a
  // change made meanwhile (by the user, in an editor) would be overwritten with nothing kept of it.
  let lastChecked: string | undefined
  try {
    for (const line of planLines(planFile)) {
      const { held, unkept, content, afterId, ...plain } = line
      if (held !== undefined) {
        const why = decider ? decider.decide(line as HeldLine) : REJECTED_BY_USER
        if (why !== null) {
          rejectedCount++
          if (rejected.length < PATHS_SHOWN) rejected.push({ relPath: line.rel, reason: why })
          continue
        }
        acceptedCount++
        if (accepted.length < PATHS_SHOWN) accepted.push(line.rel)
      }
      // Only a path's first line is what is there now (a second one stands on the first).
      if (verdict && line.rel !== lastChecked) {
        lastChecked = line.rel
        const now = await tokenAt(join(workspace, line.rel)).catch(() => undefined)
        if (now === undefined || !tokenMatches(now, line.before))
          throw new Error(
            `${line.rel} was changed since the command ran (while its changes waited for review)`,
          )
      }
      out.add(plain)
      entries++
      const kind = kindOf(line.before, line.after)
      landed.counts[kind === 'mode' ? 'modeChanged' : kind]++
      folders.add(line.rel, kind, false)
      if (landed.paths.length < PATHS_SHOWN)
        landed.paths.push({
          relPath: line.rel,
          change: kind,
          kind: entryKind(line.after ?? line.before),
          ...(content ? { content } : {}),
        })
      if (unkept) landed.notUndoable.push(line.rel)
      await window.add({
        type: 'file.preimage',
        callId,
        path: join(workspace, line.rel),
        relPath: line.rel,
        hash: unkept ? null : contentHashOf(line.before),
        before: line.before,
        after: line.after,
        // Valid while its folder lands whole; a file that lands on its own after all is renamed (its ctime changes:
        // the undo then hashes it, as for a file without one).
        ...(afterId !== undefined ? { afterId } : {}),
      })
    }
    await window.drain()
    out.close()
    if (entries > PATHS_SHOWN) landed.folders = folders.list()
  } catch (error) {
    await window.settle()
    closeQuietly(out)
    // Preimages logged without a command.landing after them: a rewind finds those paths as they were (skipped).
    // The review is over all the same, with nothing landed.
    if (verdict)
      await host.log({
        type: 'command.reviewed',
        callId,
        by: verdict.by,
        accepted: [],
        rejected: [],
        acceptedCount: 0,
        rejectedCount: landed.heldCount,
      })
    return {
      ...landed,
      error: `the command’s changes could not be landed: ${message(error)}; nothing was changed`,
    }
  }
  if (verdict) {
    await host.log({
      type: 'command.reviewed',
      callId,
      by: verdict.by,
      accepted,
      rejected,
      acceptedCount,
      rejectedCount,
    })
    landed.heldLanded = acceptedCount > 0
    landed.reviewed = { by: verdict.by, accepted: acceptedCount, rejected, rejectedCount }
  }
  if (entries === 0) return landed

  await host.log({ type: 'command.landing', callId, layer: layer.dir, entries })
  await host.sync()
  const failure = await applyPlan(workspace, landFile, host, partial)
  if (failure !== undefined) {
    await host.log({ type: 'command.landed', callId, outcome: 'rolled-back', error: failure })
    await host.sync()
    return { ...landed, error: failure }
  }
  await host.log({ type: 'command.landed', callId, outcome: 'done' })
  return landed
}

/**
 * Logging many events without waiting for each: they are handed to the log LOG_WINDOW at a time, in one synchronous
 * run, which the session's log writes in one write (one event at a time, between the plan's lines, it wrote each
 * in a write of its own).
 */
class LogWindow {
  private pending: SessionEventDraft[] = []
  private inFlight: Promise<unknown>[] = []
  constructor(private readonly host: Pick<CaptureHost, 'log'>) {}
  async add(draft: SessionEventDraft): Promise<void> {
    this.pending.push(draft)
    if (this.pending.length >= LOG_WINDOW) await this.drain()
  }
  /** Logs what is pending and waits for every event to be in the log. */
  async drain(): Promise<void> {
    for (const draft of this.pending.splice(0)) this.inFlight.push(this.host.log(draft))
    await Promise.all(this.inFlight.splice(0))
  }
  /** After a failure: what was handed to the log settles; what was not is not logged. */
  async settle(): Promise<void> {
    this.pending = []
    await Promise.allSettled(this.inFlight.splice(0))
  }
}

/** The held changes of the plan go to the user's review (logged with their diffs); the run waits for it. */
async function askReview(
  workspace: string,
  callId: string,
  planFile: string,
  landed: Landed,
  host: CaptureHost,
  groups: HeldGroups,
): Promise<HeldVerdict> {
  const review: HeldFile[] = []
  const budget = reviewBudget()
  for (const line of planLines(planFile)) {
    if (line.held === undefined) continue
    if (review.length >= PATHS_SHOWN) break
    review.push(await heldFileView(join(workspace, line.rel), line as HeldLine, budget, host.learnSecrets))
  }
  await host.log({
    type: 'command.held',
    callId,
    paths: landed.held,
    count: landed.heldCount,
    landed: false,
    review,
    groups: groups.list(),
  })
  await host.sync()
  return (host.review as () => Promise<HeldVerdict>)()
}

function heldFor(
  change: Change,
  rules: SensitivePathRules,
  heldFolders: Set<string>,
  holdsHeld: Set<string>,
): string | null {
  let reason = heldReason(change.rel, rules, {
    before: change.before?.kind ?? null,
    after: change.after?.kind ?? null,
  })
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

/**
 * The plan's lines, read by direct system calls PLAN_FLUSH_BYTES at a time (a quick read each; the callers give the
 * event loop back between lines), where a read stream and readline would cost the thread pool's round trips and
 * their own machinery, more than reading a plan of a few hundred lines.
 */
export function* planLines(planFile: string): Generator<PlanLine> {
  const fd = openSync(planFile, 'r')
  try {
    const chunk = Buffer.allocUnsafe(PLAN_FLUSH_BYTES)
    const decoder = new StringDecoder('utf8')
    let rest = ''
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      const lines = (rest + decoder.write(chunk.subarray(0, read))).split('\n')
      rest = lines.pop() as string
      for (const line of lines) if (line !== '') yield JSON.parse(line) as PlanLine
    }
    rest += decoder.end()
    if (rest !== '') yield JSON.parse(rest) as PlanLine
  } finally {
    closeSync(fd)
  }
}

/** A plan file closed after a failure: whatever else went wrong is what the landing reports. */
function closeQuietly(plan: PlanWriter): void {
  try {
    plan.close()
  } catch {
    // The file is closed all the same (see close).
  }
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
  // Only how many landed is kept (and the few in flight beside a failure); a roll-back reads them back from the
  // plan (memory stays bounded).
  const progress = new Moves()
  const modes: { path: string; mode: number }[] = []
  const checked = new Set<string>([workspace])
  const slices = new TimeSlices()
  // The folder moved in whole last: the lines inside it follow it in the plan and have landed with it.
  let moved: string | undefined
  for (const line of planLines(planFile)) {
    if (moved !== undefined && line.rel.startsWith(moved)) {
      progress.done++
      continue
    }
    moved = undefined
    const path = join(workspace, line.rel)
    const want = parseToken(line.after)
    // A file or link replacing a file, a link or nothing goes in beside the renames in flight; anything else
    // (a folder made or removed, a removal) waits for those first: it may be what they stand on.
    const beside = (want.kind === 'file' || want.kind === 'link') && parseToken(line.before).kind !== 'dir'
    if (!beside) await progress.settle()
    if (progress.failure !== undefined) break
    let failed: string | undefined
    try {
      if (beside) await progress.start(line, folderCheck(workspace, path, checked) ?? moveIn(path, line))
      else if (
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
      progress.failure ??= `${line.rel}: ${failed}`
      break
    }
    if (!beside) progress.done++
  }
  await progress.settle()
  if (progress.failure === undefined) {
    // What moved in is as durable as the command's own writes would have been without Lanes: the system writes
    // it back as it does any file. Not fsynced one by one (20,000 files of an `npm install` would pay 20,000
    // journal commits), nor the whole file system at once (a syncfs waits for every other program's writes).
    // What the landing must never lose is already durable: the previous contents and the journal (synced
    // before anything moved), so a power loss can cost the command's output, never what it replaced.
    for (const { path, mode } of modes.reverse()) await fs.chmod(path, mode).catch(() => undefined)
    return undefined
  }
  const landed: PlanLine[] = []
  for (const line of planLines(planFile)) {
    if (landed.length >= progress.done) break
    landed.push(line)
  }
  const stuck = await rollBackLines(workspace, [...landed, ...progress.strays], host)
  return `the command’s changes could not be landed (${progress.failure}); the workspace was put back as it was before the command${stuck}`
}

/** Renames in flight at once while landing (they queue for the thread pool's few threads). */
const MOVES_IN_FLIGHT = 32

/**
 * The landing's progress through the plan, with files moving in several at a time: replacing a file whose new data
 * is not written yet makes ext4 start writing it at the rename, a wait of its own for each that overlaps only when
 * several renames are in flight (see quick-read.ts). Lines count as landed in the plan's order; the renames in
 * flight beside a failure that landed all the same are kept apart for the roll-back.
 */
class Moves {
  /** Lines of the plan, from its start, that landed. */
  done = 0
  failure: string | undefined
  /** Lines after the failure that landed (in flight beside it). */
  readonly strays: PlanLine[] = []
  private inFlight: { line: PlanLine; result: Promise<string | undefined> }[] = []

  /**
   * Puts a line in flight (`work` a failure already: it did not start); waits for those in flight when there are
   * MOVES_IN_FLIGHT. A failure is found by `settle`.
   */
  async start(line: PlanLine, work: string | Promise<void>): Promise<void> {
    const result =
      typeof work === 'string'
        ? Promise.resolve(work)
        : work.then(
            () => undefined,
            (error: unknown) => message(error),
          )
    this.inFlight.push({ line, result })
    if (this.inFlight.length >= MOVES_IN_FLIGHT) await this.settle()
  }

  async settle(): Promise<void> {
    const batch = this.inFlight.splice(0)
    const results = await Promise.all(batch.map((b) => b.result))
    batch.forEach(({ line }, i) => {
      const failed = results[i]
      if (failed !== undefined) this.failure ??= `${line.rel}: ${failed}`
      else if (this.failure === undefined) this.done++
      else this.strays.push(line)
    })
  }
}

/**
 * Puts the lines back to their `before`, last first, in two passes: what the landing added is removed first, so a
 * landing that failed on a full disk gets its space back before a previous content is written again. (An added
 * path's folder, if new too, is itself an addition, removed after it; a path replaced is free again when its old
 * state comes back in the second pass.) Returns a note on what could not be put back.
 */
async function rollBackLines(
  workspace: string,
  done: readonly PlanLine[],
  host: Pick<CaptureHost, 'content'>,
): Promise<string> {
  const stuck: string[] = []
  const last = [...done].reverse()
  for (const line of [...last.filter((l) => l.before === null), ...last.filter((l) => l.before !== null)]) {
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
  const outside = folderCheck(workspace, path, checked)
  if (outside !== undefined) return outside
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
      if (was.kind !== 'dir') mkdirSync(path, { mode: LANDING_FOLDER_MODE })
      modes.push({ path, mode: want.mode })
      return undefined
    case 'file':
    case 'link': {
      if (line.source === undefined) return 'its new content is missing from the layer'
      if (was.kind === 'dir') rmdirSync(path)
      if (line.alone) {
        copyIn(path, line)
        return undefined
      }
      try {
        renameSync(line.source, path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
        copyIn(path, line)
      }
      return undefined
    }
  }
}

/** The folder a path goes into is a folder of the workspace, not a link to elsewhere made since the capture. */
function folderCheck(workspace: string, path: string, checked: Set<string>): string | undefined {
  const dir = dirname(path)
  if (checked.has(dir)) return undefined
  const real = realpathSync.native(dir)
  if (real !== dir || !(real + sep).startsWith(workspace + sep)) return 'its folder is no longer where it was'
  checked.add(dir)
  return undefined
}

/** A file or link moved in from the layer, by the thread pool (see Moves). */
async function moveIn(path: string, line: PlanLine): Promise<void> {
  if (line.source === undefined) throw new Error('its new content is missing from the layer')
  if (line.alone) return copyIn(path, line)
  try {
    await fs.rename(line.source, path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
    copyIn(path, line)
  }
}

/**
 * The layer is on another file system, or the file must land as a file of its own (PlanLine.alone): the new file or
 * link is copied beside, then renamed in (still atomic for readers).
 */
function copyIn(path: string, line: PlanLine): void {
  const want = parseToken(line.after)
  const temp = `${path}.lanes-${process.pid}-land`
  try {
    if (want.kind === 'link') symlinkSync(want.target, temp)
    else if (want.kind === 'file') {
      copyFileSync(line.source as string, temp)
      chmodSync(temp, want.mode ?? 0o644)
    } else throw new Error('it is not a file or a link')
    renameSync(temp, path)
  } catch (copyError) {
    // A copy cut short (a full disk) leaves nothing behind, and gives its space back to the roll-back.
    rmSync(temp, { force: true })
    throw copyError
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
