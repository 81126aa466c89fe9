import type { EventOf } from '../events'
import { edit, made, type Reduction } from './draft'

/** What the model's context holds besides the turns: compactions (issue 21) and project instructions. */

export function onContextCompacted(r: Reduction, event: EventOf<'context.compacted'>): void {
  const s = r.state
  const { type: _type, seq: _seq, ...compaction } = event
  const compactions = (s.compactions = edit(r, s.compactions))
  compactions.push(made(r, compaction))
  if (event.tokensAfter !== undefined) s.contextTokens = event.tokensAfter
}

export function onInstructionsLoaded(r: Reduction, event: EventOf<'instructions.loaded'>): void {
  const s = r.state
  // A root reading replaces the root's files (a compaction re-reads them); nested folders add theirs.
  const kept = s.instructions.filter((f) => f.scope === 'nested' || event.scope === 'nested')
  const known = new Set(kept.map((f) => f.path))
  const added = event.files.filter((f) => !known.has(f.path)).map((f) => ({ ...f, scope: event.scope }))
  s.instructions = made(r, [...kept, ...added])
}
