import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../../shared/events'
import { reduceEvents, stateAt } from '../../../shared/reducer'
import { BUILD_SLICE, buildEventTimeline, CHECKPOINT_EVERY, EventTimeline } from './event-timeline'

/** A session with `turns` turns of two parallel reads and one serial command each; `at` grows 10 ms per event. */
function session(turns: number): SessionEvent[] {
  const events: Record<string, unknown>[] = [
    {
      type: 'session.created',
      sessionId: 's1',
      workspace: '/w',
      settings: { model: 'm', scheduler: 'streaming', siblingSkip: true, demo: false },
    },
    { type: 'run.started', runId: 'r1', task: 'do it' },
  ]
  for (let t = 1; t <= turns; t++) {
    events.push({ type: 'turn.started', runId: 'r1', turn: t })
    events.push({ type: 'assistant.delta', turn: t, index: 0, text: `turn ${t}` })
    for (const [i, safe] of [
      [1, true],
      [2, true],
      [3, false],
    ] as const) {
      const callId = `c${t}-${i}`
      events.push({
        type: 'tool.queued',
        callId,
        turn: t,
        index: i,
        name: safe ? 'read_file' : 'bash',
        input: {},
        safe,
        lane: safe ? { kind: 'parallel', group: 0 } : { kind: 'serial' },
      })
      events.push({ type: 'tool.started', callId })
      events.push({ type: 'tool.finished', callId, isError: false, output: 'ok', durationMs: 5 })
    }
  }
  events.push({ type: 'run.finished', runId: 'r1', reason: 'end_turn' })
  return events.map((e, seq) => ({ ...e, seq, at: 1000 + seq * 10 }) as SessionEvent)
}

describe('EventTimeline', () => {
  const events = session(100)

  it('keeps the head equal to reducing every event', () => {
    const timeline = new EventTimeline()
    timeline.append(events.slice(0, 100))
    timeline.append(events.slice(100))
    expect(timeline.head).toEqual(reduceEvents(events))
  })

  it('gives the same state as stateAt for any time, forwards, backwards and at random', () => {
    const timeline = new EventTimeline(events)
    const first = events[0]!.at
    const last = events[events.length - 1]!.at
    const times = [first - 1, first, last, last + 5, 1005]
    for (let t = first; t <= last; t += 370) times.push(t)
    for (let t = last; t >= first; t -= 530) times.push(t)
    let seed = 3
    for (let i = 0; i < 25; i++) {
      seed = (seed * 16807) % 2147483647
      times.push(first + (seed % (last - first)))
    }
    for (const t of times) expect(timeline.stateAt(t)).toEqual(stateAt(events, t))
  })

  it('reduces at most a checkpoint interval of events to reach any position', () => {
    expect(events.length).toBeGreaterThan(CHECKPOINT_EVERY * 3)
    const timeline = new EventTimeline(events)
    let calls = 0
    const counted = new Proxy(timeline.events as SessionEvent[], {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) calls++
        return Reflect.get(target, key, receiver)
      },
    })
    // Count the events read while jumping backwards from the end to the middle.
    Object.defineProperty(timeline, 'list', { value: counted })
    timeline.stateAtIndex(events.length - 1)
    calls = 0
    timeline.stateAtIndex(Math.floor(events.length / 2))
    expect(calls).toBeLessThanOrEqual(CHECKPOINT_EVERY)
    // Moving forward a little from there costs only the new events.
    calls = 0
    timeline.stateAtIndex(Math.floor(events.length / 2) + 5)
    expect(calls).toBe(5)
  })

  it('drops events it already has (a live batch overlapping a load) and reports a gap in seq', () => {
    const timeline = new EventTimeline(events.slice(0, 50))
    expect(timeline.append(events.slice(40, 60))).toEqual({ added: 10, gap: false })
    expect(timeline.length).toBe(60)
    expect(timeline.append(events.slice(70, 80)).gap).toBe(true)
  })

  it('finds the next event of a kind after a time', () => {
    const timeline = new EventTimeline(events)
    const firstQueued = events.find((e) => e.type === 'tool.queued')!
    expect(timeline.nextAfter(0, (e) => e.type === 'tool.queued')).toBe(firstQueued.at)
    expect(timeline.nextAfter(events[events.length - 1]!.at, () => true)).toBeUndefined()
  })

  it('cuts a log whose clock stepped back at the first event past the time', () => {
    const skewed = events.slice(0, 10).map((e, i) => ({ ...e, at: i === 5 ? 900 : e.at }))
    const timeline = new EventTimeline(skewed)
    expect(timeline.indexAt(skewed[4]!.at)).toBe(6)
  })
})

describe('buildEventTimeline', () => {
  const events = session(Math.ceil((BUILD_SLICE * 2.5) / 11))

  it('builds, a slice at a time, the timeline a single append builds', async () => {
    expect(events.length).toBeGreaterThan(BUILD_SLICE * 2)
    const built = await buildEventTimeline(events, () => false)
    const whole = new EventTimeline(events)
    expect(built?.head).toEqual(whole.head)
    expect(built?.length).toBe(whole.length)
    for (const n of [0, 1, BUILD_SLICE - 1, BUILD_SLICE, BUILD_SLICE + 300, events.length - 1])
      expect(built?.stateAtIndex(n)).toEqual(whole.stateAtIndex(n))
  })

  it('stops between slices once it is no longer wanted', async () => {
    let asked = 0
    const built = await buildEventTimeline(events, () => ++asked >= 1)
    expect(built).toBeNull()
    expect(asked).toBe(1)
  })
})
