import { describe, expect, it } from 'vitest'
import { own, setOwn } from './own'
import { getCall, reduceEvents } from './reducer'
import { oneTurn, status } from './reducer-test-events'

/** Every name a plain object answers without holding it. */
const NAMES = Object.getOwnPropertyNames(Object.prototype)

describe('own', () => {
  it('finds only what a record holds itself, for every name Object.prototype has', () => {
    const table: Record<string, number> = { a: 1 }
    for (const name of NAMES) expect(own(table, name), name).toBeUndefined()
    for (const name of NAMES) setOwn(table, name, 7)
    for (const name of NAMES) expect(own(table, name), name).toBe(7)
    expect(Object.getPrototypeOf(table)).toBe(Object.prototype)
    expect(Object.keys(table)).toEqual(['a', ...NAMES])
  })
})

describe('the reducer, with call ids named like members of every object', () => {
  it('keeps each call, through its whole life, under its own id', () => {
    const r = oneTurn(NAMES.map((name) => [name, 'bash', false]))
    for (const callId of NAMES) {
      r.add({ type: 'tool.started', callId })
      r.add({ type: 'tool.finished', callId, isError: false, output: `out ${callId}`, durationMs: 1 })
    }
    const state = reduceEvents(r.events)
    for (const callId of NAMES) {
      expect(status(state, callId), callId).toBe('ok')
      expect(getCall(state, callId)?.output, callId).toBe(`out ${callId}`)
    }
    expect(getCall(reduceEvents(oneTurn([]).events), 'constructor')).toBeUndefined()
  })
})
