import { describe, expect, it } from 'vitest'
import { TimeSlices } from './time-slices'

describe('TimeSlices', () => {
  it('gives the event loop back once a slice has run its budget, and not before', async () => {
    const slices = new TimeSlices(5)
    let served = 0
    // Work waiting for the event loop (as an IPC message or a timer would be).
    setImmediate(() => served++)
    // Well within the slice: no yield, so the waiting work has not run.
    await slices.tick()
    expect(served).toBe(0)
    // Blocking work past the budget: the next tick lets the waiting work run before going on.
    const end = performance.now() + 6
    while (performance.now() < end) {
      // busy, as blocking reads would be
    }
    await slices.tick()
    expect(served).toBe(1)
  })
})
