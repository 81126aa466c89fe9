import type { SessionState } from '../../../../shared/reducer'

/**
 * The timeline's horizontal scale. Time in which no call runs (the model thinking, the user reviewing, a
 * queue) is squeezed: its first IDLE_KEPT_MS keep their length, the rest shrinks towards at most twice that, so
 * a 20 ms read and a 2 s command stay legible next to a 90 s review. Squeezed stretches longer than
 * BREAK_MIN_MS are shown as breaks on the axis. The squeeze of a stretch depends only on how long it has lasted
 * so far, so a stretch still going (the live "now") grows smoothly and nothing jumps when it ends.
 *
 * "Display time" is real time with the idle stretches squeezed; x = LABEL_WIDTH + display * pxPerMs, so
 * zooming is one multiplication and keeps every proportion.
 */

export const LABEL_WIDTH = 76
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

export interface AxisBreak {
  /** Real times of the idle stretch. */
  from: number
  to: number
  /** Display times of its ends (sorted like the breaks: the ruler finds the ones in view by bisection). */
  displayFrom: number
  displayTo: number
}

export interface Scale {
  origin: number
  pxPerMs: number
  time: TimeAxis
}

/** Busy spans (merged call runs), sorted, with the display time at which each starts. */
export interface TimeAxis {
  origin: number
  starts: Float64Array
  ends: Float64Array
  displayAt: Float64Array
  breaks: AxisBreak[]
}

/**
 * The axis of a session: every call's run is busy time. A call still running is busy up to `openUntil` (the
 * live now: Infinity, so the running stretch is never squeezed) or, in a finished log, its last event.
 */
export function buildTimeAxis(view: SessionState, openUntil: number): TimeAxis {
  const origin = view.firstEventAt ?? 0
  const runs: [number, number][] = []
  for (const turn of view.turns) {
    for (const callId of turn.callIds) {
      const call = turn.calls[callId]
      if (call?.startedAt === undefined) continue
      runs.push([call.startedAt, call.finishedAt ?? openUntil])
    }
  }
  runs.sort((a, b) => a[0] - b[0])
  const merged: [number, number][] = []
  for (const [s, e] of runs) {
    const last = merged[merged.length - 1]
    if (last && s <= last[1]) last[1] = Math.max(last[1], e)
    else merged.push([s, e])
  }
  const starts = new Float64Array(merged.length)
  const ends = new Float64Array(merged.length)
  const displayAt = new Float64Array(merged.length)
  const breaks: AxisBreak[] = []
  let display = 0
  let prevEnd = origin
  merged.forEach(([s, e], i) => {
    const idle = s - prevEnd
    const squeezed = squeeze(idle)
    if (idle > BREAK_MIN_MS)
      breaks.push({ from: prevEnd, to: s, displayFrom: display, displayTo: display + squeezed })
    display += squeezed
    starts[i] = s
    ends[i] = e
    displayAt[i] = display
    display += e - s
    prevEnd = e
  })
  return { origin, starts, ends, displayAt, breaks }
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

/** Display ms of a real time. */
export function displayTime(axis: TimeAxis, t: number): number {
  const { starts, ends, displayAt } = axis
  // The last busy span starting at or before t.
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
  if (t <= end) return at + (t - start)
  return at + (end - start) + squeeze(t - end)
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
