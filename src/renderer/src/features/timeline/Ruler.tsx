import { useEffect, useState, type RefObject } from 'react'
import { formatOffset } from '../../lib/format'
import { LABEL_WIDTH, type Scale } from './scale'

const TICK_STEPS = [
  50, 100, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
]

/** The time axis, drawn only for the part in view (a long session zoomed in would otherwise need thousands). */
export function Ruler({
  scale,
  scrollRef,
  width,
}: {
  scale: Scale
  scrollRef: RefObject<HTMLDivElement | null>
  width: number
}) {
  const [range, setRange] = useState({ left: 0, width: 1000 })
  useEffect(() => {
    const el = scrollRef.current
    if (!el) return
    let frame: number | null = null
    const update = (): void => {
      frame = null
      setRange({ left: el.scrollLeft, width: el.clientWidth })
    }
    const onScroll = (): void => {
      frame ??= requestAnimationFrame(update)
    }
    update()
    el.addEventListener('scroll', onScroll, { passive: true })
    return () => {
      el.removeEventListener('scroll', onScroll)
      if (frame !== null) cancelAnimationFrame(frame)
    }
  }, [scrollRef])
  const step = TICK_STEPS.find((s) => s * scale.pxPerMs >= 80) ?? 3_600_000
  const fromT = scale.origin + (range.left - LABEL_WIDTH) / scale.pxPerMs
  const toT = scale.origin + (range.left + range.width) / scale.pxPerMs
  const ticks: number[] = []
  for (
    let t = Math.max(0, Math.floor((fromT - scale.origin) / step)) * step;
    t <= toT - scale.origin && ticks.length < 400;
    t += step
  ) {
    ticks.push(t)
  }
  return (
    <div className="timeline-ruler" style={{ width }} aria-hidden="true">
      {ticks.map((t) => (
        <span key={t} className="tick" style={{ left: LABEL_WIDTH + t * scale.pxPerMs }}>
          {formatOffset(t)}
        </span>
      ))}
    </div>
  )
}
