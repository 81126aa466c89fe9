import { isAbsolute, resolve, sep } from 'node:path'
import type { EventOf, SessionEvent, SessionEventType } from '../../shared/events'
import { toWorkspaceRelative } from '../tools/workspace'

/**
 * What a session's log says about its file changes and rewinds (issue 14), without touching the disk: the
 * pure half of rewind.ts, shared with the conversation rebuild.
 */

/**
 * Every event type a rewind reads (to plan, apply or recover it): the log's other events are passed over when
 * a rewind reads its tail. Kept beside the functions that read them: one of these reading a new type adds it here.
 */
export const REWIND_EVENT_TYPES: ReadonlySet<SessionEvent['type']> = new Set<SessionEvent['type']>([
  'session.created',
  'tool.queued',
  'file.preimage',
  'file.snapshot',
  'command.landing',
  'command.landed',
  'rewind.started',
  'rewind.finished',
])

export interface PreimageRecord {
  callId: string
  path: string
  relPath: string
  /**
   * What was at the path just before the call changed it: a content hash (a file tool's change), a path token
   * (a command's: a file with its mode, a link, a folder); null: nothing.
   */
  hash: string | null
  seq: number
}

/** Every kept pre-image, in log order. */
export function preimagesOf(events: readonly SessionEvent[]): PreimageRecord[] {
  const out: PreimageRecord[] = []
  for (const e of events) {
    if (e.type === 'file.preimage')
      out.push({
        callId: e.callId,
        path: e.path,
        relPath: e.relPath,
        hash: e.before !== undefined ? e.before : e.hash,
        seq: e.seq,
      })
  }
  return out
}

/**
 * What Lanes last knew each file to be (its hash; null: Lanes removed it): the latest of what a tool wrote or
 * read (file.snapshot) and what a finished rewind put back. A file whose content on disk differs was changed
 * since by someone else.
 */
export function lanesLeft(
  events: readonly SessionEvent[],
  /**
   * Filled with the identity of each file whose last known state came with a trusted identity (a command's file
   * landed with file.preimage `afterId`, a file tool's write confirmed by a file.snapshot `id`): the file is
   * unchanged since when its identity still is.
   */
  identities?: Map<string, string>,
): Map<string, string | null> {
  const known = new Map<string, string | null>()
  const started = new Map<string, EventOf<'rewind.started'>>()
  // A command's changes whose landing was rolled back never reached the workspace.
  const rolledBack = new Set<string>()
  for (const e of events)
    if (e.type === 'command.landed' && e.outcome === 'rolled-back') rolledBack.add(e.callId)
  for (const e of events) {
    if (e.type === 'file.snapshot') {
      known.set(e.path, e.hash)
      if (e.id !== undefined) identities?.set(e.path, e.id)
      else identities?.delete(e.path)
    } else if (e.type === 'file.preimage' && e.after !== undefined && !rolledBack.has(e.callId)) {
      known.set(e.path, e.after)
      if (e.afterId !== undefined) identities?.set(e.path, e.afterId)
      else identities?.delete(e.path)
    } else if (e.type === 'rewind.started') started.set(e.rewindId, e)
    else if (e.type === 'rewind.finished' && e.outcome === 'done') {
      for (const change of started.get(e.rewindId)?.changes ?? []) {
        known.set(change.path, change.to)
        identities?.delete(change.path)
      }
    }
  }
  return known
}

/** The last rewind whose intent is logged without an outcome: a crash came in between. */
export function unfinishedRewind(events: readonly SessionEvent[]): EventOf<'rewind.started'> | undefined {
  return lastUnfinished(events, 'rewind.started', 'rewind.finished', (s, f) => s.rewindId === f.rewindId)
}

/**
 * The last `intent` event with no `outcome` event after it (`same` says whose outcome one is): what a crash
 * cut short, since every intent is logged before its work and every outcome after it.
 */
export function lastUnfinished<I extends SessionEventType, O extends SessionEventType>(
  events: readonly SessionEvent[],
  intent: I,
  outcome: O,
  same: (intent: EventOf<I>, outcome: EventOf<O>) => boolean,
): EventOf<I> | undefined {
  let open: EventOf<I> | undefined
  for (const e of events) {
    if (e.type === intent) open = e as EventOf<I>
    else if (e.type === outcome && open !== undefined && same(open, e as EventOf<O>)) open = undefined
  }
  return open
}

/**
 * The events the conversation is rebuilt from: a finished rewind that took the conversation back to turn T
 * drops everything from T's first event up to the rewind, as if those turns (and tasks given meanwhile) had
 * not happened. Later rewinds apply to what earlier ones left.
 */
export function withoutRewoundTurns(events: readonly SessionEvent[]): SessionEvent[] {
  const started = new Map<string, number>()
  for (const e of events)
    if (e.type === 'rewind.started' && e.turn !== undefined) started.set(e.rewindId, e.turn)
  if (started.size === 0) return events.slice()
  const kept: SessionEvent[] = []
  for (const e of events) {
    const rewindId = e.type === 'rewind.finished' && e.outcome === 'done' ? e.rewindId : undefined
    const turn = rewindId === undefined ? undefined : started.get(rewindId)
    if (turn === undefined) {
      kept.push(e)
      continue
    }
    const cut = kept.findIndex(
      (k) => 'turn' in k && typeof k.turn === 'number' && k.turn >= turn && k.type !== 'rewind.started',
    )
    // The rewind itself stays (after what it kept): the conversation tells the model what it left unchanged.
    const start = kept.find((k) => k.type === 'rewind.started' && k.rewindId === rewindId)
    // The task that started the run holding turn T stays: the model is asked for that turn again.
    if (cut >= 0) kept.length = cut
    if (start && !kept.includes(start)) kept.push(start)
    kept.push(e)
  }
  return kept
}

/**
 * Why a file the log names cannot be rewound: a path that is not a normalized path inside the workspace (the
 * workspace as recorded, or its real path: `roots`), or a relPath that does not name it (the user confirms a
 * rewind by the names it shows). The tools only ever log files of the workspace, so either means the log was
 * edited or damaged; undefined for a file of the workspace.
 */
export function foreignFile(
  workspace: string,
  roots: readonly string[],
  file: { path: string; relPath: string },
): string | undefined {
  const { path, relPath } = file
  const normal = typeof path === 'string' && isNormalAbsolute(path)
  if (!normal || !roots.some((root) => strictlyInside(root, path)))
    return `The session's log names ${JSON.stringify(path)}, which is not a file of its workspace ${workspace}: the log was edited or damaged.`
  if (relPath !== relativeTo(workspace, path))
    return `The session's log names ${JSON.stringify(path)} as ${JSON.stringify(relPath)}: the log was edited or damaged.`
  return undefined
}

/**
 * Whether `path` is absolute and normalized (what `resolve` gives back unchanged). A rewind of 20,000 files asks
 * this of each: on POSIX a look at the text (no `//`, no `.` or `..` segment, no trailing `/`) instead of a
 * resolve, which costs microseconds each.
 */
function isNormalAbsolute(path: string): boolean {
  if (sep !== '/') return isAbsolute(path) && resolve(path) === path
  return path.startsWith('/') && (path === '/' || !/\/\/|\/\.\.?(?:\/|$)|\/$/.test(path))
}

/** A normalized `path` strictly inside `root` (not the root itself). */
function strictlyInside(root: string, path: string): boolean {
  // Both normalized: isInside's test without its resolves.
  const base = isNormalAbsolute(root) ? root : resolve(root)
  return path !== base && path.startsWith(base.endsWith(sep) ? base : base + sep)
}

/**
 * toWorkspaceRelative for a normalized `path` (checked above): a slice when the workspace is normalized and
 * holds it, which is what the tools log (a rewind of 20,000 files asks this 20,000 times).
 */
function relativeTo(workspace: string, path: string): string {
  if (path.startsWith(workspace + sep) && path.length > workspace.length + 1 && isNormalAbsolute(workspace))
    return sep === '/'
      ? path.slice(workspace.length + 1)
      : path
          .slice(workspace.length + 1)
          .split(sep)
          .join('/')
  return toWorkspaceRelative(workspace, path)
}

/**
 * Whether a finished rewind of the conversation already took back the turn that holds the event at `seq`: the
 * calls of such a turn are no longer part of the conversation, so it cannot go back "to" them.
 */
export function turnRewoundAway(
  events: readonly SessionEvent[],
  turn: number,
  seq: number,
): string | undefined {
  const started = new Map<string, EventOf<'rewind.started'>>()
  for (const e of events) {
    if (e.type === 'rewind.started' && e.seq > seq) started.set(e.rewindId, e)
    else if (e.type === 'rewind.finished' && e.outcome === 'done') {
      const rewind = started.get(e.rewindId)
      if (rewind?.turn !== undefined && rewind.turn <= turn) return rewind.rewindId
    }
  }
  return undefined
}
