import { describe, expect, it } from 'vitest'
import type { Lane } from '../../shared/events'
import type { ToolResult } from '../tools/tool'
import {
  TurnScheduler,
  type CallOutcome,
  type CallSpec,
  type GateVerdict,
  type SchedulerMode,
} from './scheduler'

interface Span {
  id: string
  start: number
  end: number
}

/** Fake tools with known durations; records when each really ran. */
function harness(mode: SchedulerMode, opts: { siblingSkip?: boolean; concurrency?: number } = {}) {
  const spans: Span[] = []
  const lanes = new Map<string, Lane>()
  const events: string[] = []
  let blocked = 0
  const controller = new AbortController()
  const t0 = performance.now()
  const scheduler = new TurnScheduler({
    mode,
    signal: controller.signal,
    siblingSkip: opts.siblingSkip,
    concurrency: opts.concurrency,
    hooks: {
      onQueued: (call, lane) => lanes.set(call.callId, lane),
      onStarted: (call) => events.push(`start ${call.callId}`),
      onSettled: (call, outcome) => events.push(`${outcome.kind} ${call.callId}`),
      onBlocked: () => blocked++,
    },
  })
  const call = (
    id: string,
    safe: boolean,
    ms: number,
    result: Partial<ToolResult> = {},
    extra: Partial<CallSpec> = {},
  ): CallSpec => ({
    callId: id,
    safe,
    label: `tool(${id})`,
    execute: (signal) =>
      new Promise((resolve, reject) => {
        const start = performance.now() - t0
        const timer = setTimeout(() => {
          spans.push({ id, start, end: performance.now() - t0 })
          if (result.output === 'throw') reject(new Error('disk on fire'))
          else resolve({ output: `ran ${id}`, isError: false, ...result })
        }, ms)
        signal.addEventListener('abort', () => {
          clearTimeout(timer)
          spans.push({ id, start, end: performance.now() - t0 })
          resolve({ output: 'aborted', isError: true })
        })
      }),
    ...extra,
  })
  const span = (id: string) => spans.find((s) => s.id === id)!
  const overlap = (a: string, b: string) => span(a).start < span(b).end && span(b).start < span(a).end
  return { scheduler, call, span, overlap, spans, lanes, events, controller, blocked: () => blocked }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('TurnScheduler in batch mode', () => {
  it('runs the safe calls together first, then the unsafe ones in order', async () => {
    const h = harness('batch')
    h.scheduler.add(h.call('a', true, 40))
    h.scheduler.add(h.call('b', true, 40))
    h.scheduler.add(h.call('bash', false, 10, { isError: true, output: 'exit 1' }))
    h.scheduler.add(h.call('c', true, 40))
    await sleep(20)
    expect(h.spans).toEqual([]) // nothing starts before the response is complete
    h.scheduler.close()
    const outcomes = await h.scheduler.done()
    expect(outcomes.map((o) => o.callId)).toEqual(['a', 'b', 'bash', 'c'])
    expect(h.overlap('a', 'b') && h.overlap('b', 'c') && h.overlap('a', 'c')).toBe(true)
    expect(h.span('bash').start).toBeGreaterThanOrEqual(
      Math.max(h.span('a').end, h.span('b').end, h.span('c').end) - 1,
    )
    expect(h.lanes.get('a')).toEqual({ kind: 'parallel', group: 0 })
    expect(h.lanes.get('c')).toEqual({ kind: 'parallel', group: 0 })
    expect(h.lanes.get('bash')).toEqual({ kind: 'serial' })
  })

  it('skips the later unsafe calls after an unsafe failure and keeps safe results', async () => {
    const h = harness('batch')
    h.scheduler.add(h.call('edit', false, 5))
    h.scheduler.add(h.call('bash', false, 5, { isError: true, output: 'exit 1' }))
    h.scheduler.add(h.call('write', false, 5))
    h.scheduler.add(h.call('read', true, 5))
    h.scheduler.add(h.call('edit2', false, 5))
    h.scheduler.close()
    const outcomes = await h.scheduler.done()
    const byId = Object.fromEntries(outcomes.map((o) => [o.callId, o])) as Record<string, CallOutcome>
    expect(byId.edit!.kind).toBe('finished')
    expect(byId.read).toMatchObject({ kind: 'finished', result: { isError: false } })
    for (const id of ['write', 'edit2']) {
      expect(byId[id]).toMatchObject({
        kind: 'skipped',
        causeCallId: 'bash',
        result: {
          isError: true,
          output:
            'Skipped: not run because tool(bash) failed earlier in this turn; issue it again if it is still needed.',
        },
      })
    }
    expect(h.spans.map((s) => s.id).sort()).toEqual(['bash', 'edit', 'read'])
  })

  it('runs everything when sibling skip is off', async () => {
    const h = harness('batch', { siblingSkip: false })
    h.scheduler.add(h.call('bash', false, 5, { isError: true }))
    h.scheduler.add(h.call('write', false, 5))
    h.scheduler.close()
    expect((await h.scheduler.done()).map((o) => o.kind)).toEqual(['finished', 'finished'])
  })

  it('caps concurrent safe calls', async () => {
    const h = harness('batch', { concurrency: 2 })
    for (const id of ['a', 'b', 'c', 'd']) h.scheduler.add(h.call(id, true, 30))
    h.scheduler.close()
    await h.scheduler.done()
    // Sweep over start/end points: the most calls live at one instant.
    const points = h.spans.flatMap((s) => [
      [s.start, 1],
      [s.end, -1],
    ]) as [number, number][]
    points.sort((x, y) => x[0] - y[0] || x[1] - y[1])
    let live = 0
    let maxConcurrent = 0
    for (const [, delta] of points) maxConcurrent = Math.max(maxConcurrent, (live += delta))
    expect(maxConcurrent).toBe(2)
  })

  it('cancels the other safe calls of the group when one throws, and reports the exception as an error', async () => {
    const h = harness('batch')
    h.scheduler.add(h.call('boom', true, 5, { output: 'throw' }))
    h.scheduler.add(h.call('slow', true, 5_000))
    h.scheduler.close()
    const [boom, slow] = await h.scheduler.done()
    expect(boom).toMatchObject({ kind: 'finished', result: { isError: true } })
    expect(boom!.result.output).toContain('disk on fire')
    expect(slow).toMatchObject({ kind: 'cancelled' })
    expect(slow!.result.output).toContain('another call running alongside')
  })
})

describe('TurnScheduler in streaming mode', () => {
  it('runs the reference turn: a and b overlap, bash after both, c after bash', async () => {
    const h = harness('streaming')
    h.scheduler.add(h.call('a', true, 40))
    await sleep(5)
    h.scheduler.add(h.call('b', true, 40))
    h.scheduler.add(h.call('bash', false, 20, { isError: true }))
    h.scheduler.add(h.call('c', true, 20))
    h.scheduler.close()
    await h.scheduler.done()
    expect(h.overlap('a', 'b')).toBe(true)
    expect(h.span('bash').start).toBeGreaterThanOrEqual(Math.max(h.span('a').end, h.span('b').end) - 1)
    expect(h.span('c').start).toBeGreaterThanOrEqual(h.span('bash').end - 1)
    expect(h.lanes.get('a')).toEqual({ kind: 'parallel', group: 0 })
    expect(h.lanes.get('c')).toEqual({ kind: 'parallel', group: 1 })
  })

  it('starts a call while the model is still streaming', async () => {
    const h = harness('streaming')
    h.scheduler.add(h.call('a', true, 10))
    await sleep(30)
    expect(h.spans.map((s) => s.id)).toEqual(['a'])
    h.scheduler.close()
    await h.scheduler.done()
  })

  it('starts a call whose gate answers at once in the same synchronous run as its arrival', async () => {
    const h = harness('streaming')
    h.scheduler.add(h.call('read', true, 5, {}, { gate: () => ({ run: true }) }))
    // No await between: nothing else queued may run before the tool starts.
    expect(h.events).toEqual(['start read'])
    const rejection = { output: 'denied', isError: true }
    h.scheduler.add(
      h.call('bash', false, 5, {}, { gate: () => ({ run: false, result: rejection, failed: true }) }),
    )
    h.scheduler.add(h.call('write', false, 5))
    h.scheduler.close()
    const [read, bash, write] = await h.scheduler.done()
    expect(read).toMatchObject({ kind: 'finished', ran: true })
    expect(bash).toMatchObject({ kind: 'finished', ran: false, result: rejection })
    expect(write).toMatchObject({ kind: 'skipped', causeCallId: 'bash' })
    expect(h.events).toEqual(['start read', 'finished read', 'finished bash', 'skipped write'])
  })

  it('skips unsafe calls that arrive after an unsafe failure', async () => {
    const h = harness('streaming')
    h.scheduler.add(h.call('bash', false, 5, { isError: true }))
    await sleep(20)
    h.scheduler.add(h.call('write', false, 5))
    h.scheduler.add(h.call('read', true, 5))
    h.scheduler.close()
    const outcomes = await h.scheduler.done()
    expect(outcomes.map((o) => o.kind)).toEqual(['finished', 'skipped', 'finished'])
  })

  it('waits at the approval gate, reports the block once the response is complete, then runs', async () => {
    const h = harness('streaming')
    let approve!: (v: GateVerdict) => void
    const gate = (waiting: () => void) =>
      new Promise<GateVerdict>((resolve) => {
        waiting()
        approve = resolve
      })
    h.scheduler.add(h.call('read', true, 10))
    h.scheduler.add(h.call('write', false, 10, {}, { gate }))
    h.scheduler.add(h.call('read2', true, 10))
    await sleep(30)
    expect(h.blocked()).toBe(0) // the response is still streaming
    h.scheduler.close()
    await sleep(5)
    expect(h.blocked()).toBe(1)
    expect(h.spans.map((s) => s.id)).toEqual(['read'])
    approve({ run: true })
    const outcomes = await h.scheduler.done()
    expect(outcomes.map((o) => o.kind)).toEqual(['finished', 'finished', 'finished'])
    expect(h.span('read2').start).toBeGreaterThanOrEqual(h.span('write').end - 1)
  })

  it('does not call a gate that is still preparing blocked', async () => {
    const h = harness('streaming')
    let release!: () => void
    const preparing = new Promise<void>((r) => (release = r))
    h.scheduler.add(h.call('write', false, 5, {}, { gate: async () => (await preparing, { run: true }) }))
    h.scheduler.close()
    await sleep(10)
    expect(h.blocked()).toBe(0)
    release()
    await h.scheduler.done()
    expect(h.blocked()).toBe(0)
  })

  it('keeps skipping after a failure carried over from before a restart', async () => {
    const controller = new AbortController()
    const scheduler = new TurnScheduler({
      mode: 'streaming',
      signal: controller.signal,
      priorFailure: { label: 'bash(make)', callId: 'old' },
    })
    scheduler.add({
      callId: 'w',
      safe: false,
      label: 'write_file(a)',
      execute: async () => ({ output: 'ran', isError: false }),
    })
    scheduler.add({
      callId: 'r',
      safe: true,
      label: 'read_file(a)',
      execute: async () => ({ output: 'ran', isError: false }),
    })
    scheduler.close()
    const [w, r] = await scheduler.done()
    expect(w).toMatchObject({ kind: 'skipped', causeCallId: 'old' })
    expect(r).toMatchObject({ kind: 'finished' })
  })

  it('finishes a rejected call with its result and does not skip its siblings', async () => {
    const h = harness('streaming')
    const rejection = { output: 'Rejected by the user: use tabs', isError: true }
    h.scheduler.add(
      h.call('write', false, 5, {}, { gate: async () => ({ run: false, result: rejection, failed: false }) }),
    )
    h.scheduler.add(h.call('edit', false, 5))
    h.scheduler.close()
    const [write, edit] = await h.scheduler.done()
    expect(write).toMatchObject({ kind: 'finished', ran: false, result: rejection })
    expect(edit).toMatchObject({ kind: 'finished', ran: true })
  })

  it('ends the wait of calls at their gate when the run is stopped', async () => {
    const h = harness('streaming')
    const never = () => new Promise<GateVerdict>(() => undefined)
    h.scheduler.add(h.call('waiting', true, 10, {}, { gate: never }))
    h.scheduler.add(h.call('broken', true, 10, {}, { gate: never }))
    await sleep(10)
    h.controller.abort()
    h.scheduler.close()
    const outcomes = await h.scheduler.done()
    expect(outcomes.map((o) => [o.callId, o.kind])).toEqual([
      ['waiting', 'cancelled'],
      ['broken', 'cancelled'],
    ])
  })

  it('on stop: kills running calls, cancels queued and gated ones, and still gives every call one outcome', async () => {
    const h = harness('streaming')
    h.scheduler.add(h.call('long', false, 10_000))
    h.scheduler.add(h.call('queued', true, 10))
    h.scheduler.add(h.call('gated', false, 10, {}, { gate: () => new Promise<GateVerdict>(() => undefined) }))
    await sleep(20)
    h.controller.abort()
    h.scheduler.add(h.call('late', true, 10))
    h.scheduler.close()
    const outcomes = await h.scheduler.done()
    expect(outcomes.map((o) => [o.callId, o.kind])).toEqual([
      ['long', 'cancelled'],
      ['queued', 'cancelled'],
      ['gated', 'cancelled'],
      ['late', 'cancelled'],
    ])
    expect(outcomes[0]!.result.output).toContain('stopped')
  })
})
