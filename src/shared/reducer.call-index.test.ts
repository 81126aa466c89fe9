import { describe, expect, it } from 'vitest'
import type { SessionEvent } from './events'
import { reduceEvents, type CallIndex } from './reducer'
import { queuedCall, recorder, settings, status } from './reducer-test-events'

/** 60 turns of 5 calls each (more lookups than a reduction makes before it indexes), the last call queued twice. */
function longSession(): SessionEvent[] {
  const r = recorder()
  r.add({ type: 'session.created', sessionId: 's1', workspace: '/w', settings })
  r.add({ type: 'run.started', runId: 'r1', task: 'do it' })
  for (let turn = 1; turn <= 60; turn++) {
    r.add({ type: 'turn.started', runId: 'r1', turn })
    for (let i = 1; i <= 5; i++) {
      const callId = `c${turn}-${i}`
      r.add(queuedCall({ callId, name: 'read_file', input: { path: 'a' }, index: i, turn }))
      r.add({ type: 'tool.started', callId })
      r.add({ type: 'tool.finished', callId, isError: turn % 7 === 0, output: 'x', durationMs: 1 })
    }
  }
  // A model's duplicate id, in a later turn: the reducer reports it and keeps the first.
  r.add(queuedCall({ callId: 'c3-2', name: 'read_file', input: { path: 'a' }, index: 9, turn: 60 }))
  return r.events
}

describe('the call index (reducing a long session in pieces)', () => {
  it('gives the same states as one reduction, for the head and for states older than the index', () => {
    const events = longSession()
    const whole = reduceEvents(events)
    expect(whole.counts.anomalies).toBe(1)
    expect(status(whole, 'c1-1')).toBe('ok')
    expect(status(whole, 'c7-3')).toBe('error')

    // The head in pieces of 50, sharing one index, as the renderer's timeline does.
    const calls: CallIndex = new Map()
    const checkpoints = [reduceEvents([], undefined, calls)]
    let head = checkpoints[0]
    for (let i = 0; i < events.length; i += 50) {
      head = reduceEvents(events.slice(i, i + 50), head, calls)
      checkpoints.push(head)
    }
    expect(head).toEqual(whole)

    // A replay from an old checkpoint, with an index that already knows every later call.
    for (const k of [0, 3, 10]) {
      const from = checkpoints[k]
      const upTo = Math.min(events.length, k * 50 + 120)
      expect(reduceEvents(events.slice(k * 50, upTo), from, calls)).toEqual(
        reduceEvents(events.slice(0, upTo)),
      )
    }
  })
})
