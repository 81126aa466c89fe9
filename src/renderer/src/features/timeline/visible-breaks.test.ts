import { describe, expect, it } from 'vitest'
import type { AxisBreak } from './scale'
import { freeSpans, MERGE_PX, visibleBreaks } from './visible-breaks'

/** `n` idle breaks of 700 display ms each, `busy` display ms apart (1 display ms = 1 real ms here). */
function breaks(
  n: number,
  busy: number,
  kindOf: (i: number) => AxisBreak['kind'] = () => 'idle',
): AxisBreak[] {
  const out: AxisBreak[] = []
  for (let i = 0, d = 0; i < n; i++, d += 700 + busy)
    out.push({ from: d, to: d + 700, displayFrom: d, displayTo: d + 700, kind: kindOf(i) })
  return out
}

describe('visibleBreaks', () => {
  it('draws each break on its own where they stand apart on screen', () => {
    const all = breaks(10, 1000)
    const shown = visibleBreaks(all, 0, 1e9, 1)
    expect(shown).toHaveLength(10)
    expect(shown.map((b) => [b.from, b.to, b.count])).toEqual(all.map((b) => [b.from, b.to, 1]))
  })

  it('finds the breaks in view by time, and only those', () => {
    const all = breaks(1000, 1000)
    // Break k spans 1700k..1700k + 700: from the middle of break 10 to the start of break 30.
    const shown = visibleBreaks(all, 17_000 + 600, 51_000, 1)
    expect(shown[0]?.from).toBe(17_000)
    expect(shown[shown.length - 1]?.from).toBe(51_000)
    expect(shown).toHaveLength(21)
    expect(visibleBreaks(all, 17_700 + 1, 18_700 - 1, 1)).toEqual([])
  })

  it('zoomed out over a long day, draws at most one band per few pixels, keeping every break counted', () => {
    const all = breaks(20_000, 300, (i) => (i % 1000 === 7 ? 'user' : 'idle'))
    const span = (all[all.length - 1] as AxisBreak).displayTo
    const width = 1300
    const shown = visibleBreaks(all, 0, span, width / span)
    expect(shown.length).toBeLessThanOrEqual(width / MERGE_PX + 1)
    expect(shown.reduce((n, b) => n + b.count, 0)).toBe(20_000)
    expect(shown.reduce((n, b) => n + b.userCount, 0)).toBe(20)
    expect(shown.reduce((ms, b) => ms + b.idleMs, 0)).toBe(20_000 * 700)
    // A band holding a wait for the user is drawn as one: it is the one to notice.
    expect(shown.filter((b) => b.kind === 'user').length).toBeGreaterThan(0)
    expect(shown[0]?.from).toBe(0)
    expect(shown[shown.length - 1]?.to).toBe(span)
  })
})

describe('freeSpans', () => {
  it('answers like checking every interval, for rising positions', () => {
    const taken: [number, number][] = [
      [300, 370],
      [100, 150],
      [120, 400],
      [900, 920],
    ]
    const free = freeSpans(taken)
    for (let x = 0; x < 1000; x += 7) {
      const naive = !taken.some(([a, b]) => x < b && x + 46 > a)
      expect(free(x, 46), `x=${x}`).toBe(naive)
    }
  })
})
