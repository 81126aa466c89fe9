import type { SessionState } from '../../../../shared/reducer'

/**
 * The timeline's horizontal scale. Time in which no call runs is squeezed, in two ways:
 *
 * - idle (the model thinking, a queue, a retry's wait): its first IDLE_KEPT_MS keep their length, the rest
 *   shrinks towards at most twice that, so a 20 ms read and a 2 s command stay legible next to a minute of it;
 * - waiting for the user (a call asked for approval and nothing runs): squeezed too, but logarithmically, so it
 *   keeps growing with its length and is always drawn longer than any idle stretch: a 90 s review reads as the
 *   longest thing on the axis, which it was for the person who made it.
 *
 * Stretches longer than BREAK_MIN_MS are shown as breaks on the axis (kind `idle` or `user`). The squeeze of a
 * stretch depends only on how long it has lasted so far, so a stretch still going (the live "now") grows
 * smoothly and nothing jumps when it ends. A replay plays on the same axis (`realTime` is its inverse), so its
 * 1x also shortens idle and retry time as the live timeline does.
 *
 * "Display time" is real time with those stretches squeezed; x = LABEL_WIDTH + display * pxPerMs, so
 * zooming is one multiplication and keeps every proportion.
 */

export const LABEL_WIDTH = 84
export const PAD_RIGHT = 48
/** Every bar is at least this wide, so a 1 ms read is something to see and click. */
export const MIN_BAR = 12
export const MIN_PX_PER_MS = 0.00005
export const MAX_PX_PER_MS = 4
export const IDLE_KEPT_MS = 400
export const BREAK_MIN_MS = 1500

/** The display length of an idle stretch that has lasted `ms`. */
export function squeeze(ms: number): number {
  if (ms <= IDLE_KEPT_MS) return Math.max(0, ms)
  // x / (1 + x) rises like the stretch at first and then ever more slowly, never quite reaching 1 (so the axis
  // stays strictly increasing, which an exponential loses to rounding after a minute).
  const x = (ms - IDLE_KEPT_MS) / (4 * IDLE_KEPT_MS)
  return IDLE_KEPT_MS + (IDLE_KEPT_MS * x) / (1 + x)
}

/** The real length of an idle stretch drawn `display` long (inverse of `squeeze`; Infinity past its limit). */
export function unsqueeze(display: number): number {
  if (display <= IDLE_KEPT_MS) return Math.max(0, display)
  const y = (display - IDLE_KEPT_MS) / IDLE_KEPT_MS
  return y >= 1 ? Number.POSITIVE_INFINITY : IDLE_KEPT_MS + (4 * IDLE_KEPT_MS * y) / (1 - y)
}

/** The display length of a wait for the user that has lasted `ms`: always at least `squeeze(ms)`, unbounded. */
export function squeezeWait(ms: number): number {
  if (ms <= IDLE_KEPT_MS) return Math.max(0, ms)
  return IDLE_KEPT_MS + IDLE_KEPT_MS * 1.5 * Math.log2(1 + (ms - IDLE_KEPT_MS) / IDLE_KEPT_MS)
}

function unsqueezeWait(display: number): number {
  if (display <= IDLE_KEPT_MS) return Math.max(0, display)
  return IDLE_KEPT_MS + IDLE_KEPT_MS * (2 ** ((display - IDLE_KEPT_MS) / (IDLE_KEPT_MS * 1.5)) - 1)
}

export interface AxisBreak {
  /** Real times of the stretch. */
  from: number
  to: number
  /** Display times of its ends (sorted like the breaks: the ruler finds the ones in view by bisection). */
  displayFrom: number
  displayTo: number
  /** `user`: a call was waiting for the user's decision the whole time; `idle`: anything else without a call. */
  kind: 'idle' | 'user'
}

export interface Scale {
  origin: number
  pxPerMs: number
  time: TimeAxis
}

/**
 * The axis's spans, sorted: busy (calls running, linear) and waits for the user (squeezeWait), each with the
 * display time at which it starts. The time between spans is idle (squeeze).
 */
export interface TimeAxis {
  origin: number
  starts: Float64Array
  ends: Float64Array
  displayAt: Float64Array
  /** 1: a wait for the user; 0: busy. */
  user: Uint8Array
  breaks: AxisBreak[]
}

/** Sorted, merged copies of intervals. */
function merge(intervals: [number, number][]): [number, number][] {
  intervals.sort((a, b) => a[0] - b[0])
  const merged: [number, number][] = []
  for (const [s, e] of intervals) {
    const last = merged[merged.length - 1]
    if (last && s <= last[1]) last[1] = Math.max(last[1], e)
    else merged.push([s, e])
  }
  return merged
}

/** The parts of sorted, merged `from` that no interval of sorted, merged `minus` covers. */
function subtract(from: [number, number][], minus: [number, number][]): [number, number][] {
  const out: [number, number][] = []
  let j = 0
  for (const [s0, e] of from) {
    let s = s0
    while (j < minus.length && (minus[j] as [number, number])[1] <= s) j++
    for (let k = j; k < minus.length && s < e; k++) {
      const [ms, me] = minus[k] as [number, number]
      if (ms >= e) break
      if (ms > s) out.push([s, ms])
      s = Math.max(s, me)
    }
    if (s < e) out.push([s, e])
  }
  return out
}

/**
 * The axis of a session: every call's run is busy time; a call's wait for the user's decision (asked, not yet
 * answered) is user time where nothing runs. A call still running, or still waiting for the user, lasts up to
 * `openUntil` (the live now: Infinity, so the running stretch is never squeezed) or, in a finished log, its
 * last event.
 */
export function buildTimeAxis(view: SessionState, openUntil: number): TimeAxis {
  const origin = view.firstEventAt ?? 0
  const runs: [number, number][] = []
  const waits: [number, number][] = []
  for (const turn of view.turns) {
    for (const callId of turn.callIds) {
      const call = turn.calls[callId]
      if (!call) continue
      if (call.startedAt !== undefined) runs.push([call.startedAt, call.finishedAt ?? openUntil])
      const asked = call.approval?.requestedAt
      if (asked !== undefined) {
        const answered = call.approval?.decidedAt ?? (call.status === 'awaiting-approval' ? openUntil : asked)
        if (answered > asked) waits.push([asked, answered])
      }
    }
  }
  const busy = merge(runs)
  const spans = [
    ...busy.map(([s, e]) => ({ s, e, user: 0 })),
    ...subtract(merge(waits), busy).map(([s, e]) => ({ s, e, user: 1 })),
  ].sort((a, b) => a.s - b.s)
  const starts = new Float64Array(spans.length)
  const ends = new Float64Array(spans.length)
  const displayAt = new Float64Array(spans.length)
  const user = new Uint8Array(spans.length)
  const breaks: AxisBreak[] = []
  let display = 0
  let prevEnd = origin
  spans.forEach(({ s, e, user: u }, i) => {
    const idle = s - prevEnd
    const squeezed = squeeze(idle)
    if (idle > BREAK_MIN_MS)
      breaks.push({ from: prevEnd, to: s, displayFrom: display, displayTo: display + squeezed, kind: 'idle' })
    display += squeezed
    starts[i] = s
    ends[i] = e
    displayAt[i] = display
    user[i] = u
    const length = u ? squeezeWait(e - s) : e - s
    if (u && e - s > BREAK_MIN_MS && Number.isFinite(e))
      breaks.push({ from: s, to: e, displayFrom: display, displayTo: display + length, kind: 'user' })
    display += length
    prevEnd = e
  })
  return { origin, starts, ends, displayAt, user, breaks }
}

/** The index of the first entry whose `end(i)` reaches `at` (entries sorted by it), or `length`. */
export function firstReaching(length: number, end: (i: number) => number, at: number): number {
  let lo = 0
  let hi = length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (end(mid) < at) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The display length of the first `ms` of span i. */
const spanDisplay = (axis: TimeAxis, i: number, ms: number): number => (axis.user[i] ? squeezeWait(ms) : ms)

/** Display ms of a real time. */
export function displayTime(axis: TimeAxis, t: number): number {
  const { starts, ends, displayAt } = axis
  // The last span starting at or before t.
  let lo = 0
  let hi = starts.length - 1
  let i = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if ((starts[mid] as number) <= t) {
      i = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  if (i < 0) return squeeze(t - axis.origin)
  const start = starts[i] as number
  const end = ends[i] as number
  const at = displayAt[i] as number
  if (t <= end) return at + spanDisplay(axis, i, t - start)
  return at + spanDisplay(axis, i, end - start) + squeeze(t - end)
}

/** The real time drawn at display ms `display` (the inverse of displayTime), for a replay on this axis. */
export function realTime(axis: TimeAxis, display: number): number {
  const { starts, ends, displayAt } = axis
  const i = firstReaching(displayAt.length, (j) => displayAt[j] as number, display + 1e-9) - 1
  if (i < 0) return Math.min(axis.origin + unsqueeze(display), starts[0] ?? Number.POSITIVE_INFINITY)
  const start = starts[i] as number
  const end = ends[i] as number
  const d = display - (displayAt[i] as number)
  const length = spanDisplay(axis, i, end - start)
  if (d <= length) return start + (axis.user[i] ? unsqueezeWait(d) : d)
  return Math.min(end + unsqueeze(d - length), starts[i + 1] ?? Number.POSITIVE_INFINITY)
}

export const xOf = (scale: Scale, t: number): number =>
  LABEL_WIDTH + displayTime(scale.time, t) * scale.pxPerMs

/** The px per ms at which display times 0..span fill the visible width. */
export function fitPxPerMs(span: number, width: number): number {
  return Math.min(
    MAX_PX_PER_MS,
    Math.max(MIN_PX_PER_MS, (width - LABEL_WIDTH - PAD_RIGHT) / Math.max(span, 1000)),
  )
}
