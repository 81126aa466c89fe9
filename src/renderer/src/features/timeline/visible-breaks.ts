import { firstReaching, type AxisBreak } from './scale'

/**
 * The breaks to draw for a horizontal range of the timeline: found by bisection (breaks are sorted by display
 * time), and those closer together than MERGE_PX on screen drawn as one. Zoomed out over a long day, thousands of
 * idle stretches fall within a few pixels of each other with the busy time between them narrower than a pixel:
 * drawn one by one they cost a band and a label each and show nothing more than one band does. So what is drawn
 * is bounded by the width in view (at most one band per MERGE_PX), never by the session's length.
 */

/** Breaks whose gap on screen is narrower than this are drawn as one band. */
export const MERGE_PX = 3

export interface ShownBreak extends AxisBreak {
  /** How many of the axis's breaks this band stands for (1: just this one). */
  count: number
  /** Of those, how many were waits for the user (the band then takes that kind: it is the one to see). */
  userCount: number
  /** The real time the merged breaks lasted, in all (busy moments between them not counted). */
  idleMs: number
}

/** The breaks at least partly within display times from..to, merged where they touch on screen at `pxPerMs`. */
export function visibleBreaks(
  breaks: readonly AxisBreak[],
  from: number,
  to: number,
  pxPerMs: number,
): ShownBreak[] {
  const out: ShownBreak[] = []
  const gap = MERGE_PX / pxPerMs
  for (
    let i = firstReaching(breaks.length, (j) => (breaks[j] as AxisBreak).displayTo, from);
    i < breaks.length;
    i++
  ) {
    const b = breaks[i] as AxisBreak
    if (b.displayFrom > to) break
    const last = out[out.length - 1]
    const user = b.kind === 'user' ? 1 : 0
    if (last && b.displayFrom - last.displayTo < gap) {
      last.to = b.to
      last.displayTo = b.displayTo
      last.count += 1
      last.userCount += user
      last.idleMs += b.to - b.from
      if (user) last.kind = 'user'
      continue
    }
    out.push({ ...b, count: 1, userCount: user, idleMs: b.to - b.from })
  }
  return out
}

/**
 * Whether [x, x + width) overlaps none of `taken`, for x rising from call to call: `taken` sorted by start once,
 * then each question costs the intervals that start before its end, counted once over all questions.
 */
export function freeSpans(taken: readonly [number, number][]): (x: number, width: number) => boolean {
  const sorted = [...taken].sort((a, b) => a[0] - b[0])
  let next = 0
  // The furthest end among the intervals starting before the last question's end.
  let reach = Number.NEGATIVE_INFINITY
  return (x, width) => {
    while (next < sorted.length && (sorted[next] as [number, number])[0] < x + width) {
      reach = Math.max(reach, (sorted[next] as [number, number])[1])
      next++
    }
    return reach <= x
  }
}
