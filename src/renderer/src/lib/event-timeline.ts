import type { SessionEvent } from '../../../shared/events'
import { initialSessionState, reduceEvents, type CallIndex, type SessionState } from '../../../shared/reducer'

/**
 * A session's events and the states they lead to, for the live view and for replay alike.
 *
 * - The head (state after every event) is kept up to date incrementally: appending k events costs k reductions.
 * - Every CHECKPOINT_EVERY events the state is kept as a checkpoint. States are immutable and share structure
 *   (the reducer copies only what an event touches), so a checkpoint costs a reference, not a copy.
 * - `stateAtIndex(n)` reduces forward from the last state it computed when n is ahead of it (playing forward
 *   costs only the new events), else from the nearest checkpoint at or before n: scrubbing anywhere in a
 *   10,000-event session reduces at most CHECKPOINT_EVERY events.
 *
 * Replay position is a prefix of the log. Events are logged in time order, so the prefix up to time t is
 * exactly `stateAt(events, t)`; a log whose clock stepped back is cut at the first event past t (`maxAtUpTo`).
 */

export const CHECKPOINT_EVERY = 256

export class EventTimeline {
  private readonly list: SessionEvent[] = []
  /** maxAtUpTo[i] = the largest `at` among events 0..i: non-decreasing, so binary-searchable by time. */
  private readonly maxAtUpTo: number[] = []
  /** checkpoints[k] = state after the first k * CHECKPOINT_EVERY events. */
  private readonly checkpoints: SessionState[] = [initialSessionState()]
  private headState: SessionState = initialSessionState()
  /** Shared by every reduction of this session's states (see CallIndex). */
  private readonly calls: CallIndex = new Map()
  private cursor: { index: number; state: SessionState } = {
    index: 0,
    state: this.checkpoints[0] as SessionState,
  }

  constructor(events: readonly SessionEvent[] = []) {
    this.append(events)
  }

  get events(): readonly SessionEvent[] {
    return this.list
  }

  get length(): number {
    return this.list.length
  }

  get head(): SessionState {
    return this.headState
  }

  get lastSeq(): number {
    return this.headState.lastSeq
  }

  get firstAt(): number | undefined {
    return this.list[0]?.at
  }

  get lastAt(): number | undefined {
    return this.maxAtUpTo[this.maxAtUpTo.length - 1]
  }

  /**
   * Adds events that are new (seq above the last one seen; a live batch may repeat what a load already read).
   * Returns the events kept and whether a gap was seen (seq skipped: some events never arrived, reload).
   */
  append(events: readonly SessionEvent[]): { added: number; gap: boolean } {
    let added = 0
    let gap = false
    let lastSeq = this.headState.lastSeq
    // Reduced in runs that end at checkpoints: one reduction per run copies each touched object once, where
    // one per event copied the turn list and the touched turn again for every event.
    let run: SessionEvent[] = []
    const reduceRun = (): void => {
      if (run.length === 0) return
      this.headState = reduceEvents(run, this.headState, this.calls)
      run = []
    }
    for (const event of events) {
      if (event.seq <= lastSeq) continue
      if (event.seq > lastSeq + 1 && this.list.length > 0) gap = true
      if (typeof event.seq === 'number') lastSeq = event.seq // a malformed one is the reducer's to report
      const prevMax = this.maxAtUpTo[this.maxAtUpTo.length - 1] ?? event.at
      this.list.push(event)
      this.maxAtUpTo.push(Math.max(prevMax, event.at))
      run.push(event)
      if (this.list.length % CHECKPOINT_EVERY === 0) {
        reduceRun()
        this.checkpoints.push(this.headState)
      }
      added++
    }
    reduceRun()
    return { added, gap }
  }

  /** The state after the first `n` events (clamped to the log). */
  stateAtIndex(n: number): SessionState {
    const index = Math.max(0, Math.min(this.list.length, Math.floor(n)))
    if (index === this.list.length) return this.headState
    let from = this.cursor
    if (from.index > index || index - from.index > CHECKPOINT_EVERY) {
      const k = Math.floor(index / CHECKPOINT_EVERY)
      from = { index: k * CHECKPOINT_EVERY, state: this.checkpoints[k] as SessionState }
    }
    const state =
      index > from.index
        ? reduceEvents(this.list.slice(from.index, index), from.state, this.calls)
        : from.state
    this.cursor = { index, state }
    return state
  }

  /** How many events happened at or before `atMs`. */
  indexAt(atMs: number): number {
    let lo = 0
    let hi = this.maxAtUpTo.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((this.maxAtUpTo[mid] as number) <= atMs) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  stateAt(atMs: number): SessionState {
    return this.stateAtIndex(this.indexAt(atMs))
  }

  /** Time of the first event after `atMs` that matches, for "jump to the next tool call / approval". */
  nextAfter(atMs: number, matches: (event: SessionEvent) => boolean): number | undefined {
    for (let i = this.indexAt(atMs); i < this.list.length; i++) {
      const event = this.list[i] as SessionEvent
      if (matches(event)) return this.maxAtUpTo[i]
    }
    return undefined
  }
}

/** Events reduced between two yields while a long log is read in (a few tens of ms of work). */
export const BUILD_SLICE = 4096

/**
 * The timeline of `events`, built a slice at a time with the page given back in between (input, paint), so a
 * 100,000-event log reduces while the session's preview is on screen. The result is the one `new
 * EventTimeline(events)` gives. Resolves null once `cancelled()` says the timeline is no longer wanted.
 */
export async function buildEventTimeline(
  events: readonly SessionEvent[],
  cancelled: () => boolean,
): Promise<EventTimeline | null> {
  const timeline = new EventTimeline()
  for (let from = 0; from < events.length; from += BUILD_SLICE) {
    if (from > 0) {
      await yieldToPage()
      if (cancelled()) return null
    }
    timeline.append(events.slice(from, from + BUILD_SLICE))
  }
  return timeline
}

/**
 * Lets the page handle input and paint before going on: `scheduler.yield()` where there is one, else a message
 * to ourselves (a timer would wait a second in a window in the background).
 */
export function yieldToPage(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { yield?: () => Promise<void> } }).scheduler
  if (typeof scheduler?.yield === 'function') return scheduler.yield()
  return new Promise((resolve) => {
    const channel = new MessageChannel()
    channel.port1.onmessage = () => {
      channel.port1.close()
      resolve()
    }
    channel.port2.postMessage(null)
  })
}
