import { describe, expect, it } from 'vitest'
import { SessionEvent } from './events'
import {
  initialSessionState,
  reduceEvent,
  reduceEvents,
  stateAt,
  type SessionState,
  type TurnState,
} from './reducer'
import { oneTurn, recorder, settings, status } from './reducer-test-events'

describe('reducer purity and cost', () => {
  /** A realistic long session: 100 turns of 10 calls, text deltas and bursts of output, ~10,000 events. */
  function longSession() {
    const r = recorder()
    r.add({ type: 'session.created', sessionId: 's1', workspace: '/w', settings })
    r.add({ type: 'run.started', runId: 'r1', task: 'long' })
    for (let t = 1; r.events.length < 10_000; t++) {
      r.add({ type: 'turn.started', runId: 'r1', turn: t })
      for (let d = 0; d < 20; d++) r.add({ type: 'assistant.delta', turn: t, index: 0, text: 'word ' })
      for (let c = 0; c < 10; c++) {
        const callId = `t${t}c${c}`
        r.add({
          type: 'tool.queued',
          callId,
          turn: t,
          index: c + 1,
          name: c < 6 ? 'read_file' : 'bash',
          input: { path: 'x' },
          safe: c < 6,
          lane: c < 6 ? { kind: 'parallel', group: 0 } : { kind: 'serial' },
        })
      }
      for (let c = 0; c < 10; c++) {
        const callId = `t${t}c${c}`
        r.add({ type: 'tool.started', callId })
        for (let o = 0; o < 4; o++) r.add({ type: 'tool.output', callId, chunk: 'some output\n'.repeat(20) })
        r.add({ type: 'tool.finished', callId, isError: c === 9, output: 'done', durationMs: 4 })
      }
    }
    return r.events
  }

  // The tests run in Node, but src/shared is also type-checked for the browser, without Node's types.
  type CpuUsage = { user: number; system: number }
  const node = (globalThis as unknown as { process: { cpuUsage(since?: CpuUsage): CpuUsage } }).process

  /**
   * Best of a few runs, in CPU time: the bound is about the reducer, not about a cold JIT or other processes
   * taking the CPU away (wall time on a busy 2-core CI machine says little).
   */
  function fastest(runs: number, fn: () => void): number {
    let best = Number.POSITIVE_INFINITY
    for (let i = 0; i < runs; i++) {
      const before = node.cpuUsage()
      fn()
      const used = node.cpuUsage(before)
      best = Math.min(best, (used.user + used.system) / 1000)
    }
    return best
  }

  it('reduces a 10,000-event session fast', () => {
    const events = longSession()
    const state = reduceEvents(events)
    expect(state.counts.events).toBe(events.length)
    expect(state.counts.anomalies).toBe(0)
    expect(state.counts.calls).toBeGreaterThan(900)
    expect(fastest(5, () => reduceEvents(events))).toBeLessThan(200)
  })

  it('applies one event without copying the history', () => {
    const events = longSession()
    const before = reduceEvents(events)
    const lastTurn = before.turns.at(-1) as TurnState
    const callId = lastTurn.callIds[0] as string
    const after = reduceEvent(
      before,
      SessionEvent.parse({ type: 'tool.output', at: 9e9, seq: events.length, callId, chunk: 'more' }),
    )
    // Only the touched path is new: earlier turns, the other calls and untouched collections are shared.
    expect(after).not.toBe(before)
    expect(after.turns.slice(0, -1).every((t, i) => t === before.turns[i])).toBe(true)
    const newTurn = after.turns.at(-1) as TurnState
    expect(newTurn).not.toBe(lastTurn)
    expect(newTurn.callIds).toBe(lastTurn.callIds)
    expect(newTurn.blocks).toBe(lastTurn.blocks)
    for (const id of lastTurn.callIds.slice(1)) expect(newTurn.calls[id]).toBe(lastTurn.calls[id])
    expect(after.runs).toBe(before.runs)
    expect(after.snapshots).toBe(before.snapshots)
    expect(after.pendingApprovals).toBe(before.pendingApprovals)
  })

  it('applies events one at a time quickly, whatever the history length', () => {
    const events = longSession()
    const half = reduceEvents(events.slice(0, 5000))
    let state = half
    const elapsed = fastest(3, () => {
      state = half
      for (const event of events.slice(5000)) state = reduceEvent(state, event)
    })
    expect(elapsed).toBeLessThan(200)
    expect(state).toEqual(reduceEvents(events))
  })

  it('gives the same state applied in one batch or one event at a time', () => {
    const events = longSession().slice(0, 3000)
    let state = initialSessionState()
    for (const event of events) state = reduceEvent(state, event)
    expect(state).toEqual(reduceEvents(events))
  })

  it('never mutates a state it was given', () => {
    const events = longSession().slice(0, 400)
    const states: SessionState[] = []
    let state = initialSessionState()
    for (const event of events) {
      state = reduceEvent(state, event)
      states.push(state)
    }
    const snapshot = JSON.stringify(states[199])
    reduceEvents(events.slice(200), states[199])
    expect(JSON.stringify(states[199])).toBe(snapshot)
  })
})

describe('stateAt', () => {
  it('is the state after the events at or before the given time', () => {
    const r = oneTurn([['c1', 'bash', false]])
    const started = r.add({ type: 'tool.started', callId: 'c1' })
    const finished = r.add({
      type: 'tool.finished',
      callId: 'c1',
      isError: false,
      output: 'ok',
      durationMs: 1,
    })
    r.add({ type: 'run.finished', runId: 'r1', reason: 'end_turn' })

    expect(stateAt(r.events, 0)).toEqual(initialSessionState())
    expect(status(stateAt(r.events, started.at - 1), 'c1')).toBe('queued')
    expect(status(stateAt(r.events, started.at), 'c1')).toBe('running')
    expect(status(stateAt(r.events, finished.at), 'c1')).toBe('ok')
    expect(stateAt(r.events, finished.at).status).toBe('running')
    expect(stateAt(r.events, Number.MAX_SAFE_INTEGER)).toEqual(reduceEvents(r.events))
  })
})
