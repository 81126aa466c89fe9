import { describe, expect, it } from 'vitest'
import type { SessionState, TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { buildTimeAxis, displayTime, IDLE_KEPT_MS, squeeze } from './scale'

function session(runs: [number, number | undefined][]): SessionState {
  const calls: Record<string, ToolCallState> = {}
  runs.forEach(([startedAt, finishedAt], i) => {
    calls[`c${i}`] = { callId: `c${i}`, queuedAt: startedAt, startedAt, finishedAt } as ToolCallState
  })
  const turn = { turn: 1, startedAt: 0, blocks: [], callIds: Object.keys(calls), calls } as TurnState
  return { turns: [turn], firstEventAt: 0 } as unknown as SessionState
}

describe('the squeezed time axis', () => {
  it('keeps busy time linear and squeezes a long idle stretch to under twice IDLE_KEPT_MS', () => {
    // A 20 ms read, 90 s of review, a 2 s command.
    const axis = buildTimeAxis(
      session([
        [0, 20],
        [90_020, 92_020],
      ]),
      0,
    )
    expect(displayTime(axis, 20) - displayTime(axis, 0)).toBe(20)
    expect(displayTime(axis, 92_020) - displayTime(axis, 90_020)).toBeCloseTo(2000, 6)
    const gap = displayTime(axis, 90_020) - displayTime(axis, 20)
    expect(gap).toBeGreaterThan(IDLE_KEPT_MS)
    expect(gap).toBeLessThan(2 * IDLE_KEPT_MS)
    expect(axis.breaks).toMatchObject([{ from: 20, to: 90_020, displayFrom: 20 }])
  })

  it('is monotonic, and a stretch still going grows without jumps', () => {
    const axis = buildTimeAxis(session([[0, 100]]), 0)
    let previous = -1
    for (let t = 0; t < 60_000; t += 250) {
      const d = displayTime(axis, t)
      expect(d).toBeGreaterThan(previous)
      previous = d
    }
    expect(squeeze(IDLE_KEPT_MS)).toBe(IDLE_KEPT_MS)
    expect(squeeze(IDLE_KEPT_MS + 1) - IDLE_KEPT_MS).toBeLessThan(1.01)
  })

  it('never squeezes a call still running', () => {
    const axis = buildTimeAxis(session([[1000, undefined]]), Number.POSITIVE_INFINITY)
    expect(displayTime(axis, 61_000) - displayTime(axis, 1000)).toBe(60_000)
  })

  it('merges calls that overlap into one busy span', () => {
    const axis = buildTimeAxis(
      session([
        [0, 50],
        [10, 80],
        [5000, 5010],
      ]),
      0,
    )
    expect(Array.from(axis.starts)).toEqual([0, 5000])
    expect(Array.from(axis.ends)).toEqual([80, 5010])
  })
})
