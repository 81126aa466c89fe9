import { capWritePreview, PREVIEW_MAX_CHARS } from '../../shared/events'
import type { SessionEvent } from '../../shared/events'
import type { RewindDone, RewindFileView, RewindPreview, RewindTarget } from '../../shared/ipc'
import { applyRewind, planRewind, type PlannedFile, type Refusal, type RewindPlan } from '../session/rewind'
import { unfinishedRewind } from '../session/rewind-history'
import { withRewindSession, type RewindSession } from '../session/rewind-session'
import { FolderReader } from '../fs/checked-read'
import { contentHashOf } from '../fs/path-token'
import { fileDiff } from '../tools/file-diff'
import { contentFacts } from '../tools/content-facts'
import { formatBytes, isBinary, sniffType, typeLabel } from '../../shared/file-content'

/**
 * Undo and rewind for the app (the `rewind:plan` and `rewind:apply` channels): the plan as the dialog shows
 * it (each file's diff from now back to the point, and a conflict's three versions), and the apply. A session
 * a run is driving is refused by the session host before this; here the session's lock is taken, so nobody
 * else writes it meanwhile.
 */

function actionOf(file: Pick<PlannedFile, 'to' | 'now'>): RewindFileView['action'] {
  return file.to === null ? 'remove' : file.now === null ? 'create' : 'restore'
}

/** A content for the dialog: undefined when it is not available (a link or a folder, not kept) or too large. */
async function bytesOf(
  session: RewindSession,
  hash: string | null | undefined,
): Promise<Buffer | null | undefined> {
  if (hash === null) return null
  // A link or a folder (a command's change) has no text to show.
  const content_ = hash === undefined ? null : contentHashOf(hash)
  if (content_ === null || !session.store.has(content_)) return undefined
  const content = await session.store.get(content_).catch(() => undefined)
  if (content === undefined || content.length > PREVIEW_MAX_CHARS) return undefined
  return content
}

/** A version as the dialog shows it: its text, or what it is when it is not text (never its bytes mis-decoded). */
function versionText(bytes: Buffer | null | undefined): string | null | undefined {
  if (bytes === null || bytes === undefined) return bytes
  if (!isBinary(bytes)) return bytes.toString('utf8')
  return `(binary: ${typeLabel(sniffType(bytes))}, ${formatBytes(bytes.length)})`
}

/**
 * The file's content now, as planning read it (through its checked folder: never what a folder swapped for a
 * link shows); read again the same way only when planning did not keep it, or found it unchanged by its identity
 * without reading it. undefined: too large to show.
 */
async function nowOf(file: PlannedFile, reader: FolderReader): Promise<Buffer | null | undefined> {
  if (file.now === null) return null
  const seen = file.seen?.now?.content
  if (seen) return seen
  // A UTF-8 character takes at most 4 bytes: a larger file has more characters than the dialog shows.
  const found = await reader.read(file.path, PREVIEW_MAX_CHARS * 4).catch(() => undefined)
  return found?.kind === 'file' ? found.content : found?.kind === 'absent' ? null : undefined
}

async function viewOf(session: RewindSession, plan: RewindPlan): Promise<RewindPreview> {
  const reader = new FolderReader()
  try {
    return await viewWith(session, plan, reader)
  } finally {
    await reader.close()
  }
}

async function viewWith(
  session: RewindSession,
  plan: RewindPlan,
  reader: FolderReader,
): Promise<RewindPreview> {
  const files: RewindFileView[] = []
  for (const file of plan.files) {
    const now = await nowOf(file, reader)
    const nowText =
      now === null
        ? null
        : now === undefined || now.length > PREVIEW_MAX_CHARS
          ? undefined
          : now.toString('utf8')
    const atPointBytes = await bytesOf(session, file.to)
    const common = {
      relPath: file.relPath,
      action: actionOf(file),
      conflict: file.conflict,
      ...(file.blocked ? { blocked: `${file.relPath} ${file.blocked}` } : {}),
      ...(file.conflict
        ? {
            versions: {
              atPoint: versionText(atPointBytes),
              lanesLeft: versionText(await bytesOf(session, file.lanesLeft)),
              now: now && now.length > PREVIEW_MAX_CHARS ? undefined : versionText(now),
            },
          }
        : {}),
    }
    if ((now && isBinary(now)) || (atPointBytes && isBinary(atPointBytes))) {
      // Shown by what it is (size, type, an image's preview), as the review shows a binary write: never as text.
      files.push({
        ...common,
        diff: {
          kind: 'write',
          path: file.relPath,
          protected: false,
          show: 'binary',
          hunks: [],
          files: {
            before: now ? contentFacts(now) : null,
            after: contentFacts(atPointBytes ?? Buffer.alloc(0)),
          },
        },
      })
      continue
    }
    const atPoint =
      atPointBytes === null || atPointBytes === undefined ? atPointBytes : atPointBytes.toString('utf8')
    const before = nowText ?? ''
    const after = atPoint ?? ''
    const diff = fileDiff(file.relPath, before, after)
    files.push({
      ...common,
      diff: capWritePreview({
        kind: 'write',
        path: file.relPath,
        before: nowText === undefined ? undefined : nowText,
        ...(atPoint === undefined ? {} : { after: atPoint ?? '' }),
        hunks: diff.hunks,
        truncated:
          diff.truncated === true || nowText === undefined || atPoint === undefined ? true : undefined,
        protected: false,
      }),
    })
  }
  return { files, callIds: plan.callIds, ...(plan.turn !== undefined ? { turn: plan.turn } : {}) }
}

const requestOf = (target: RewindTarget) => ({
  mode: target.mode,
  callId: target.callId,
  ...(target.mode === 'rewind' && target.conversation ? { conversation: true } : {}),
})

/**
 * What each file was (its hash now, by relPath) in the last preview of a rewind, by rewind: the apply plans again,
 * and a file that is no longer what the user looked at (edited meanwhile, by the user or a command still running)
 * must not be rewound on the strength of a choice made about another content. Kept for the latest previews only.
 */
const previews = new Map<string, Map<string, string | null>>()
const PREVIEWS_KEPT = 64

const previewKey = (sessionsDir: string, target: RewindTarget): string => {
  const request = requestOf(target)
  return JSON.stringify([
    sessionsDir,
    target.sessionId,
    request.mode,
    request.callId,
    request.conversation === true,
  ])
}

const shownAs = (file: PlannedFile): string | null => (file.blocked ? 'blocked' : file.now)

function rememberPreview(key: string, plan: RewindPlan): void {
  previews.delete(key)
  previews.set(key, new Map(plan.files.map((file) => [file.relPath, shownAs(file)])))
  for (const old of previews.keys()) {
    if (previews.size <= PREVIEWS_KEPT) break
    previews.delete(old)
  }
}

/** The files that are not as the last preview showed them (or were not in it); none without a preview. */
function movedSincePreview(key: string, plan: RewindPlan): string[] {
  const shown = previews.get(key)
  if (!shown) return []
  return plan.files.filter((file) => shown.get(file.relPath) !== shownAs(file)).map((f) => f.relPath)
}

/** The target's session opened for a rewind, and the rewind planned in it; a refusal of either is returned. */
function withRewindPlan<T>(
  sessionsDir: string,
  target: RewindTarget,
  then: (session: RewindSession, plan: RewindPlan) => Promise<T | Refusal>,
): Promise<T | Refusal> {
  return withRewindSession(
    sessionsDir,
    target.sessionId,
    async (session) => {
      const plan = await planRewind(session.events, session.store, session.workspace, requestOf(target))
      if (!plan.ok) return plan
      return then(session, plan)
    },
    { callId: target.callId },
  )
}

export function planRewindView(sessionsDir: string, target: RewindTarget): Promise<RewindPreview | Refusal> {
  return withRewindPlan(sessionsDir, target, async (session, plan) => {
    rememberPreview(previewKey(sessionsDir, target), plan)
    return viewOf(session, plan)
  })
}

export function applyRewindFromApp(
  sessionsDir: string,
  target: RewindTarget & { rewindConflicts?: string[] },
): Promise<RewindDone | Refusal> {
  return withRewindPlan(sessionsDir, target, async (session, plan) => {
    const key = previewKey(sessionsDir, target)
    const moved = movedSincePreview(key, plan)
    previews.delete(key)
    if (moved.length > 0)
      return {
        ok: false as const,
        reason: `Changed since the preview: ${moved.join(', ')}. Look at the rewind again; nothing was changed.`,
      }
    const applied = await applyRewind(plan, session.store, session.log, {
      rewindConflicts: target.rewindConflicts ?? [],
    })
    if (!applied.ok) return applied
    return {
      rewindId: applied.rewindId,
      changed: applied.changes.map((c) => ({
        relPath: c.relPath,
        action: actionOf({ to: c.to, now: c.from }),
      })),
      skipped: applied.skipped,
    }
  })
}

/**
 * An undo or rewind a crash cut short (its intent logged, no outcome), finished or rolled back as the app opens
 * its session, by the same recovery every rewind and continue starts with (withRewindSession), so the user
 * never looks at a half-rewound folder. Returns whether the log changed; false when nothing was pending or the
 * session is held elsewhere (a `lanes` command, another window): whoever holds it, or the next rewind or
 * continue, finishes it then.
 */
export async function finishCutShortRewind(
  sessionsDir: string,
  sessionId: string,
  events: readonly SessionEvent[],
): Promise<boolean> {
  if (!unfinishedRewind(events)) return false
  const recovered = await withRewindSession(sessionsDir, sessionId, async (session) => session.recovered)
  return recovered !== undefined && !('ok' in recovered)
}
