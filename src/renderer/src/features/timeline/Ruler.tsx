import { memo, type RefObject } from 'react'
import { formatDuration, formatOffset } from '../../lib/format'
import { displayTime, firstReaching, LABEL_WIDTH, xOf, type Scale } from './scale'
import { useScrollRange } from './use-scroll-range'
import { freeSpans, visibleBreaks, type ShownBreak } from './visible-breaks'

const TICK_STEPS = [
  50, 100, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
]
/** Least space between two tick labels, and the widths of the ruler's labels. */
const TICK_ROOM = 64
const TICK_LABEL_PX = 46
const FLAG_PX = 50
const BREAK_LABEL_PX = 70
const USER_BREAK_LABEL_PX = 160

export interface RunMark {
  runId: string
  at: number
  label: string
  task: string
}

/**
 * The time axis, drawn only for the part in view. Ticks are real offsets from the session's start, placed in
 * the busy stretches (where the scale is linear); each squeezed idle stretch is a marked break.
 */
export const Ruler = memo(function Ruler({
  scale,
  scrollRef,
  width,
  runs,
  rewindAts,
}: {
  scale: Scale
  scrollRef: RefObject<HTMLDivElement | null>
  width: number
  runs: RunMark[]
  /** Moments of undos and rewinds: their marks (RewindMarks) stand on the ruler there. */
  rewindAts: readonly number[]
}) {
  const range = useScrollRange(scrollRef)
  const { time, pxPerMs, origin } = scale
  const step = TICK_STEPS.find((s) => s * pxPerMs >= TICK_ROOM) ?? 3_600_000
  const fromX = range.left
  const toX = range.left + range.width
  const fromD = (fromX - LABEL_WIDTH) / pxPerMs
  const toD = (toX - LABEL_WIDTH) / pxPerMs
  const breaks = visibleBreaks(time.breaks, fromD, toD, pxPerMs)
  // Run flags, rewind marks and break labels have their place first; a tick label that would overlap one is
  // left out.
  const taken: [number, number][] = [
    ...[...runs.map((r) => r.at), ...rewindAts].flatMap((at): [number, number][] => {
      const x = xOf(scale, at)
      return x + FLAG_PX < fromX - TICK_ROOM || x > toX ? [] : [[x, x + FLAG_PX]]
    }),
    ...breaks.map((b): [number, number] => {
      const x = xOf(scale, b.from)
      return [x, x + Math.min(b.kind === 'user' ? USER_BREAK_LABEL_PX : BREAK_LABEL_PX, xOf(scale, b.to) - x)]
    }),
  ]
  const free = freeSpans(taken)
  const ticks: { t: number; x: number }[] = []
  let lastX = Number.NEGATIVE_INFINITY
  const push = (t: number): void => {
    const x = xOf(scale, t)
    if (x < fromX - TICK_ROOM || x > toX || x - lastX < TICK_ROOM) return
    // Candidates come in rising x (busy spans in order, ticks in order within each), as freeSpans needs.
    if (!free(x, TICK_LABEL_PX)) return
    ticks.push({ t, x })
    lastX = x
  }
  push(origin)
  // Busy spans in view: their display times are sorted, so start at the first one that reaches the view.
  const first = firstReaching(time.starts.length, (i) => displayTime(time, time.ends[i] as number), fromD)
  for (let i = first; i < time.starts.length && ticks.length < 200; i++) {
    const d = time.displayAt[i] as number
    const start = time.starts[i] as number
    // A wait for the user is squeezed, not linear: its break label says how long it was, ticks would crowd it.
    if (time.user[i]) continue
    const end = Math.min(time.ends[i] as number, start + (toD - d))
    if (d > toD) break
    if (d + (end - start) < fromD) continue
    push(start)
    for (let t = Math.ceil((start - origin) / step) * step + origin; t <= end; t += step) push(t)
  }
  return (
    <div className="timeline-ruler" style={{ width }} aria-hidden="true">
      {breaks.map((b) => {
        const x0 = xOf(scale, b.from)
        const w = xOf(scale, b.to) - x0
        return (
          <span
            key={b.from}
            className={`axis-break ${b.kind}`}
            data-testid="axis-break"
            data-kind={b.kind}
            style={{ left: x0, width: w }}
            data-count={b.count}
            title={breakTitle(b)}
          >
            {breakLabel(b, w)}
          </span>
        )
      })}
      {ticks.map(({ t, x }) => (
        <span key={t} className="tick" style={{ left: x }}>
          {formatOffset(t - origin)}
        </span>
      ))}
      {runs.map((r) => (
        <span
          key={r.runId}
          className="run-flag"
          data-testid="run-start"
          style={{ left: xOf(scale, r.at) }}
          title={r.task}
        >
          {r.label}
        </span>
      ))}
    </div>
  )
})

function breakTitle(b: ShownBreak): string {
  if (b.count === 1)
    return b.kind === 'user'
      ? `${formatDuration(b.idleMs)} waiting for you, drawn shorter (but never as short as idle time)`
      : `${formatDuration(b.idleMs)} without a running call, drawn shorter`
  const waits = b.userCount > 0 ? `, ${b.userCount} of them waiting for you` : ''
  return `${b.count} stretches (${formatDuration(b.idleMs)} in all${waits}) without a running call, drawn shorter: zoom in to see each`
}

/** A break's label on the ruler, as much of it as its width holds. */
function breakLabel(b: ShownBreak, width: number): string {
  const length = formatDuration(b.idleMs)
  if (b.kind === 'user') {
    if (width > 150) return `waiting for you · ${length}`
    return width > 60 ? `you · ${length}` : '⋯'
  }
  return width > 44 ? `⋯ ${length}` : '⋯'
}

/** The break bands through the lanes, under the bars. */
export const BreakBands = memo(function BreakBands({
  scale,
  scrollRef,
}: {
  scale: Scale
  scrollRef: RefObject<HTMLDivElement | null>
}) {
  const range = useScrollRange(scrollRef)
  const fromD = (range.left - LABEL_WIDTH) / scale.pxPerMs
  const toD = (range.left + range.width - LABEL_WIDTH) / scale.pxPerMs
  return (
    <>
      {visibleBreaks(scale.time.breaks, fromD, toD, scale.pxPerMs).map((b) => (
        <span
          key={b.from}
          className={`break-band ${b.kind}`}
          aria-hidden="true"
          style={{
            left: LABEL_WIDTH + b.displayFrom * scale.pxPerMs,
            width: (b.displayTo - b.displayFrom) * scale.pxPerMs,
          }}
        />
      ))}
    </>
  )
})
