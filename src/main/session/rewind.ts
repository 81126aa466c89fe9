import { randomBytes } from 'node:crypto'
import { mkdir, realpath, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { EventOf, RewindChange, RewindSkip, SessionEvent, SessionEventDraft } from '../../shared/events'
import { lstat, readlink } from 'node:fs/promises'
import { removeFile, WriteBatch, writeFileAtomic } from '../fs/atomic-write'
import { FolderReader } from '../fs/checked-read'
import { MAX_CHANGE_BYTES } from '../tools/file-change'
import { TimeSlices } from '../fs/time-slices'
import {
  contentHashOf,
  dirToken,
  fileToken,
  linkToken,
  parseToken,
  tokenMatches,
  type PathToken,
} from '../fs/path-token'
import { putPathState } from '../fs/put-path'
import { PreimageError, sha256, type PreimageStore } from './preimages'
import {
  clearTrash,
  deleteTrash,
  foldersToTrash,
  inFolder,
  isRewindId,
  keepTrash,
  moveToTrash,
  restoreFromTrash,
  strayInTrash,
  trashedAbove,
  trashRoot,
  type Trash,
} from './rewind-trash'
import { foreignFile, lanesLeft, preimagesOf, turnRewoundAway, unfinishedRewind } from './rewind-history'

/**
 * Undo and rewind (issue 14, DESIGN 8 `lanes rewind`): files go back to their content just before a call
 * (files created later are removed), optionally the conversation too.
 *
 * A rewind is planned first (nothing is touched; the UI shows the plan as a diff), then applied as a journal:
 * every content it writes or replaces is in the store and synced, the intent (rewind.started) is logged and
 * synced, the files are changed one by one, each atomically, and rewind.finished closes it. A crash in
 * between leaves the intent without an outcome; `recoverRewind` on the next start finishes it, or puts back
 * what it had changed when it cannot, so no rewind is ever left half done.
 *
 * A file changed since Lanes last touched it (by the user, or a command) is never overwritten silently: it is
 * a conflict with three versions (at the point, as Lanes left it, as it is now), skipped unless the user says
 * to rewind it anyway.
 */

/** Files written at once by a rewind. */
const APPLY_CONCURRENCY = 16
/**
 * Files rewritten at once while the journal is being made durable, when their contents are in memory already (kept
 * from planning, a bounded amount): each goes as far as its synced temp file meanwhile (see applyRewind).
 */
const STAGED_CONCURRENCY = 128
/** Files read and hashed at once while planning. */
const READ_CONCURRENCY = 16
/**
 * A file larger than this is not read (nor rewound): the file tools change files up to MAX_CHANGE_BYTES, plus
 * what one call adds, so a larger one is not a file Lanes left, and reading it (a file of gigabytes a command
 * made in its place) would cost memory and time without bound.
 */
const MAX_REWIND_BYTES = 2 * MAX_CHANGE_BYTES
/**
 * What planning read of the files as they are now is kept for the apply and the dialog up to this many bytes
 * in all (a file over a mebibyte is never kept): a plan of many large files does not hold them all in memory.
 */
const SEEN_KEEP_BYTES = 64 * 1024 * 1024
const SEEN_KEEP_FILE_BYTES = 1024 * 1024

/** `fn` over `items`, at most `limit` at a time; results in the items' order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const at = next++
      out[at] = await fn(items[at] as T)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

export interface RewindRequest {
  /** undo: the files `callId` changed; rewind: every file changed from `callId` on. */
  mode: 'undo' | 'rewind'
  callId: string
  /** rewind only: take the conversation back too, to the turn that held the call. */
  conversation?: boolean
}

export interface PlannedFile {
  path: string
  relPath: string
  /** The content to put back (null: remove the file). */
  to: string | null
  /** What Lanes last knew the file to be (undefined: never known, null: Lanes removed it). */
  lanesLeft: string | null | undefined
  /** Its content on disk now (null: absent). */
  now: string | null
  /** The file on disk is not what Lanes left: someone else changed it since. */
  conflict: boolean
  /**
   * Why it cannot be rewound even if the user wanted (not a regular file, ...), a phrase that follows the file's
   * name; conflicts only.
   */
  blocked?: string
  /**
   * What planning read (the file now, the content to put back), reused by applyRewind when the file has not
   * moved since (same inode, size and mtime), so a rewind right after its plan reads nothing twice. Either is
   * absent when it was too large to keep (read again when needed).
   */
  seen?: { now?: OnDisk; to?: Buffer | null }
}

export type RewindPlan = {
  ok: true
  request: RewindRequest
  /** The calls whose file changes are undone. */
  callIds: string[]
  /** The turn the conversation goes back to. */
  turn?: number
  /** Files whose content differs from the point's, in the order they were first changed. */
  files: PlannedFile[]
}

export type Refusal = { ok: false; reason: string }

/** Records the rewind's events; `sync` makes everything recorded so far durable. */
export interface RewindLog {
  append(draft: SessionEventDraft): Promise<unknown>
  sync(): Promise<void>
}

interface OnDisk {
  /** What is there, as a path token (a file: its content hash and mode). */
  hash: string | null
  /** A regular file's content hash. */
  sha?: string
  content: Buffer | null
  stat?: { mtimeMs: number; size: number; mode: number; ino: number; uid: number; gid: number }
  /** Present and not a regular file. */
  odd?: string
}

/**
 * The file at `path` as it is: its content and hash, or absent, or not to be read (not a regular file, not in
 * its folder any more, too large). Read through its checked folder (`reader`): a folder swapped for a link to
 * elsewhere is never read through. Small files are read with direct system calls (`slices` bounds how long
 * that holds the event loop), large ones through the thread pool.
 */
async function onDisk(
  path: string,
  reader: FolderReader,
  slices?: TimeSlices,
  /** A link or a folder is a state here: a command left one, or one is to be put back (issue 20). */
  structural = false,
): Promise<OnDisk> {
  const found = await reader.read(path, MAX_REWIND_BYTES)
  await slices?.tick()
  if (found.kind === 'absent') return { hash: null, content: null }
  if (found.kind === 'odd' && structural) {
    const st = await lstat(path).catch(() => null)
    if (st?.isSymbolicLink()) return { hash: linkToken(await readlink(path)), content: null }
    if (st?.isDirectory()) return { hash: dirToken(st.mode), content: null }
  }
  if (found.kind === 'odd') return { hash: 'odd', content: null, odd: found.reason }
  const { content, stat: info } = found
  const sha = sha256(content)
  return {
    hash: fileToken(sha, info.mode),
    sha,
    content,
    stat: {
      mtimeMs: info.mtimeMs,
      size: info.size,
      mode: info.mode,
      ino: info.ino,
      uid: info.uid,
      gid: info.gid,
    },
  }
}

/**
 * The file as a command landed it, found unchanged by its identity alone (file-identity.ts): not read, and its
 * content not kept again (`content` null; applyRewind reads it if it needs it). Undefined when there is no
 * identity to go by, or the file's differs: it is then read and hashed.
 */
async function asLanded(
  path: string,
  id: string | undefined,
  known: PathToken | undefined,
  reader: FolderReader,
  slices: TimeSlices,
): Promise<OnDisk | undefined> {
  const sha = id === undefined || known === undefined ? null : contentHashOf(known)
  if (sha === null) return undefined
  const found = await reader.identity(path).catch(() => null)
  await slices.tick()
  if (found === null || found.id !== id) return undefined
  const st = found.stat
  // As an lstat without bigint gives them (stillAsSeen and the writes compare them with one).
  const ms = (ns: bigint) => Number(ns / 1_000_000_000n) * 1e3 + Number(ns % 1_000_000_000n) / 1e6
  const mode = Number(st.mode)
  return {
    hash: fileToken(sha, mode),
    sha,
    content: null,
    stat: {
      mtimeMs: ms(st.mtimeNs),
      size: Number(st.size),
      mode,
      ino: Number(st.ino),
      uid: Number(st.uid),
      gid: Number(st.gid),
    },
  }
}

/** Whether a path's recorded state is a link or a folder (what only a command's change records). */
function isStructural(token: PathToken): boolean {
  const kind = parseToken(token).kind
  return kind === 'link' || kind === 'dir'
}

/** The file as planning saw it when it has not moved since; read again otherwise. */
async function stillAsSeen(
  path: string,
  seen: OnDisk | undefined,
  reader: FolderReader,
  slices: TimeSlices,
  structural: boolean,
): Promise<OnDisk> {
  if (seen?.stat) {
    const looked = await reader.look(path).catch(() => null)
    const info = looked !== null && !('kind' in looked) ? looked : undefined
    await slices.tick()
    const was = seen.stat
    if (info?.isFile() && info.ino === was.ino && info.size === was.size && info.mtimeMs === was.mtimeMs)
      return { ...seen, stat: { ...was, mode: info.mode, uid: info.uid, gid: info.gid } }
  }
  return onDisk(path, reader, slices, structural)
}

/**
 * What going back would change, and what stands in the way. Refuses (and changes nothing) for an unknown
 * call, a workspace that is gone, or a content the store does not have (or has damaged).
 */
export async function planRewind(
  events: readonly SessionEvent[],
  store: PreimageStore,
  workspace: string,
  request: RewindRequest,
): Promise<RewindPlan | Refusal> {
  const queued = events.find((e) => e.type === 'tool.queued' && e.callId === request.callId)
  if (!queued || queued.type !== 'tool.queued')
    return { ok: false, reason: `This session has no call ${request.callId}.` }
  // Both at once: each is a trip through the thread pool.
  const [isDir, real] = await Promise.all([
    stat(workspace).then(
      (s) => s.isDirectory(),
      () => false,
    ),
    realpath(workspace).catch(() => workspace),
  ])
  if (!isDir)
    return { ok: false, reason: `The workspace ${workspace} no longer exists; nothing was changed.` }
  if (request.mode === 'rewind' && request.conversation) {
    const by = turnRewoundAway(events, queued.turn, queued.seq)
    if (by)
      return {
        ok: false,
        reason: `Call ${request.callId} is in a turn the rewind ${by} already took back; rewind to a call the conversation still holds (or rewind its files only). Nothing was changed.`,
      }
  }

  const all = preimagesOf(events)
  const own = all.filter((p) => p.callId === request.callId)
  if (request.mode === 'undo' && own.length === 0)
    return { ok: false, reason: `Call ${request.callId} changed no file that can be undone.` }
  const from = own[0]?.seq ?? queued.seq
  const paths = request.mode === 'undo' ? new Set(own.map((p) => p.path)) : undefined
  const inScope = all.filter((p) => p.seq >= from && (paths === undefined || paths.has(p.path)))

  const roots = [workspace, real]
  for (const p of inScope) {
    const foreign = foreignFile(workspace, roots, p)
    if (foreign) return { ok: false, reason: `${foreign} Nothing was changed.` }
  }

  const target = new Map<string, { relPath: string; hash: string | null }>()
  const callIds: string[] = []
  for (const p of inScope) {
    if (!target.has(p.path)) target.set(p.path, { relPath: p.relPath, hash: p.hash })
    if (!callIds.includes(p.callId)) callIds.push(p.callId)
  }
  if (!callIds.includes(request.callId)) callIds.unshift(request.callId)

  const identities = new Map<string, string>()
  const left = lanesLeft(events, identities)
  const slices = new TimeSlices()
  const reader = new FolderReader()
  let keptBytes = 0
  const looked = await mapLimit([...target], READ_CONCURRENCY, async ([path, { relPath, hash: to }]) => {
    let toContent: Buffer | null = null
    const toHash = contentHashOf(to)
    if (toHash !== null) {
      try {
        toContent = await store.get(toHash)
      } catch (error) {
        const why = error instanceof PreimageError ? error.message : String(error)
        return `The content of ${relPath} before that call cannot be restored: ${why}`
      }
    }
    const known = left.has(path) ? (left.get(path) as string | null) : undefined
    const structural = isStructural(to) || isStructural(known ?? null)
    const now =
      (!structural && (await asLanded(path, identities.get(path), known, reader, slices))) ||
      (await onDisk(path, reader, slices, structural))
    if (tokenMatches(now.hash, to)) return undefined
    const keeps = (size: number) => {
      const keep = size <= SEEN_KEEP_FILE_BYTES && keptBytes + size <= SEEN_KEEP_BYTES
      if (keep) keptBytes += size
      return keep
    }
    const keep = keeps(now.content?.length ?? 0)
    const keepTo = keeps(toContent?.length ?? 0)
    const file: PlannedFile = {
      path,
      relPath,
      to,
      lanesLeft: known,
      now: now.odd ? null : now.hash,
      conflict: !tokenMatches(now.hash, known),
      ...(now.odd ? { blocked: now.odd } : {}),
      seen: { ...(keep ? { now } : {}), ...(keepTo ? { to: toContent } : {}) },
    }
    return file
  }).finally(() => reader.close())
  const files: PlannedFile[] = []
  for (const item of looked) {
    if (typeof item === 'string') return { ok: false, reason: item }
    if (item) files.push(item)
  }
  const turn = request.mode === 'rewind' && request.conversation ? queued.turn : undefined
  if (files.length === 0 && turn === undefined)
    return { ok: false, reason: 'Nothing to rewind: every file is already as it was at that point.' }
  return { ok: true, request, callIds, ...(turn !== undefined ? { turn } : {}), files }
}

export interface RewindApplied {
  ok: true
  rewindId: string
  changes: RewindChange[]
  skipped: RewindSkip[]
}

/**
 * Applies a plan. `rewindConflicts` lists the conflicting files (relPath) the user chose to rewind anyway;
 * every other conflict is skipped and reported. `onChange` hears of each file as it is changed.
 */
export async function applyRewind(
  plan: RewindPlan,
  store: PreimageStore,
  log: RewindLog,
  opts: {
    rewindConflicts?: readonly string[]
    onChange?: (change: RewindChange) => void | Promise<void>
  } = {},
): Promise<RewindApplied | Refusal> {
  const chosen = new Set(opts.rewindConflicts ?? [])
  const skipped: RewindSkip[] = []
  const chosenFiles = plan.files.filter((file) => {
    if (!file.conflict || (chosen.has(file.relPath) && !file.blocked)) return true
    skipped.push({
      relPath: file.relPath,
      reason: file.blocked ?? 'changed since Lanes last wrote it (by you or a command); left as it is',
    })
    return false
  })
  const slices = new TimeSlices()
  const reader = new FolderReader()
  const prepared = await mapLimit(chosenFiles, READ_CONCURRENCY, async (file) => {
    const structural = isStructural(file.to) || isStructural(file.lanesLeft ?? null)
    const now = await stillAsSeen(file.path, file.seen?.now, reader, slices, structural)
    if (now.hash !== file.now)
      return `${file.relPath} changed while the rewind was being prepared; nothing was changed.`
    if (now.stat && (now.stat.mode & 0o222) === 0)
      return `${file.relPath} is read-only; make it writable first. Nothing was changed.`
    // What is there now goes into the store first, so the rewind can be rolled back (and itself undone). A file
    // found unchanged by its identity was not read: kept below unless its folder goes whole to the trash.
    if (now.content !== null) await store.put(file.path, now.content, now.sha)
    // Only what is kept is held until the writes (undefined: read from the store as it is written).
    const content = contentHashOf(file.to) === null ? null : file.seen?.to
    const change = { path: file.path, relPath: file.relPath, from: now.hash, to: file.to }
    return { change, stat: now.stat ?? null, content, unkept: now.content === null ? now.sha : undefined }
  }).finally(() => reader.close())
  const work: Work[] = []
  for (const item of prepared) {
    if (typeof item === 'string') return { ok: false, reason: item }
    work.push(item)
  }
  if (work.length === 0 && plan.turn === undefined)
    return {
      ok: false,
      reason: `Nothing was rewound: ${skipped.map((s) => `${s.relPath} ${s.reason}`).join('; ')}.`,
    }
  const rewindId = `rw-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
  const changes = work.map((w) => w.change)
  const conflicts = new Set(plan.files.filter((f) => f.conflict).map((f) => f.path))
  const root = trashRoot(dirname(store.file))
  const trash: Trash = { dir: join(root, rewindId), folders: foldersToTrash(changes, root, conflicts) }
  if (trash.folders.length > 0) await mkdir(trash.dir, { mode: 0o700 })
  const trashed = new Set(trash.folders)
  // Every other content the rewind removes or replaces is in the store before the journal is.
  const unread = await keepUnkept(
    work.filter((w) => w.unkept !== undefined && trashedAbove(w.change.path, trashed) === undefined),
    store,
  )
  if (unread !== undefined) return { ok: false, reason: unread }
  await log.append({
    type: 'rewind.started',
    rewindId,
    mode: plan.request.mode,
    callId: plan.request.callId,
    callIds: plan.callIds,
    changes,
    skipped,
    ...(plan.turn !== undefined ? { turn: plan.turn } : {}),
    ...(trash.folders.length > 0 ? { trash } : {}),
  })
  // The store (what every file is now, for a roll-back, and the contents to put back) and the journal are made
  // durable side by side, and with them the new contents of the files that are rewritten in place (their temp
  // files, see WriteBatch.holdRenamesUntil): one round of fsyncs instead of three in a row. Nothing in the
  // workspace moves before the store and the journal are durable: a rewritten file's rename, and every other
  // change (a removal, a folder, a file made again), waits for them. A power loss before that has moved nothing:
  // the next start's recoverRewind finds every file as it was, and finishes the rewind or, a content missing,
  // rolls it back (nothing to put back). A store that could not be made durable ends the rewind here, logged as
  // rolled back, so no later start finishes what the user was told failed.
  const durable = Promise.allSettled([store.flush(), log.sync()]).then(([stored, journaled]) => {
    if (journaled.status === 'rejected') throw journaled.reason
    if (stored.status === 'rejected') throw new StoreNotDurable(stored.reason)
  })
  const settled = durable.then(
    () => undefined,
    (error: unknown) => error,
  )

  // The files are written side by side as one batch (each folder opened and checked once) and made durable
  // together at the end; until rewind.finished is logged, a crash is recovered from the journal anyway.
  // Folders (a command's changes) go in order: what leaves a folder before the folder, a folder before what
  // goes into it.
  const done: RewindChange[] = []
  let failure: string | undefined
  const batch = new WriteBatch()
  batch.holdRenamesUntil(durable)
  const phase = async (items: typeof work, concurrency: number): Promise<void> => {
    let next = 0
    const worker = async (): Promise<void> => {
      while (failure === undefined && next < items.length) {
        const w = items[next++] as (typeof work)[number]
        // Only a file rewritten in place goes ahead of the journal (as far as its temp file): see above.
        if (!rewrittenInPlace(w) && (await settled) !== undefined) return
        const failed = await putChange(
          w.change.path,
          w.change.from,
          w.change.to,
          store,
          w.stat,
          w.content,
          batch,
        )
        if (failed) {
          failure ??= `${w.change.relPath} ${failed}`
          return
        }
        done.push(w.change)
        await opts.onChange?.(w.change)
        await slices.tick()
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker))
  }
  let notDurable: unknown
  // The folders that go whole go first, once the journal is durable.
  if (trash.folders.length > 0 && (await settled) === undefined) {
    const moved = await trashFolders(trash, work, store)
    if (typeof moved === 'string') failure = moved
    else {
      for (const w of moved.done) {
        done.push(w.change)
        await opts.onChange?.(w.change)
      }
      for (const folder of moved.folders) batch.touched(dirname(folder))
      batch.touched(trash.dir)
      trashed.clear()
      for (const folder of moved.folders) trashed.add(folder)
    }
  }
  const rest =
    trashed.size === 0 ? work : work.filter((w) => trashedAbove(w.change.path, trashed) === undefined)
  try {
    for (const [items, concurrency] of failure === undefined ? phases(rest) : []) {
      // Only a phase of side-by-side changes goes wider (the folders' phases go one at a time, in order).
      const wider = concurrency > 1 && items.every((w) => w.content !== undefined)
      await phase(items, wider ? Math.max(concurrency, STAGED_CONCURRENCY) : concurrency)
      if (failure !== undefined) break
    }
    notDurable = await settled
    if (failure === undefined && notDurable === undefined) await batch.sync()
  } finally {
    await batch.close()
  }
  // The journal or the store was not made durable: nothing was renamed or removed (every change waited for them).
  if (notDurable !== undefined) {
    if (!(notDurable instanceof StoreNotDurable)) throw notDurable
    const why = `the contents could not be saved (${(notDurable.reason as Error).message})`
    await log.append({ type: 'rewind.finished', rewindId, outcome: 'rolled-back', error: why })
    await log.sync()
    return { ok: false, reason: `Nothing was rewound: ${why}.` }
  }
  if (failure !== undefined) {
    const undone = await rollBack(done, store, trash)
    await log.append({
      type: 'rewind.finished',
      rewindId,
      outcome: 'rolled-back',
      error: `${failure}${undone}`,
    })
    await log.sync()
    return { ok: false, reason: `${failure}; the files already rewound were put back.${undone}` }
  }
  await finish(log, rewindId, { turn: plan.turn })
  if (trash.folders.length > 0) {
    // The trash goes once the rewind is durably done: a power loss before that finds the rewind unfinished, and
    // its recovery needs what is in the trash to put the folders back.
    await log.sync()
    deleteTrash(trash.dir)
  }
  return { ok: true, rewindId, changes, skipped }
}

interface Work {
  change: RewindChange
  stat: OnDisk['stat'] | null
  content: Buffer | null | undefined
  /** The content hash of a file found unchanged by its identity, whose content was not read (nor kept). */
  unkept?: string | undefined
}

/**
 * Reads and keeps the content of files found unchanged by their identity that the rewind removes or replaces
 * file by file (not within a folder that goes whole): a roll-back needs it. Returns why it could not.
 */
async function keepUnkept(items: readonly Work[], store: PreimageStore): Promise<string | undefined> {
  const slices = new TimeSlices()
  const reader = new FolderReader()
  const failed = await mapLimit(items, READ_CONCURRENCY, async (w) => {
    if (store.has(w.unkept as string)) return undefined
    const now = await onDisk(w.change.path, reader, slices)
    if (now.content === null || now.sha !== w.unkept)
      return `${w.change.relPath} changed while the rewind was being prepared; nothing was changed.`
    await store.put(w.change.path, now.content, now.sha)
    return undefined
  }).finally(() => reader.close())
  return failed.find((f) => f !== undefined)
}

/**
 * Moves the folders that go whole into the trash (see rewind-trash.ts), and checks that nothing else went with
 * them (a file put in one since the last look): returns the changes done so, or why it failed (what moved is put
 * back by the roll-back, from the trash). A folder the rename cannot take across file systems is removed file by
 * file instead, with the other phases: its files' contents are kept in the store first.
 */
async function trashFolders(
  trash: Trash,
  work: readonly Work[],
  store: PreimageStore,
): Promise<{ done: Work[]; folders: string[] } | string> {
  const inside = (folder: string) => work.filter((w) => inFolder(w.change.path, folder))
  const folders: string[] = []
  const done: Work[] = []
  for (const [i, folder] of trash.folders.entries()) {
    const items = inside(folder)
    try {
      if (!(await moveToTrash(trash, i))) {
        const unread = await keepUnkept(
          work.filter(
            (w) => w.unkept !== undefined && trash.folders.slice(i).some((f) => inFolder(w.change.path, f)),
          ),
          store,
        )
        if (unread !== undefined) return unread
        await store.flush()
        break
      }
    } catch (error) {
      return `${relOf(items, folder)} could not be removed (${(error as Error).message})`
    }
    folders.push(folder)
    done.push(...items)
    const stray = strayInTrash(trash, i, new Set(items.map((w) => w.change.path)))
    if (stray !== undefined)
      return `${relOf(items, folder)}${stray.slice(folder.length)} appeared while the rewind was under way (it was not removed)`
  }
  return { done, folders }
}

function relOf(items: readonly Work[], path: string): string {
  return items.find((w) => w.change.path === path)?.change.relPath ?? path
}

/** The store could not be made durable before a rewind (its `reason`): the rewind is refused. */
class StoreNotDurable extends Error {
  constructor(readonly reason: unknown) {
    super('the store could not be made durable')
  }
}

/**
 * A regular file whose content is put back in place of the one there now (no mode, folder or link to change):
 * written as far as its temp file while the journal is made durable. Its folder holds it, so no folder is made.
 */
function rewrittenInPlace(w: { change: RewindChange; stat: OnDisk['stat'] | null }): boolean {
  const want = parseToken(w.change.to)
  return (
    w.stat !== null &&
    want.kind === 'file' &&
    want.mode === undefined &&
    parseToken(w.change.from).kind === 'file'
  )
}

/**
 * The changes in the order they can be made: what is not a folder leaves first (side by side), then folders
 * that go (deepest first), then folders that come (shallowest first), then files and links (side by side).
 */
function phases<T extends { change: RewindChange }>(work: readonly T[]): [T[], number][] {
  const kind = (token: PathToken) => parseToken(token).kind
  const depth = (w: T) => w.change.relPath.split('/').length
  // One pass, each change in one phase (a rewind of 20,000 files: no list searched per change).
  const leaving: T[] = []
  const foldersOut: T[] = []
  const foldersIn: T[] = []
  const rest: T[] = []
  for (const w of work) {
    const from = kind(w.change.from)
    const to = kind(w.change.to)
    if (to === 'absent' && from !== 'dir') leaving.push(w)
    else if (from === 'dir' && to !== 'dir') foldersOut.push(w)
    else if (to === 'dir') foldersIn.push(w)
    else rest.push(w)
  }
  foldersOut.sort((a, b) => depth(b) - depth(a))
  foldersIn.sort((a, b) => depth(a) - depth(b))
  // foldersOut may also need a file or link in place afterwards: that is in rest, after the folder went.
  return [
    [leaving, APPLY_CONCURRENCY],
    [foldersOut, 1],
    [foldersIn, 1],
    [rest, APPLY_CONCURRENCY],
  ]
}

/**
 * Puts one path to `to`: a plain file change goes the way a write goes (atomic, through its checked folder);
 * links, folders, modes and a folder or link in the way through putPathState.
 */
async function putChange(
  path: string,
  from: PathToken,
  to: PathToken,
  store: PreimageStore,
  expect: OnDisk['stat'] | null | undefined,
  content: Buffer | null | undefined,
  batch?: WriteBatch,
): Promise<string | undefined> {
  const want = parseToken(to)
  const was = parseToken(from)
  const plain =
    (want.kind === 'absent' || (want.kind === 'file' && want.mode === undefined)) &&
    (was.kind === 'absent' || was.kind === 'file')
  const read = async (): Promise<Buffer> => content ?? (await store.get(contentHashOf(to) as string))
  try {
    if (plain) return await put(path, want.kind === 'absent' ? null : await read(), expect, batch)
    return await putPathState(path, to, read, batch ? { batch } : {})
  } catch (error) {
    return `could not be restored (${(error as Error).message})`
  }
}

/** Writes (or removes) one file atomically; returns why it failed, or undefined. */
async function put(
  path: string,
  content: Buffer | null,
  /** The file as last seen (null: absent), re-checked before the rename; undefined: no check. */
  expect: OnDisk['stat'] | null | undefined,
  batch?: WriteBatch,
): Promise<string | undefined> {
  if (content === null) {
    const removed = await removeFile(path, batch ? { batch } : {})
    return removed.ok ? undefined : removed.reason
  }
  const written = await writeFileAtomic(path, content, {
    ...(batch ? { batch } : {}),
    ...(expect === undefined ? {} : { expect }),
    // Seen a moment ago (planning, then again before the journal): not looked at once more before the write.
    ...(expect ? { seen: expect } : {}),
  })
  return written.ok ? undefined : written.reason
}

async function rollBack(done: readonly RewindChange[], store: PreimageStore, trash?: Trash): Promise<string> {
  const stuck: string[] = []
  const trashed = new Set(trash?.folders ?? [])
  for (const change of [...done].reverse()) {
    // What went whole comes back whole, from the trash (below): the folders went first, so they come back last.
    if (trashed.size > 0 && trashedAbove(change.path, trashed) !== undefined) continue
    if (await putChange(change.path, change.to, change.from, store, undefined, undefined))
      stuck.push(change.relPath)
  }
  if (trash !== undefined && trashed.size > 0) {
    const left = await restoreFromTrash(trash)
    if (left.length > 0) stuck.push(`${left.join(', ')} (kept in ${keepTrash(trash.dir)})`)
    else deleteTrash(trash.dir)
  }
  return stuck.length === 0 ? '' : ` Could not put back: ${stuck.join(', ')}.`
}

async function finish(
  log: RewindLog,
  rewindId: string,
  how: { turn?: number | undefined; recovered?: boolean },
): Promise<void> {
  // No file.snapshot for what it wrote: the model has not read it (the reducer drops the files' snapshots,
  // lanesLeft takes their content from the rewind itself).
  await log.append({
    type: 'rewind.finished',
    rewindId,
    outcome: 'done',
    ...(how.recovered ? { recovered: true } : {}),
    ...(how.turn !== undefined ? { conversationFromTurn: how.turn } : {}),
  })

  // Not synced here: the files already are, so if a power loss takes this line, the next start finds every
  // file rewound and finishes the rewind again (recoverRewind); the log's next sync makes it durable.
}

/**
 * Whether a rewind's trash is one it made: its own folder in the session's trash, holding only folders the
 * rewind removes (what recovery renames back and deletes is never named by the log alone).
 */
function ownTrash(open: EventOf<'rewind.started'>, root: string): boolean {
  const trash = open.trash
  if (trash === undefined) return true
  const removed = new Set(
    open.changes.filter((c) => c.to === null && parseToken(c.from).kind === 'dir').map((c) => c.path),
  )
  return (
    isRewindId(open.rewindId) &&
    trash.dir === join(root, open.rewindId) &&
    trash.folders.every((folder) => removed.has(folder))
  )
}

/**
 * Finishes a rewind a crash cut short (its intent logged, no outcome): when every file is either as before the
 * rewind or as the rewind puts it, the rest is applied; when one is neither (changed meanwhile by someone
 * else), the files already rewound are put back. Returns what it did, or undefined when nothing was pending.
 */
export async function recoverRewind(
  events: readonly SessionEvent[],
  store: PreimageStore,
  log: RewindLog,
): Promise<{ rewindId: string; outcome: 'done' | 'rolled-back'; error?: string } | undefined> {
  const open = unfinishedRewind(events)
  const root = trashRoot(dirname(store.file))
  if (!open) {
    clearTrash(root)
    return undefined
  }
  const created = events.find((e) => e.type === 'session.created')
  const workspace = created?.type === 'session.created' ? created.workspace : undefined
  const roots = workspace === undefined ? [] : [workspace, await realpath(workspace).catch(() => workspace)]
  const foreign =
    (workspace !== undefined && open.changes.map((c) => foreignFile(workspace, roots, c)).find(Boolean)) ||
    (open.trash && !ownTrash(open, root)
      ? `The session's log names a trash ${JSON.stringify(open.trash.dir)} that is not this rewind's: the log was edited or damaged.`
      : undefined)
  if (foreign) {
    // Not a journal this app wrote: nothing it names is touched.
    const error = `The rewind a crash cut short was not finished: ${foreign} No file was touched.`
    await log.append({
      type: 'rewind.finished',
      rewindId: open.rewindId,
      outcome: 'rolled-back',
      recovered: true,
      error,
    })
    await log.sync()
    return { rewindId: open.rewindId, outcome: 'rolled-back', error }
  }
  // Folders that went whole come back first: each of their files is then as before the rewind, and goes (or
  // stays) file by file like the rest.
  const stuckInTrash = open.trash ? await restoreFromTrash(open.trash) : []
  const reader = new FolderReader()
  // A few at a time, as planning reads: a rewind of files in many folders does not open them all at once.
  const state = await mapLimit(open.changes, READ_CONCURRENCY, async (c) => ({
    change: c,
    now: await onDisk(c.path, reader, undefined, isStructural(c.to) || isStructural(c.from)),
  })).finally(() => reader.close())
  const applied = state.filter((s) => tokenMatches(s.now.hash, s.change.to)).map((s) => s.change)
  const strange = state.filter(
    (s) => !tokenMatches(s.now.hash, s.change.to) && !tokenMatches(s.now.hash, s.change.from),
  )
  let error: string | undefined
  if (strange.length === 0) {
    const pending = state.filter((s) => !tokenMatches(s.now.hash, s.change.to))
    for (const [items] of phases(pending)) {
      for (const s of items) {
        const failed = await putChange(
          s.change.path,
          s.change.from,
          s.change.to,
          store,
          s.now.stat ?? null,
          undefined,
        )
        if (failed) error = `${s.change.relPath} ${failed}`
        if (error) break
        applied.push(s.change)
      }
      if (error) break
    }
    if (!error) {
      await finish(log, open.rewindId, { turn: open.turn, recovered: true })
      if (open.trash) await log.sync()
      clearTrash(root)
      return { rewindId: open.rewindId, outcome: 'done' }
    }
  } else {
    error = `${strange.map((s) => s.change.relPath).join(', ')} changed after the rewind was cut short`
  }
  const undone = await rollBack(applied, store)
  const kept =
    stuckInTrash.length > 0 && open.trash
      ? ` ${stuckInTrash.join(', ')} could not be put back (its place is taken); it is kept in ${keepTrash(open.trash.dir)}.`
      : ''
  const message = `The rewind was cut short by a crash and could not be finished (${error}); it was rolled back.${undone}${kept}`
  await log.append({
    type: 'rewind.finished',
    rewindId: open.rewindId,
    outcome: 'rolled-back',
    recovered: true,
    error: message,
  })
  await log.sync()
  clearTrash(root)
  return { rewindId: open.rewindId, outcome: 'rolled-back', error: message }
}
