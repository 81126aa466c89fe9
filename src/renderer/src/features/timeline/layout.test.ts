import { describe, expect, it } from 'vitest'
import type { SessionState, TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'
import { labelWidth, placeTurn } from './geometry'
import { layoutTurn } from './layout'
import { buildTimeAxis, MIN_BAR, xOf, type Scale } from './scale'

/** A linear scale (no idle stretch to squeeze in these turns): 1 px per ms from t = 0. */
function linear(t: TurnState): Scale {
  const time = buildTimeAxis({ turns: [t], firstEventAt: 0 } as unknown as SessionState, Infinity)
  return { origin: 0, pxPerMs: 1, time }
}

function call(callId: string, fields: Partial<ToolCallState>): ToolCallState {
  return {
    callId,
    turn: 1,
    index: 0,
    name: 'read_file',
    input: {},
    safe: true,
    lane: { kind: 'parallel', group: 0 },
    queuedAt: 0,
    status: 'ok',
    isError: false,
    output: '',
    finishedAt: 10,
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

describe('layoutTurn and placeTurn', () => {
  it('puts calls that ran together on separate rows and reuses a row once it is free', () => {
    const t = turn([
      call('a', { queuedAt: 0, startedAt: 0, finishedAt: 50 }),
      call('b', { queuedAt: 5, startedAt: 5, finishedAt: 40 }),
      call('c', { queuedAt: 45, startedAt: 60, finishedAt: 90 }),
    ])
    const g = placeTurn(layoutTurn(t), linear(t))
    const rows = Object.fromEntries(g.parallel.map((b) => [b.bar.call.callId, b.row]))
    expect(rows).toEqual({ a: 0, b: 1, c: 0 })
    expect(g.parallelRows).toBe(2)
  })

  it('draws the run as the bar and the time spent waiting apart from it', () => {
    const serial = { safe: false, lane: { kind: 'serial' as const }, name: 'edit_file' }
    const t = turn([
      // Waited 90 s for the user, then ran 5 ms.
      call('e', { ...serial, queuedAt: 0, startedAt: 90_000, finishedAt: 90_005 }),
    ])
    const layout = layoutTurn(t)
    expect(layout.serial[0]).toMatchObject({ waitStart: 0, runStart: 90_000, end: 90_005 })
    const g = placeTurn(layout, linear(t)).serial[0]!
    // The bar starts where the run starts and is at least MIN_BAR wide; the wait ends where the bar begins.
    expect(g.x).toBeGreaterThan(g.waitX)
    expect(g.width).toBe(MIN_BAR)
  })

  it('places serial calls one after another on one row, however short they are', () => {
    const serial = { safe: false, lane: { kind: 'serial' as const }, name: 'bash' }
    const t = turn([
      call('one', { ...serial, queuedAt: 0, startedAt: 0, finishedAt: 100 }),
      call('two', { ...serial, queuedAt: 0, startedAt: 100, finishedAt: 200 }),
    ])
    const g = placeTurn(layoutTurn(t), linear(t))
    expect(g.serial.map((b) => b.row)).toEqual([0, 0])
    expect(g.serial[1]!.x).toBeGreaterThanOrEqual(g.serial[0]!.x + g.serial[0]!.width)
  })

  it('draws a queued call’s wait only past the previous bar of its row and that bar’s name', () => {
    const serial = { safe: false, lane: { kind: 'serial' as const } }
    const t = turn(
      [
        // Queued together; the edit waited 400 ms behind the write, whose name goes beside it (room to the edit).
        call('w', { ...serial, name: 'write_file', input: { path: 'a.txt' }, queuedAt: 0, startedAt: 10 }),
        call('e', { ...serial, name: 'edit_file', input: { path: 'b.txt' }, queuedAt: 0, startedAt: 400 }),
      ].map((c, i) => ({ ...c, index: i, finishedAt: i === 0 ? 20 : 410 })),
    )
    const [w, e] = placeTurn(layoutTurn(t), linear(t)).serial
    expect([w!.row, e!.row]).toEqual([0, 0])
    expect(w!.label).toBe('beside')
    const writeDrawnUntil = w!.x + w!.width + Math.min(labelWidth(callTitle(w!.bar.call)), w!.labelRoom)
    expect(e!.waitX).toBeGreaterThanOrEqual(writeDrawnUntil)
    expect(e!.waitX).toBeLessThanOrEqual(e!.x)
    // The write itself had nothing before it: its whole wait is drawn.
    expect(w!.waitX).toBe(xOf(linear(t), 0))
    expect(e!.roomLeft).toBe(e!.x - writeDrawnUntil - 6)
  })

  it('gives a rejected call a short bar at the decision, after its wait', () => {
    const t = turn([
      call('w', {
        safe: false,
        lane: { kind: 'serial' },
        name: 'write_file',
        queuedAt: 0,
        status: 'rejected',
        approval: { decision: 'rejected', decidedAt: 3000 },
        finishedAt: undefined,
      }),
    ])
    const bar = layoutTurn(t).serial[0]!
    expect(bar).toMatchObject({ waitStart: 0, runStart: 3000, end: 3000 })
  })

  it('gives each skipped call its own row below the serial calls', () => {
    const serial = { safe: false, lane: { kind: 'serial' as const } }
    const t = turn([
      call('cmd', {
        ...serial,
        name: 'bash',
        queuedAt: 0,
        startedAt: 0,
        finishedAt: 30,
        status: 'error',
        isError: true,
      }),
      call('w', {
        ...serial,
        name: 'write_file',
        queuedAt: 30,
        status: 'skipped',
        causeCallId: 'cmd',
        finishedAt: 31,
      }),
      call('e', {
        ...serial,
        name: 'edit_file',
        queuedAt: 30,
        status: 'skipped',
        causeCallId: 'cmd',
        finishedAt: 31,
      }),
    ])
    const g = placeTurn(layoutTurn(t), linear(t))
    expect(g.serial.map((b) => [b.bar.call.callId, b.row])).toEqual([['cmd', 0]])
    expect(g.skipped.map((s) => [s.bar.call.callId, s.row])).toEqual([
      ['w', 1],
      ['e', 2],
    ])
    expect(g.serialRows).toBe(3)
    // Hung under the failed call.
    expect(g.skipped[0]!.x).toBe(xOf(linear(t), 0) + 6)
  })

  it('puts a label inside a bar when it fits, beside it when the row has room, else nowhere', () => {
    const t = turn([
      call('long', { queuedAt: 0, startedAt: 0, finishedAt: 400, input: { path: 'a.ts' } }),
      call('short', { queuedAt: 0, startedAt: 0, finishedAt: 2, input: { path: 'b.ts' } }),
    ])
    const g = placeTurn(layoutTurn(t), linear(t))
    const label = Object.fromEntries(g.parallel.map((b) => [b.bar.call.callId, b.label]))
    expect(label).toEqual({ long: 'inside', short: 'beside' })
  })

  it('leaves a running call open-ended and the turn without an end', () => {
    const layout = layoutTurn(
      turn([call('r', { status: 'running', startedAt: 5, finishedAt: undefined, output: undefined })]),
    )
    expect(layout.parallel[0]?.end).toBeUndefined()
    expect(layout.end).toBeUndefined()
  })

  it('returns the same layout object for the same turn (cached by identity)', () => {
    const t = turn([call('a', {})])
    expect(layoutTurn(t)).toBe(layoutTurn(t))
  })
})
