import type { EventOf } from '../events'
import { setOwn } from '../own'
import { edit, type Reduction } from './draft'
import { editCall } from './lookup'

/**
 * What the session knows of the workspace's files: file.snapshot (what the model read), file.preimage (a call
 * can be undone) and a captured command landing (command.landed, command.held, command.reviewed).
 */

export function onFileSnapshot(r: Reduction, event: EventOf<'file.snapshot'>): void {
  const s = r.state
  const snapshots = (s.snapshots = edit(r, s.snapshots))
  setOwn(snapshots, event.path, { mtimeMs: event.mtimeMs, hash: event.hash, at: event.at })
}

export function onFilePreimage(r: Reduction, event: EventOf<'file.preimage'>): void {
  const call = editCall(r, event, () => true)
  if (call) call.undoable = true
}

export function onCommandLanded(r: Reduction, event: EventOf<'command.landed'>): void {
  // Rolled back: nothing of the command is in the workspace, so there is nothing to undo.
  const call = editCall(r, event, () => true)
  if (call && event.outcome === 'rolled-back') call.undoable = false
}

export function onCommandHeld(r: Reduction, event: EventOf<'command.held'>): void {
  const call = editCall(r, event, () => true)
  if (call)
    call.held = {
      paths: event.paths,
      count: event.count,
      landed: event.landed,
      ...(event.review ? { review: event.review, pending: true } : {}),
      ...(event.groups ? { groups: event.groups } : {}),
      ...(event.interrupted ? { interrupted: true } : {}),
    }
}

/** The user's per-file review of a command's held changes is over: what landed and what did not. */
export function onCommandReviewed(r: Reduction, event: EventOf<'command.reviewed'>): void {
  const call = editCall(r, event, (c) => c.held?.pending === true)
  if (call?.held)
    call.held = {
      ...call.held,
      pending: false,
      accepted: event.accepted,
      rejected: event.rejected,
      acceptedCount: event.acceptedCount,
      rejectedCount: event.rejectedCount,
      landed: event.acceptedCount > 0,
    }
}
