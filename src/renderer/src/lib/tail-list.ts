/**
 * The geometry of a virtualized list that can be pinned to its end: a transcript that follows a live run, or a
 * replay that shows the moment scrubbed to. Pure (no DOM), so the React hook around it stays thin and this part is
 * tested under Node.
 *
 * The range to render comes from where the list is about to be scrolled, not from where the DOM was last
 * scrolled: a scrub to a distant moment renders the rows at its end in one pass, then writes scrollTop once. A
 * virtualizer that derives the range from the scroll event renders the old range first, scrolls, and renders
 * again, with a forced layout in between.
 *
 * Sizes are estimated until the row has been measured, then remembered by key and shape. Rows of the same shape
 * (a collapsed card of the same kind, a one-line text) come out the same height, so a measured row teaches the
 * estimate for its shape: after the first few, rows mount at their real height and need no second pass. While
 * the list is free (the user scrolled), a row above the view that turns out taller or shorter moves the scroll
 * position by the same amount, so what the user is reading stays put.
 *
 * Rows are drawn in slots (React keys) that outlive them: see `TailListItem.slot`.
 */

export type Follow = 'always' | 'when-at-end' | 'never'

/** Where the view goes on the next render: the end, a row, or wherever the user left it (null). */
type Pin = { kind: 'end' } | { kind: 'key'; key: string } | null

export interface TailListItem {
  index: number
  key: string
  /**
   * The element it is drawn in. A row still in range keeps its slot; a row coming into range takes the slot of one
   * that left: a replay jump rewrites the same dozen elements instead of tearing them down and building new ones.
   */
  slot: number
  start: number
  size: number
}

/** Within this many pixels of the end counts as at the end (a user reading the newest row keeps following). */
export const AT_END_SLACK = 48

/**
 * Layout passes that measurements alone may cause before the next change from outside (rows, viewport, scroll).
 * Sizes normally settle in one or two; rows whose height depends on where they are (seen in a 100,000-event
 * replay: two layouts taking turns forever) would otherwise re-render without end, which React stops by
 * throwing ("Maximum update depth exceeded") and the whole view is lost.
 */
export const MAX_SETTLE_PASSES = 8

export class TailList {
  private keys: readonly string[] = []
  private estimate: (index: number) => number = () => 50
  private shape: (index: number) => string | undefined = () => undefined
  /**
   * Measured sizes by key, then shape: a row's size holds for its shape (a replayed card grows a note once
   * approved and loses it again before). Two lookups, no key strings built per row and layout.
   */
  private readonly sizes = new Map<string, Map<string | undefined, number>>()
  /** The last measured size of each row shape. */
  private readonly learned = new Map<string, number>()
  /** starts[i] = offset of row i; starts[count] = the end of the last row. Recomputed lazily. */
  private starts = new Float64Array(1)
  private dirty = true
  private indexByKey: Map<string, number> | null = null
  private pin: Pin = { kind: 'end' }
  /** The DOM's scrollTop as last read or written. */
  private domTop = 0
  /** The top the user chose (free mode). */
  private freeTop = 0
  private lastWrite: number | null = null
  private rendered = { first: 0, last: -1 }
  private slots = new Map<string, number>()
  private slotCount = 0
  /** Layout passes caused by measurements since the last change from outside (see MAX_SETTLE_PASSES). */
  private settlePasses = 0

  constructor(
    /** Space above the first row and below the last. */
    readonly padStart = 0,
    readonly padEnd = 0,
    /** Rows mounted beyond each edge of the view. */
    readonly overscan = 1,
    public viewportHeight = 0,
  ) {}

  /**
   * The rows to show (a new array whenever they change) and how the view follows them: 'always' goes to the end
   * whenever they change, 'when-at-end' only if the view was at the end, 'never' stays where it is.
   */
  setRows(
    keys: readonly string[],
    estimate: (index: number) => number,
    follow: Follow,
    shape: (index: number) => string | undefined = () => undefined,
  ): void {
    this.estimate = estimate
    this.shape = shape
    if (keys === this.keys) return
    this.settlePasses = 0
    const wasAtEnd = this.atEnd()
    this.keys = keys
    this.dirty = true
    this.indexByKey = null
    // New rows end a "bring this row into view": it must not pull the view back on every event.
    if (this.pin?.kind === 'key' || follow === 'never') this.unpin()
    if (follow === 'always' || (follow === 'when-at-end' && wasAtEnd)) this.pin = { kind: 'end' }
  }

  get count(): number {
    return this.keys.length
  }

  get total(): number {
    this.layout()
    return (this.starts[this.keys.length] as number) + this.padEnd
  }

  /** Whether the view (as last seen in the DOM) shows the end of the list. */
  atEnd(): boolean {
    if (this.pin?.kind === 'end') return true
    return this.domTop + this.viewportHeight >= this.total - AT_END_SLACK
  }

  get following(): boolean {
    return this.pin?.kind === 'end'
  }

  /** Brings a row into the middle of the view (kept there while sizes settle, until the user scrolls). */
  scrollToKey(key: string): boolean {
    if (this.indexOf(key) < 0) return false
    this.pin = { kind: 'key', key }
    this.settlePasses = 0
    return true
  }

  /** The scrollTop the view should have now. */
  targetTop(): number {
    const max = Math.max(0, this.total - this.viewportHeight)
    let top = this.freeTop
    if (this.pin?.kind === 'end') top = max
    else if (this.pin?.kind === 'key') {
      const index = this.indexOf(this.pin.key)
      if (index >= 0) {
        const start = this.starts[index] as number
        const size = (this.starts[index + 1] as number) - start
        top = start + size / 2 - this.viewportHeight / 2
      }
    }
    return Math.max(0, Math.min(max, top))
  }

  /** The rows to mount for the target position: those in view plus `overscan` on each side. */
  items(): TailListItem[] {
    const top = this.targetTop()
    const count = this.keys.length
    const items: TailListItem[] = []
    if (count === 0) {
      this.rendered = { first: 0, last: -1 }
      return items
    }
    const { first, last } = this.rangeAt(top)
    const slots = new Map<string, number>()
    for (let i = first; i <= last; i++) {
      const key = this.keys[i] as string
      const slot = this.slots.get(key)
      if (slot !== undefined) slots.set(key, slot)
    }
    const taken = new Set(slots.values())
    const free = [...this.slots.values()].filter((slot) => !taken.has(slot)).reverse()
    for (let i = first; i <= last; i++) {
      const key = this.keys[i] as string
      let slot = slots.get(key)
      if (slot === undefined) slots.set(key, (slot = free.pop() ?? this.slotCount++))
      const start = this.starts[i] as number
      items.push({ index: i, key, slot, start, size: (this.starts[i + 1] as number) - start })
    }
    this.slots = slots
    this.rendered = { first, last }
    return items
  }

  /** Whether scrollTop must be written after this render, and to what. */
  pendingWrite(): number | null {
    const target = this.targetTop()
    return Math.abs(target - this.domTop) >= 1 ? target : null
  }

  /** The caller wrote `top` to the DOM. */
  wrote(top: number): void {
    this.domTop = top
    this.lastWrite = top
    if (this.pin === null) this.freeTop = top
  }

  /**
   * A scroll event with the DOM's scrollTop. The echo of our own write changes nothing; any other scroll is the
   * user's (or the browser clamping), and frees the view. Returns whether the mounted rows must change.
   */
  scrolled(top: number): boolean {
    this.domTop = top
    if (this.lastWrite !== null && Math.abs(top - this.lastWrite) < 1) {
      this.lastWrite = null
      return false
    }
    this.lastWrite = null
    this.unpin()
    this.settlePasses = 0
    const { first, last } = this.rangeAt(this.targetTop())
    return first !== this.rendered.first || last !== this.rendered.last
  }

  /** The viewport's height changed. Returns whether the mounted rows must change. */
  resized(height: number): boolean {
    if (Math.abs(height - this.viewportHeight) < 0.5) return false
    this.viewportHeight = height
    this.settlePasses = 0
    return true
  }

  /**
   * The mounted rows' measured sizes, after a commit. Returns whether the layout changed (false, whatever the
   * sizes, after MAX_SETTLE_PASSES in a row). In free mode the first row in view keeps its place on screen,
   * however the rows above it changed.
   */
  measured(sizes: Iterable<readonly [key: string, size: number]>): boolean {
    this.layout()
    let moved = false
    let learned = false
    const anchor = this.pin === null ? this.anchorAt(this.freeTop) : null
    const total = this.total
    for (const [key, size] of sizes) {
      const index = this.renderedIndexOf(key)
      if (index < 0) continue
      const shape = this.shape(index)
      let byShape = this.sizes.get(key)
      if (!byShape) this.sizes.set(key, (byShape = new Map()))
      byShape.set(shape, size)
      if (Math.abs((this.starts[index + 1] as number) - (this.starts[index] as number) - size) >= 0.5)
        moved = true
      if (shape !== undefined && this.learned.get(shape) !== size) {
        this.learned.set(shape, size)
        learned = true
      }
    }
    if (!moved && !learned) return false
    this.dirty = true
    this.layout()
    // A new size for a shape moves only the rows of that shape not measured yet: if none, nothing moved.
    if (!moved && Math.abs(this.total - total) < 0.5) return false
    if (anchor) this.freeTop = (this.starts[anchor.index] as number) + anchor.offset
    return ++this.settlePasses <= MAX_SETTLE_PASSES
  }

  /** Forgets measured sizes of rows no longer listed (a long live session keeps the map bounded). */
  prune(): void {
    if (this.sizes.size <= this.keys.length * 2) return
    const keep = new Set(this.keys)
    for (const key of this.sizes.keys()) if (!keep.has(key)) this.sizes.delete(key)
  }

  /** Measured rows are mounted ones: found among the rows rendered last, without indexing the whole list. */
  private renderedIndexOf(key: string): number {
    for (let i = this.rendered.first; i <= this.rendered.last; i++) if (this.keys[i] === key) return i
    return this.indexOf(key)
  }

  indexOf(key: string): number {
    if (!this.indexByKey) {
      this.indexByKey = new Map()
      this.keys.forEach((k, i) => this.indexByKey?.set(k, i))
    }
    return this.indexByKey.get(key) ?? -1
  }

  private unpin(): void {
    this.freeTop = this.domTop
    this.pin = null
  }

  /** The first row whose bottom is below `top`, and how far into it `top` is. */
  private anchorAt(top: number): { index: number; offset: number } {
    this.layout()
    let lo = 0
    let hi = Math.max(0, this.keys.length - 1)
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((this.starts[mid + 1] as number) <= top) lo = mid + 1
      else hi = mid
    }
    return { index: lo, offset: top - (this.starts[lo] as number) }
  }

  private rangeAt(top: number): { first: number; last: number } {
    const count = this.keys.length
    const firstVisible = this.anchorAt(top).index
    let last = firstVisible
    const bottom = top + this.viewportHeight
    while (last + 1 < count && (this.starts[last + 1] as number) < bottom) last++
    return {
      first: Math.max(0, firstVisible - this.overscan),
      last: Math.min(count - 1, last + this.overscan),
    }
  }

  private estimateAt(index: number, shape: string | undefined): number {
    return (shape === undefined ? undefined : this.learned.get(shape)) ?? this.estimate(index)
  }

  private layout(): void {
    if (!this.dirty) return
    const count = this.keys.length
    if (this.starts.length < count + 1)
      this.starts = new Float64Array(Math.max(count + 1, this.starts.length * 2))
    let offset = this.padStart
    for (let i = 0; i < count; i++) {
      this.starts[i] = offset
      const shape = this.shape(i)
      offset += this.sizes.get(this.keys[i] as string)?.get(shape) ?? this.estimateAt(i, shape)
    }
    this.starts[count] = offset
    this.dirty = false
  }
}
