import { realpath, rm } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { EventOf, SessionEvent } from '../../shared/events'
import { contentHashOf, tokenMatches } from '../fs/path-token'
import { putPathState, tokenAt } from '../fs/put-path'
import type { PreimageStore } from './preimages'
import type { RewindLog } from './rewind'
import { foreignFile, lastUnfinished } from './rewind-history'

/** The last command landing whose intent is logged without an outcome: a crash came in between. */
export function unfinishedLanding(events: readonly SessionEvent[]): EventOf<'command.landing'> | undefined {
  return lastUnfinished(events, 'command.landing', 'command.landed', (s, f) => s.callId === f.callId)
}

/**
 * A command's landing a crash cut short (issue 20) is rolled back on the next start, as a rewind's is: every
 * path that shows what the command left is put back to what was there before (from the store), last change
 * first, so the workspace is as it was before the command. A path changed meanwhile by someone else (neither
 * state) is left alone and named. The layer that held what was still to land goes too.
 */
export async function recoverLanding(
  events: readonly SessionEvent[],
  store: PreimageStore,
  log: RewindLog,
  /** The session's folder of outputs: the layers are in its `capture` folder, and nowhere else. */
  outputDir: string,
): Promise<{ callId: string; error?: string } | undefined> {
  const open = unfinishedLanding(events)
  if (!open) return undefined
  const lines = events.filter(
    (e): e is EventOf<'file.preimage'> =>
      e.type === 'file.preimage' && e.callId === open.callId && e.after !== undefined && e.seq < open.seq,
  )
  const created = events.find((e) => e.type === 'session.created')
  const workspace = created?.type === 'session.created' ? created.workspace : undefined
  const roots = workspace === undefined ? [] : [workspace, await realpath(workspace).catch(() => workspace)]
  const left: string[] = []
  for (const line of lines.reverse()) {
    // Only files of the workspace are ever logged: anything else means an edited log, and is not touched.
    if (workspace === undefined || foreignFile(workspace, roots, line) !== undefined) {
      left.push(line.relPath)
      continue
    }
    const before = line.before ?? null
    const now = await tokenAt(line.path).catch(() => undefined)
    if (now !== undefined && tokenMatches(now, before)) continue
    if (now === undefined || !tokenMatches(now, line.after ?? null)) {
      left.push(line.relPath)
      continue
    }
    const hash = contentHashOf(before)
    const failed = await putPathState(line.path, before, () =>
      hash === null ? Promise.reject(new Error('no content')) : store.get(hash),
    )
    if (failed !== undefined) left.push(line.relPath)
  }
  const error =
    'The app stopped while a command’s changes were landing; they were taken back' +
    (left.length > 0 ? `, except ${left.slice(0, 20).join(', ')} (changed since, or not restorable).` : '.')
  await log.append({
    type: 'command.landed',
    callId: open.callId,
    outcome: 'rolled-back',
    recovered: true,
    error,
  })
  await log.sync()
  if (open.layer.startsWith(join(outputDir, 'capture') + sep))
    await rm(open.layer, { recursive: true, force: true }).catch(() => undefined)
  return { callId: open.callId, error }
}
