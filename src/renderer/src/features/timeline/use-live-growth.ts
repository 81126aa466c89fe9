import { useCallback, useEffect, useRef, type RefObject } from 'react'
import type { Growth } from './TurnRow'
import { displayTime, MIN_BAR, xOf, type Scale } from './scale'

/**
 * Live growth without React: running bars widen, a waiting call's bar and its wait follow "now", and the now
 * line moves, in one requestAnimationFrame loop that writes straight to the DOM, so a long command costs no
 * React render per frame. `onOutgrown` is called when "now" passes the display time the fitted scale left
 * room for, so the view can re-fit.
 */
/**
 * The growth writes custom properties, not `left`/`width` themselves: React writes a style only when its value
 * changes, so a bar that finished as wide as React last drew it would otherwise keep the width it grew to (and
 * cover the bars after it). The element's style reads the property with React's value as the fallback
 * (`growable`), and dropping the property when the growth stops brings React's value back.
 */
const GROWN: Record<Growth, '--grow-left' | '--grow-width'> = {
  run: '--grow-width',
  'waiting-bar': '--grow-left',
  wait: '--grow-width',
}

/** A `left` or `width` the live growth can take over while the element grows. */
export const growable = (property: 'left' | 'width', px: number): string => `var(--grow-${property}, ${px}px)`

export function useLiveGrowth(
  active: boolean,
  scale: Scale,
  fitEndDisplay: number,
  nowLine: RefObject<HTMLDivElement | null>,
  onOutgrown: (t: number) => void,
): (el: HTMLElement | null, from: number | undefined, growth: Growth, inset?: number) => void {
  const growing = useRef(new Map<HTMLElement, { from: number; growth: Growth; inset: number }>())
  const scaleRef = useRef(scale)
  scaleRef.current = scale
  const fitEndRef = useRef(fitEndDisplay)
  fitEndRef.current = fitEndDisplay
  const outgrown = useRef(onOutgrown)
  outgrown.current = onOutgrown

  useEffect(() => {
    if (!active) return
    let id = requestAnimationFrame(function tick() {
      const t = Date.now()
      const s = scaleRef.current
      const nowX = xOf(s, t)
      for (const [el, { from, growth, inset }] of growing.current) {
        if (!el.isConnected) {
          growing.current.delete(el)
          continue
        }
        const fromX = xOf(s, from)
        switch (growth) {
          case 'run':
            el.style.setProperty(GROWN.run, `${Math.max(MIN_BAR, nowX - fromX)}px`)
            break
          case 'waiting-bar':
            el.style.setProperty(GROWN['waiting-bar'], `${Math.max(fromX, nowX) + inset}px`)
            break
          case 'wait':
            el.style.setProperty(GROWN.wait, `${Math.max(0, nowX - inset - fromX)}px`)
            break
        }
      }
      if (nowLine.current) nowLine.current.style.transform = `translateX(${nowX}px)`
      if (displayTime(s.time, t) > fitEndRef.current) outgrown.current(t)
      id = requestAnimationFrame(tick)
    })
    return () => cancelAnimationFrame(id)
  }, [active, nowLine])

  return useCallback((el: HTMLElement | null, from: number | undefined, growth: Growth, inset = 0) => {
    if (!el) return
    // What this growth does not (or no longer) drive goes back to React's value.
    for (const property of ['--grow-left', '--grow-width'] as const) {
      if (from === undefined || property !== GROWN[growth]) el.style.removeProperty(property)
    }
    if (from === undefined) growing.current.delete(el)
    else growing.current.set(el, { from, growth, inset })
  }, [])
}
