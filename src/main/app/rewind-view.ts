import { readFile } from 'node:fs/promises'
import { capWritePreview, PREVIEW_MAX_CHARS } from '../../shared/events'
import type { SessionEvent } from '../../shared/events'
import type { RewindDone, RewindFileView, RewindPreview, RewindTarget } from '../../shared/ipc'
import { applyRewind, planRewind, type PlannedFile, type Refusal, type RewindPlan } from '../session/rewind'
import { unfinishedRewind } from '../session/rewind-history'
import { withRewindSession, type RewindSession } from '../session/rewind-session'
import { fileDiff } from '../tools/file-diff'

/**
 * Undo and rewind for the app (the `rewind:plan` and `rewind:apply` channels): the plan as the dialog shows
 * it (each file's diff from now back to the point, and a conflict's three versions), and the apply. A session
 * a run is driving is refused by the session host before this; here the session's lock is taken, so nobody
 * else writes it meanwhile.
 */

function actionOf(file: Pick<PlannedFile, 'to' | 'now'>): RewindFileView['action'] {
  return file.to === null ? 'remove' : file.now === null ? 'create' : 'restore'
}

/** A content as text for the dialog; undefined when it is not available or too large to show. */
async function textOf(
  session: RewindSession,
  hash: string | null | undefined,
): Promise<string | null | undefined> {
  if (hash === null) return null
  if (hash === undefined || !session.store.has(hash)) return undefined
  const content = await session.store.get(hash).catch(() => undefined)
  if (content === undefined || content.length > PREVIEW_MAX_CHARS) return undefined
  return content.toString('utf8')
}

async function viewOf(session: RewindSession, plan: RewindPlan): Promise<RewindPreview> {
  const files: RewindFileView[] = []
  for (const file of plan.files) {
    const now = file.now === null ? null : await readFile(file.path).catch(() => null)
    const nowText = now === null ? null : now.length > PREVIEW_MAX_CHARS ? undefined : now.toString('utf8')
    const atPoint = await textOf(session, file.to)
    const before = nowText ?? ''
    const after = atPoint ?? ''
    const diff = fileDiff(file.relPath, before, after)
    files.push({
      relPath: file.relPath,
      action: actionOf(file),
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
      conflict: file.conflict,
      ...(file.blocked ? { blocked: file.blocked } : {}),
      ...(file.conflict
        ? { versions: { atPoint, lanesLeft: await textOf(session, file.lanesLeft), now: nowText } }
        : {}),
    })
  }
  return { files, callIds: plan.callIds, ...(plan.turn !== undefined ? { turn: plan.turn } : {}) }
}

const requestOf = (target: RewindTarget) => ({
  mode: target.mode,
  callId: target.callId,
  ...(target.mode === 'rewind' && target.conversation ? { conversation: true } : {}),
})

export function planRewindView(sessionsDir: string, target: RewindTarget): Promise<RewindPreview | Refusal> {
  return withRewindSession(
    sessionsDir,
    target.sessionId,
    async (session) => {
      const plan = await planRewind(session.events, session.store, session.workspace, requestOf(target))
      return plan.ok ? viewOf(session, plan) : plan
    },
    { callId: target.callId },
  )
}

export function applyRewindFromApp(
  sessionsDir: string,
  target: RewindTarget & { rewindConflicts?: string[] },
): Promise<RewindDone | Refusal> {
  return withRewindSession(
    sessionsDir,
    target.sessionId,
    async (session) => {
      const plan = await planRewind(session.events, session.store, session.workspace, requestOf(target))
      if (!plan.ok) return plan
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
    },
    { callId: target.callId },
  )
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
