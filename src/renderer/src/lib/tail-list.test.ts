import { describe, expect, it } from 'vitest'
import { MAX_SETTLE_PASSES, TailList } from './tail-list'

const keys = (n: number, prefix = 'r'): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`)
const fifty = (): number => 50

/** A list of `n` rows of 50 px in a 200 px viewport, as the DOM would have it after the first commit. */
function list(n: number, follow: 'always' | 'when-at-end' | 'never' = 'when-at-end'): TailList {
  const l = new TailList(0, 0, 1, 200)
  l.setRows(keys(n), fifty, follow)
  const top = l.pendingWrite()
  if (top !== null) l.wrote(top)
  return l
}

describe('TailList', () => {
  it('starts at the end and mounts the rows in view plus one each side', () => {
    const l = list(100)
    expect(l.total).toBe(5000)
    expect(l.targetTop()).toBe(4800)
    const items = l.items()
    expect(items.map((i) => i.index)).toEqual([95, 96, 97, 98, 99])
    expect(items[0]).toMatchObject({ index: 95, key: 'r95', start: 4750, size: 50 })
  })

  it('keeps the slot of a row that stays in range and gives the slots of rows that left to rows that came', () => {
    const l = list(100, 'always')
    const before = new Map(l.items().map((i) => [i.key, i.slot]))
    l.setRows(keys(101), fifty, 'always')
    const after = l.items()
    for (const item of after) if (before.has(item.key)) expect(item.slot).toBe(before.get(item.key))
    // r95 left, r100 came: into r95's element.
    expect(after.find((i) => i.key === 'r100')?.slot).toBe(before.get('r95'))
    // A jump elsewhere reuses the same elements, no new ones.
    l.setRows(keys(40, 'x'), fifty, 'always')
    const slots = l.items().map((i) => i.slot)
    expect(new Set(slots).size).toBe(slots.length)
    expect(slots.every((slot) => [...before.values()].includes(slot))).toBe(true)
  })

  it('lays out the rows for where it is about to scroll, so a jump needs one render', () => {
    const l = list(100, 'always')
    // Back to a moment with 40 rows: the range is the end of those 40, before any scroll event.
    l.setRows(keys(40), fifty, 'always')
    expect(l.items().map((i) => i.index)).toEqual([35, 36, 37, 38, 39])
    expect(l.pendingWrite()).toBe(1800)
    l.wrote(1800)
    // The scroll event that follows is the echo of that write: nothing to render.
    expect(l.scrolled(1800)).toBe(false)
    expect(l.pendingWrite()).toBeNull()
  })

  it('keeps following new rows while at the end, and stays put once the user scrolled up', () => {
    const l = list(100)
    l.setRows(keys(101), fifty, 'when-at-end')
    expect(l.targetTop()).toBe(4850)
    l.wrote(4850)
    expect(l.scrolled(1000)).toBe(true)
    expect(l.following).toBe(false)
    l.setRows(keys(110), fifty, 'when-at-end')
    expect(l.targetTop()).toBe(1000)
    expect(l.pendingWrite()).toBeNull()
    // Scrolling back near the end follows again with the next rows.
    l.scrolled(110 * 50 - 200 - 20)
    l.setRows(keys(111), fifty, 'when-at-end')
    expect(l.targetTop()).toBe(111 * 50 - 200)
  })

  it("'never' leaves the view where it is; 'always' goes to the end even after the user scrolled", () => {
    const l = list(100)
    l.scrolled(4800)
    l.setRows(keys(120), fifty, 'never')
    expect(l.targetTop()).toBe(4800)
    l.scrolled(300)
    l.setRows(keys(121), fifty, 'always')
    expect(l.targetTop()).toBe(121 * 50 - 200)
  })

  it('centres a row asked for, then lets the user scroll away', () => {
    const l = list(100)
    expect(l.scrollToKey('r10')).toBe(true)
    expect(l.targetTop()).toBe(10 * 50 + 25 - 100)
    expect(l.items().map((i) => i.index)).toEqual([7, 8, 9, 10, 11, 12, 13])
    l.wrote(425)
    expect(l.scrolled(425)).toBe(false)
    expect(l.scrolled(2000)).toBe(true)
    expect(l.targetTop()).toBe(2000)
    expect(l.scrollToKey('missing')).toBe(false)
  })

  it('clamps a free position when the rows shrink under it', () => {
    const l = list(100)
    l.scrolled(3000)
    l.setRows(keys(20), fifty, 'never')
    expect(l.targetTop()).toBe(800)
    expect(l.pendingWrite()).toBe(800)
  })

  it('uses measured sizes, and keeps the row in view still when rows above it change size', () => {
    const l = list(100)
    l.scrolled(1000) // row 20 at the top of the view
    expect(l.measured([['r5', 80]])).toBe(true)
    expect(l.total).toBe(5030)
    // Row 20 moved down by 30 px: so does the view.
    expect(l.targetTop()).toBe(1030)
    expect(l.items()[1]).toMatchObject({ index: 20, start: 1030 })
    // The same size again changes nothing.
    expect(l.measured([['r5', 80]])).toBe(false)
  })

  it('learns the size of a row shape for rows not measured yet', () => {
    const l = new TailList(0, 0, 1, 200)
    const shape = (i: number): string => (i % 2 === 0 ? 'even' : 'odd')
    l.setRows(keys(10), fifty, 'when-at-end', shape)
    expect(l.total).toBe(500)
    expect(l.measured([['r0', 30]])).toBe(true)
    // Every even row is now estimated at 30.
    expect(l.total).toBe(5 * 30 + 5 * 50)
    // A size per key and shape: the same row in another shape has its own.
    const other = (i: number): string => (i === 0 ? 'noted' : shape(i))
    l.setRows(keys(10), fifty, 'when-at-end', other)
    expect(l.items().find((i) => i.key === 'r0')?.size ?? 50).toBe(50)
  })

  it('pads the content and handles an empty list', () => {
    const l = new TailList(10, 20, 1, 200)
    l.setRows([], fifty, 'always')
    expect(l.items()).toEqual([])
    expect(l.total).toBe(30)
    l.setRows(keys(2), fifty, 'always')
    expect(l.items().map((i) => i.start)).toEqual([10, 60])
    expect(l.total).toBe(130)
    expect(l.targetTop()).toBe(0)
  })

  it('re-renders on a viewport resize only when the height changed', () => {
    const l = list(100)
    expect(l.resized(200)).toBe(false)
    expect(l.resized(400)).toBe(true)
    expect(l.targetTop()).toBe(4600)
  })

  it('stops re-laying out after MAX_SETTLE_PASSES when measurements never settle, until something changes', () => {
    const l = list(100, 'always')
    // Rows whose measured height depends on where they land: each pass reports another size.
    const passes = (): number => {
      let n = 0
      for (let pass = 0; pass < 50; pass++) {
        const sizes = l.items().map((i) => [i.key, pass % 2 === 0 ? 40 : 60] as const)
        if (!l.measured(sizes)) break
        n++
      }
      return n
    }
    expect(passes()).toBe(MAX_SETTLE_PASSES)
    // New rows (a scrub, a live event) start a fresh budget.
    l.setRows(keys(101), fifty, 'always')
    expect(passes()).toBe(MAX_SETTLE_PASSES)
  })
})
