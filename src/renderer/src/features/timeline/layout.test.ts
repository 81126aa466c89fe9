import { describe, expect, it } from 'vitest'
import type { TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { layoutTurn } from './layout'

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

describe('layoutTurn', () => {
  it('puts overlapping parallel calls on separate rows and reuses a row once it is free', () => {
    const layout = layoutTurn(
      turn([
        call('a', { queuedAt: 0, finishedAt: 50 }),
        call('b', { queuedAt: 5, finishedAt: 40 }),
        call('c', { queuedAt: 45, finishedAt: 60 }),
      ]),
    )
    const rows = Object.fromEntries(layout.parallel.map((b) => [b.call.callId, b.row]))
    expect(rows).toEqual({ a: 0, b: 1, c: 1 })
    expect(layout.parallelRows).toBe(2)
  })

  it('keeps serial calls on one row and gives each skipped call its own row below', () => {
    const serial = { safe: false, lane: { kind: 'serial' as const } }
    const layout = layoutTurn(
      turn([
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
      ]),
    )
    expect(layout.serial.map((b) => [b.call.callId, b.row])).toEqual([['cmd', 0]])
    expect(layout.skipped.map((b) => [b.call.callId, b.row])).toEqual([
      ['w', 1],
      ['e', 2],
    ])
    expect(layout.serialRows).toBe(3)
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
