import type { SessionEvent } from '../events'
import type { ToolCallState } from '../tool-call'
import type { SessionState } from './state'

/**
 * How the reducer edits a state without changing the one it was given: what one reduction copied it owns and
 * edits in place (see `../reducer.ts`), and what does not fit is counted as an anomaly rather than thrown.
 */

export type Mutable<T> = { -readonly [K in keyof T]: T[K] }
export type Draft = Mutable<SessionState>
/** A call being edited: every field of the union, without the per-status guarantees the edits restore. */
export type CallDraft = Mutable<{ [K in keyof ToolCallState]: ToolCallState[K] }>

export interface Reduction {
  state: Draft
  /**
   * Objects copied or created during this reduction. Nobody else has seen them, so they are edited in place.
   */
  owned: { has(value: object): boolean; add(value: object): unknown }
  /**
   * Call id to turn number, built once this reduction has looked up many calls (a whole log reduced at once):
   * a new call's "queued already?" check would otherwise scan every turn, quadratic over a long session.
   */
  callTurns?: Map<string, number>
  lookups?: number
}

/** The few objects one event touches (under ten): a list beats a hash set's allocation for that. */
export class FewObjects {
  private readonly items: object[] = []
  has(value: object): boolean {
    return this.items.includes(value)
  }
  add(value: object): void {
    this.items.push(value)
  }
}

/** `value` itself if this reduction made it, else a shallow copy that it now owns. */
export function edit<T extends object>(r: Reduction, value: T): Mutable<T> {
  if (r.owned.has(value)) return value as Mutable<T>
  const copy = (Array.isArray(value) ? value.slice() : { ...value }) as Mutable<T>
  r.owned.add(copy)
  return copy
}

export function made<T extends object>(r: Reduction, value: T): T {
  r.owned.add(value)
  return value
}

export function describe(event: SessionEvent): string {
  const type = typeof event?.type === 'string' ? event.type : 'event'
  return typeof event?.seq === 'number' ? `${type} #${event.seq}` : type
}

export function anomaly(r: Reduction, what: string): void {
  const counts = (r.state.counts = edit(r, r.state.counts))
  counts.anomalies += 1
  r.state.lastAnomaly = what
}
