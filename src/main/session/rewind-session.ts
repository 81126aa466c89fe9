import type { SessionEvent } from '../../shared/events'
import { openSessionWriter, readSession, readSessionTail, SessionLogError, sessionPaths } from './log'
import { preimagesDir, PreimageStore } from './preimages'
import { recoverLanding } from './landing-recovery'
import { recoverRewind, type Refusal, type RewindLog } from './rewind'
import { REWIND_EVENT_TYPES } from './rewind-history'

/**
 * A session opened for a rewind (`lanes rewind`, the app's Undo and Rewind): its lock taken (nobody else
 * writes it meanwhile), its events read, its store of contents open, and a rewind a crash cut short finished
 * first, so every rewind starts from a whole state.
 */
export interface RewindSession {
  sessionId: string
  workspace: string
  events: readonly SessionEvent[]
  store: PreimageStore
  log: RewindLog
  /** What finishing an interrupted rewind did, when there was one. */
  recovered?: Awaited<ReturnType<typeof recoverRewind>>
}

export async function withRewindSession<T>(
  sessionsDir: string,
  sessionId: string,
  use: (session: RewindSession) => Promise<T>,
  opts: {
    /**
     * The call the rewind goes back to (or undoes). Everything a rewind needs is logged from that call's queueing
     * on (its file changes, what Lanes left each file as, a rewind a crash cut short), so only the log's tail
     * from there is read: undoing a recent change of a long session does not read its whole log.
     */
    callId?: string
  } = {},
): Promise<T | Refusal> {
  let paths
  try {
    paths = sessionPaths(sessionsDir, sessionId)
  } catch (error) {
    return { ok: false, reason: (error as Error).message }
  }
  let writer
  try {
    writer = await openSessionWriter(sessionsDir, sessionId, { create: false })
  } catch (error) {
    if (error instanceof SessionLogError && error.code === 'not-found')
      return { ok: false, reason: `No session ${sessionId} in ${sessionsDir}.` }
    return { ok: false, reason: (error as Error).message }
  }
  let store: PreimageStore | undefined
  try {
    const callId = opts.callId
    // The store is opened while the log is read: neither waits for the other's trips to the disk.
    const [read, opened] = await Promise.allSettled([
      callId === undefined
        ? readSession(paths.log)
        : readSessionTail(paths.log, (e) => e.type === 'tool.queued' && e.callId === callId, {
            only: REWIND_EVENT_TYPES,
            queuedCall: callId,
          }),
      PreimageStore.open(preimagesDir(writer.outputDir)),
    ])
    if (opened.status === 'fulfilled') store = opened.value
    if (read.status === 'rejected') throw read.reason
    const created = read.value.events.find((e) => e.type === 'session.created')
    if (!created || created.type !== 'session.created')
      return { ok: false, reason: `The session ${sessionId} has no readable start; it cannot be rewound.` }
    if (opened.status === 'rejected') throw opened.reason
    const open = opened.value
    const all: SessionEvent[] = [...read.value.events]
    const log: RewindLog = {
      append: async (draft) => {
        all.push(await writer.append(draft))
      },
      sync: () => writer.sync(),
    }
    await recoverLanding(all, open, log, writer.outputDir)
    const recovered = await recoverRewind(all, open, log)
    return await use({
      sessionId,
      workspace: created.workspace,
      events: all,
      store: open,
      log,
      ...(recovered ? { recovered } : {}),
    })
  } finally {
    await store?.close().catch(() => undefined)
    // What must survive a power loss was synced on the way (the journal before any file moved, the files, a
    // recovery's outcome); a rewind's last line, its outcome, is found missing and written again by the next
    // start's recovery (recoverRewind), so it is not waited for here: one fsync less per rewind.
    await writer.close({ sync: false })
  }
}
