import { useEffect, useState, type RefObject } from 'react'

/**
 * The horizontal range of the timeline in view, updated at most once a frame and only when it moves sideways
 * (a vertical scroll re-renders nothing that depends on it).
 */
export function useScrollRange(scrollRef: RefObject<HTMLDivElement | null>): { left: number; width: number } {
  const [range, setRange] = useState({ left: 0, width: 1000 })
  useEffect(() => {
    const el = scrollRef.current
    if (!el) return
    let frame: number | null = null
    const update = (): void => {
      frame = null
      setRange((r) =>
        r.left === el.scrollLeft && r.width === el.clientWidth
          ? r
          : { left: el.scrollLeft, width: el.clientWidth },
      )
    }
    const onScroll = (): void => {
      frame ??= requestAnimationFrame(update)
    }
    update()
    el.addEventListener('scroll', onScroll, { passive: true })
    const observer = new ResizeObserver(onScroll)
    observer.observe(el)
    return () => {
      el.removeEventListener('scroll', onScroll)
      observer.disconnect()
      if (frame !== null) cancelAnimationFrame(frame)
    }
  }, [scrollRef])
  return range
}
