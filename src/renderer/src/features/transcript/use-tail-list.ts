import { useCallback, useLayoutEffect, useReducer, useRef, useState, type RefObject } from 'react'
import { flushSync } from 'react-dom'
import { TailList, type Follow, type TailListItem } from '../../lib/tail-list'

interface Options {
  /** Row keys, a new array whenever the rows change. */
  keys: readonly string[]
  estimate(index: number): number
  /** Rows of one shape have one height: a measured row teaches the estimate for its shape. */
  shape?(index: number): string | undefined
  follow: Follow
  scrollRef: RefObject<HTMLElement | null>
  padStart?: number
  padEnd?: number
  overscan?: number
}

export interface TailListView {
  /** The rows to mount, each with the slot to use as its React key. */
  items: TailListItem[]
  total: number
  /** Ref for the element of a slot. */
  slotRef(slot: number): (el: HTMLElement | null) => void
  scrollToKey(key: string): void
}

/**
 * A virtualized list pinned to its end while it follows (see TailList). One render per change: the range is
 * computed for the position the list is about to scroll to, and after the commit scrollTop is written once and
 * the mounted rows are measured (the layout is clean by then, so the reads are cheap). Row sizes change only when
 * React renders them or the viewport resizes, and both end up here. Scroll events re-render only when the mounted
 * rows must change, synchronously so they are in the same frame as the scroll.
 */
export function useTailList({
  keys,
  estimate,
  shape,
  follow,
  scrollRef,
  padStart = 0,
  padEnd = 0,
  overscan = 1,
}: Options): TailListView {
  const [list] = useState(() => new TailList(padStart, padEnd, overscan))
  const [, rerender] = useReducer((n: number) => n + 1, 0)
  list.setRows(keys, estimate, follow, shape)
  const items = list.items()

  // Slot elements, with one stable ref callback per slot.
  const elements = useRef(new Map<number, HTMLElement>())
  const refs = useRef(new Map<number, (el: HTMLElement | null) => void>())
  const slotRef = useCallback((slot: number) => {
    let ref = refs.current.get(slot)
    if (!ref) {
      ref = (el) => {
        if (el) elements.current.set(slot, el)
        else elements.current.delete(slot)
      }
      refs.current.set(slot, ref)
    }
    return ref
  }, [])

  // The viewport: its height from a ResizeObserver (a new width re-measures every row), its position from scroll
  // events.
  useLayoutEffect(() => {
    const el = scrollRef.current
    if (!el) return
    list.resized(el.clientHeight)
    rerender()
    let width = el.clientWidth
    const onScroll = (): void => {
      if (list.scrolled(el.scrollTop)) flushSync(rerender)
    }
    const observer = new ResizeObserver(() => {
      const resized = list.resized(el.clientHeight)
      if (resized || el.clientWidth !== width) {
        width = el.clientWidth
        flushSync(rerender)
      }
    })
    observer.observe(el)
    el.addEventListener('scroll', onScroll, { passive: true })
    return () => {
      observer.disconnect()
      el.removeEventListener('scroll', onScroll)
    }
  }, [list, scrollRef])

  // After every commit: move the view where the rows were laid out for, then measure them. A size that differs
  // from the one laid out renders again before the frame is painted.
  useLayoutEffect(() => {
    const el = scrollRef.current
    if (!el) return
    const top = list.pendingWrite()
    if (top !== null) {
      el.scrollTop = top
      list.wrote(top)
    }
    const sizes: [string, number][] = []
    for (const item of items) {
      const row = elements.current.get(item.slot)
      if (row) sizes.push([item.key, row.getBoundingClientRect().height])
    }
    if (list.measured(sizes)) rerender()
  })

  useLayoutEffect(() => list.prune(), [list, keys])

  const scrollToKey = useCallback(
    (key: string) => {
      if (list.scrollToKey(key)) rerender()
    },
    [list],
  )
  return { items, total: list.total, slotRef, scrollToKey }
}
