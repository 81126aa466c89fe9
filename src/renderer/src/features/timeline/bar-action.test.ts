import { describe, expect, it } from 'vitest'
import { placeBarAction } from './geometry'

const base = { besideRight: 0, labelLeftPx: 0, contentWidth: 600, actionPx: 104 }

describe('the button beside a bar', () => {
  it('goes right of the bar where there is room', () => {
    const p = placeBarAction({ ...base, x: 100, width: 20, roomLeft: 100, roomRight: 300 })
    expect(p).toEqual({ left: 122, onLeft: false, below: false })
  })

  it('goes left where the right has another bar and the left has room', () => {
    const p = placeBarAction({ ...base, x: 300, width: 20, roomLeft: 200, roomRight: 10 })
    expect(p.onLeft).toBe(true)
    expect(p.left + base.actionPx).toBeLessThanOrEqual(300)
  })

  // A short bar near the right edge with another bar on its left (seen at 800x600: the button covered the bar and
  // took every click meant for it).
  const cases = [
    { x: 560, width: 4, roomLeft: 0, roomRight: 30 },
    { x: 560, width: 4, roomLeft: 20, roomRight: 30, labelLeftPx: 60 },
    { x: 0, width: 590, roomLeft: 0, roomRight: 6 },
    { x: 50, width: 500, roomLeft: 40, roomRight: 40 },
    { x: 498, width: 2, roomLeft: 0, roomRight: 90 },
  ]
  it.each(cases)('never covers its own bar (%o)', (c) => {
    const p = placeBarAction({ ...base, ...c })
    const barLeft = c.x - (c.labelLeftPx ?? 0)
    const overlaps = !p.below && p.left < c.x + c.width && p.left + base.actionPx > barLeft
    expect(overlaps).toBe(false)
  })
})
