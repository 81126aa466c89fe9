import { describe, expect, it } from 'vitest'
import type { SessionState, TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { placeTurn, type BarGeometry } from './geometry'
import { layoutTurn } from './layout'
import { buildTimeAxis, displayTime, realTime, squeeze, squeezeWait, type Scale } from './scale'

// Issue 23 item 4: a serial lane is a chain on one row; parallel rows only where calls overlapped in time; a wait
// for the user is drawn longer than any idle stretch and grows with its length.

const serial = { safe: false, lane: { kind: 'serial' as const }, name: 'write_file' }
const parallel = { safe: true, lane: { kind: 'parallel' as const, group: 0 }, name: 'read_file' }

function call(callId: string, index: number, fields: Partial<ToolCallState>): ToolCallState {
  return {
    callId,
    turn: 1,
    index,
    input: {},
    queuedAt: 0,
    status: 'ok',
    isError: false,
    output: '',
    ...fields,
  } as ToolCallState
}

function turn(calls: ToolCallState[]): TurnState {
  return {
    turn: 1,
    startedAt: 0,
    blocks: [],
    callIds: calls.map((c) => c.callId),
    calls: Object.fromEntries(calls.map((c) => [c.callId, c])),
  }
}

const scaleOf = (t: TurnState, pxPerMs: number): Scale => ({
  origin: 0,
  pxPerMs,
  time: buildTimeAxis({ turns: [t], firstEventAt: 0 } as unknown as SessionState, Infinity),
})

const noOverlap = (bars: BarGeometry[]): void => {
  const sorted = [...bars].sort((a, b) => a.x - b.x)
  for (let i = 1; i < sorted.length; i++)
    expect(sorted[i]!.x).toBeGreaterThanOrEqual(sorted[i - 1]!.x + sorted[i - 1]!.width)
}

describe('the lanes at a glance', () => {
  it('draws five 1 ms writes in a row as one chain, none covering the next, at any zoom', () => {
    const t = turn(
      Array.from({ length: 5 }, (_, i) =>
        call(`w${i}`, i, { ...serial, startedAt: 10 + i * 2, finishedAt: 11 + i * 2 }),
      ),
    )
    for (const px of [0.001, 0.1, 1, 4]) {
      const g = placeTurn(layoutTurn(t), scaleOf(t, px))
      expect(g.serial.map((b) => b.row)).toEqual([0, 0, 0, 0, 0])
      expect(g.serialRows).toBe(1)
      noOverlap(g.serial)
      // In call order, left to right.
      expect(g.serial.map((b) => b.bar.call.callId)).toEqual(
        [...g.serial].sort((a, b) => a.x - b.x).map((b) => b.bar.call.callId),
      )
    }
  })

  it('keeps serial calls still waiting on the same row, one after another at "now"', () => {
    const t = turn([
      call('done', 0, { ...serial, startedAt: 0, finishedAt: 5 }),
      call('a', 1, { ...serial, status: 'awaiting-approval' }),
      call('b', 2, { ...serial, status: 'awaiting-approval' }),
      call('c', 3, { ...serial, status: 'queued' }),
    ])
    const g = placeTurn(layoutTurn(t), scaleOf(t, 1))
    expect(g.serialRows).toBe(1)
    const offsets = g.serial.filter((b) => b.bar.runStart === undefined).map((b) => b.chainOffset)
    expect(offsets[0]).toBe(0)
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]! - offsets[i - 1]!).toBeGreaterThanOrEqual(12)
    // Only the first shows its wait: the others' time is under the bars before them.
    expect(g.serial.filter((b) => !b.hideWait && b.bar.runStart === undefined)).toHaveLength(1)
  })

  it('stacks parallel calls only where they overlapped in time, and never lets bars of one row cover each other', () => {
    const t = turn([
      call('a', 0, { ...parallel, startedAt: 0, finishedAt: 50 }),
      call('b', 1, { ...parallel, startedAt: 10, finishedAt: 40 }),
      // After both: shares row 0, even though at a small scale its bar would touch a's.
      call('c', 2, { ...parallel, startedAt: 51, finishedAt: 52 }),
      call('d', 3, { ...parallel, startedAt: 52, finishedAt: 53 }),
    ])
    for (const px of [0.01, 1]) {
      const g = placeTurn(layoutTurn(t), scaleOf(t, px))
      const row = Object.fromEntries(g.parallel.map((b) => [b.bar.call.callId, b.row]))
      expect(row).toEqual({ a: 0, b: 1, c: 0, d: 0 })
      noOverlap(g.parallel.filter((b) => b.row === 0))
    }
  })

  it('never cuts a label: beside a bar only when all of it fits before the next', () => {
    const t = turn([
      call('a', 0, { ...serial, title: 'Write a rather long file name.ts', startedAt: 0, finishedAt: 1 }),
      call('b', 1, { ...serial, title: 'Write b.ts', startedAt: 30, finishedAt: 31 }),
    ])
    const g = placeTurn(layoutTurn(t), scaleOf(t, 1))
    expect(g.serial[0]!.label).toBe('none')
    expect(g.serial[1]!.label).toBe('beside')
  })
})

describe('the time axis and the user’s waits', () => {
  // A 20 ms read, then the model thinks 60 s; a write waits 60 s for the user, then runs 10 ms.
  const t = turn([
    call('r', 0, { ...parallel, startedAt: 0, finishedAt: 20 }),
    call('w', 1, {
      ...serial,
      queuedAt: 60_020,
      approval: { requestedAt: 60_020, decidedAt: 120_020, decision: 'approved' },
      startedAt: 120_020,
      finishedAt: 120_030,
    } as Partial<ToolCallState>),
  ])
  const axis = buildTimeAxis({ turns: [t], firstEventAt: 0 } as unknown as SessionState, 120_030)

  it('draws a wait for the user longer than an idle stretch of the same length, and growing with it', () => {
    const idle = displayTime(axis, 60_020) - displayTime(axis, 20)
    const wait = displayTime(axis, 120_020) - displayTime(axis, 60_020)
    expect(idle).toBeCloseTo(squeeze(60_000), 6)
    expect(wait).toBeCloseTo(squeezeWait(60_000), 6)
    expect(wait).toBeGreaterThan(2 * idle)
    expect(squeezeWait(600_000)).toBeGreaterThan(squeezeWait(60_000) + 500)
    expect(axis.breaks.map((b) => b.kind)).toEqual(['idle', 'user'])
  })

  it('maps display time back to real time (the replay plays on this axis)', () => {
    for (const at of [0, 10, 20, 500, 5_000, 60_020, 61_000, 90_000, 120_020, 120_025]) {
      expect(realTime(axis, displayTime(axis, at))).toBeCloseTo(at, 3)
    }
  })
})
