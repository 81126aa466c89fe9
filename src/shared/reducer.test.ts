import { describe, expect, it } from 'vitest'
import { SessionEvent } from './events'
import {
  allCalls,
  getCall,
  initialSessionState,
  reduceEvent,
  reduceEvents,
  type SessionState,
} from './reducer'
import { LIVE_OUTPUT_TAIL_CHARS, ToolCallState, ToolCallStatus } from './tool-call'
import { oneTurn, recorder, settings, status, turn, writePreview } from './reducer-test-events'

describe('reduceEvent', () => {
  it('starts idle and empty', () => {
    const state = initialSessionState()
    expect(state.status).toBe('idle')
    expect(state.turns).toEqual([])
    expect(state.lastSeq).toBe(-1)
    expect(state.counts.anomalies).toBe(0)
  })

  it('records the session, its runs and their tasks, and follows the run status', () => {
    const r = recorder()
    r.add({ type: 'session.created', sessionId: 's1', workspace: '/w', title: 'T', settings })
    let state = reduceEvents(r.events)
    expect(state.session).toMatchObject({ sessionId: 's1', workspace: '/w', title: 'T', settings })
    expect(state.status).toBe('idle')

    r.add({ type: 'run.started', runId: 'r1', task: 'first' })
    state = reduceEvents(r.events)
    expect(state.status).toBe('running')
    expect(state.currentRunId).toBe('r1')
    expect(state.runs).toMatchObject([{ runId: 'r1', task: 'first', status: 'running' }])

    r.add({ type: 'run.paused', runId: 'r1', reason: 'approval', callIds: ['c1'] })
    state = reduceEvents(r.events)
    expect(state.status).toBe('paused')
    expect(state.runs[0]?.pausedFor).toEqual(['c1'])

    r.add({ type: 'run.resumed', runId: 'r1' })
    expect(reduceEvents(r.events).status).toBe('running')

    const finished = r.add({
      type: 'run.finished',
      runId: 'r1',
      reason: 'end_turn',
      usage: { inputTokens: 1, outputTokens: 2 },
    })
    state = reduceEvents(r.events)
    expect(state.status).toBe('finished')
    expect(state.runs[0]).toMatchObject({ status: 'finished', endedAt: finished.at, reason: 'end_turn' })

    r.add({ type: 'run.started', runId: 'r2', task: 'second' })
    r.add({ type: 'run.failed', runId: 'r2', error: 'The API key was refused.', kind: 'auth' })
    state = reduceEvents(r.events)
    expect(state.status).toBe('failed')
    expect(state.runs[1]).toMatchObject({
      status: 'failed',
      error: 'The API key was refused.',
      errorKind: 'auth',
    })

    r.add({ type: 'run.started', runId: 'r3', task: 'third' })
    r.add({ type: 'run.stopped', runId: 'r3' })
    state = reduceEvents(r.events)
    expect(state.status).toBe('stopped')
    expect(state.runs.map((run) => run.status)).toEqual(['finished', 'failed', 'stopped'])
    expect(state.counts.anomalies).toBe(0)
  })

  it('accumulates assistant text per block and lets the complete message correct it', () => {
    const r = oneTurn([])
    r.add({ type: 'assistant.delta', turn: 1, index: 0, text: 'Hel' })
    r.add({ type: 'assistant.delta', turn: 1, index: 0, text: 'lo' })
    r.add({ type: 'assistant.delta', turn: 1, index: 2, text: 'after the call' })
    let state = reduceEvents(r.events)
    expect(turn(state, 1).blocks).toEqual([
      { kind: 'text', index: 0, text: 'Hello' },
      { kind: 'text', index: 2, text: 'after the call' },
    ])
    const message = {
      role: 'assistant' as const,
      content: [
        { type: 'text', text: 'Hello!' },
        { type: 'tool_use', id: 'c1', name: 'read_file', input: {} },
        { type: 'text', text: 'after the call' },
      ],
    }
    r.add({
      type: 'assistant.message',
      turn: 1,
      message,
      stopReason: 'tool_use',
      usage: { inputTokens: 10, outputTokens: 4 },
    })
    state = reduceEvents(r.events)
    expect(turn(state, 1).blocks[0]).toEqual({ kind: 'text', index: 0, text: 'Hello!' })
    expect(turn(state, 1).message).toEqual(message)
    expect(turn(state, 1).stopReason).toBe('tool_use')
    expect(state.usage).toMatchObject({ inputTokens: 10, outputTokens: 4 })
  })

  it('queues calls in their turn, in order, interleaved with the text blocks', () => {
    const r = oneTurn([
      ['c1', 'read_file', true],
      ['c2', 'bash', false],
    ])
    r.add({ type: 'assistant.delta', turn: 1, index: 0, text: 'Reading.' })
    const state = reduceEvents(r.events)
    expect(turn(state, 1).callIds).toEqual(['c1', 'c2'])
    expect(turn(state, 1).blocks.map((b) => b.kind)).toEqual(['text', 'tool', 'tool'])
    expect(getCall(state, 'c1')).toMatchObject({
      status: 'queued',
      name: 'read_file',
      input: { path: 'c1.ts' },
      safe: true,
      lane: { kind: 'parallel', group: 0 },
      turn: 1,
      index: 1,
      runId: 'r1',
    })
    expect(getCall(state, 'c2')?.lane).toEqual({ kind: 'serial' })
    expect(state.counts.calls).toBe(2)
    expect(state.counts.byStatus.queued).toBe(2)
    expect(allCalls(state).map((c) => c.callId)).toEqual(['c1', 'c2'])
  })

  it('keeps an unparsable call with its raw input', () => {
    const r = oneTurn([])
    r.add({
      type: 'tool.queued',
      callId: 'c1',
      turn: 1,
      index: 0,
      name: 'bash',
      input: null,
      rawInput: '{"command": "npm test",',
      safe: false,
      lane: { kind: 'serial' },
    })
    expect(getCall(reduceEvents(r.events), 'c1')).toMatchObject({
      input: null,
      rawInput: '{"command": "npm test",',
    })
  })

  it('walks a call through running to ok, with its timing and result', () => {
    const r = oneTurn([['c1', 'read_file', true]])
    const started = r.add({ type: 'tool.started', callId: 'c1' })
    expect(status(reduceEvents(r.events), 'c1')).toBe('running')
    const finished = r.add({
      type: 'tool.finished',
      callId: 'c1',
      isError: false,
      output: '     1|x',
      metadata: { totalLines: 1 },
      durationMs: 12,
      title: 'Read c1.ts (1 line)',
    })
    const state = reduceEvents(r.events)
    expect(getCall(state, 'c1')).toMatchObject({
      status: 'ok',
      isError: false,
      output: '     1|x',
      metadata: { totalLines: 1 },
      startedAt: started.at,
      finishedAt: finished.at,
      durationMs: 12,
      title: 'Read c1.ts (1 line)',
    })
    expect(state.counts.byStatus).toMatchObject({ queued: 0, running: 0, ok: 1 })
  })

  it('marks a failed call error', () => {
    const r = oneTurn([['c1', 'bash', false]])
    r.add({ type: 'tool.started', callId: 'c1' })
    r.add({ type: 'tool.finished', callId: 'c1', isError: true, output: 'exit 1', durationMs: 5 })
    expect(getCall(reduceEvents(r.events), 'c1')).toMatchObject({
      status: 'error',
      isError: true,
      output: 'exit 1',
    })
  })

  it('asks, pauses, and on approval goes back to queued, then runs', () => {
    const r = oneTurn([['c1', 'write_file', false]])
    r.add({ type: 'approval.requested', callId: 'c1', preview: writePreview })
    r.add({ type: 'run.paused', runId: 'r1', reason: 'approval', callIds: ['c1'] })
    let state = reduceEvents(r.events)
    expect(status(state, 'c1')).toBe('awaiting-approval')
    expect(getCall(state, 'c1')?.approval?.preview).toEqual(writePreview)
    expect(state.pendingApprovals).toEqual(['c1'])
    expect(state.status).toBe('paused')

    r.add({ type: 'approval.decided', callId: 'c1', decision: 'approved', always: true, by: 'user' })
    r.add({ type: 'run.resumed', runId: 'r1' })
    state = reduceEvents(r.events)
    expect(status(state, 'c1')).toBe('queued')
    expect(getCall(state, 'c1')?.approval).toMatchObject({ decision: 'approved', always: true, by: 'user' })
    expect(state.pendingApprovals).toEqual([])

    r.add({ type: 'tool.started', callId: 'c1' })
    r.add({ type: 'tool.finished', callId: 'c1', isError: false, output: 'Wrote a.ts', durationMs: 3 })
    state = reduceEvents(r.events)
    expect(status(state, 'c1')).toBe('ok')
    expect(getCall(state, 'c1')?.approval?.preview).toEqual(writePreview)
  })

  it('keeps a rejected call rejected when the engine sends its rejection result', () => {
    const r = oneTurn([['c1', 'bash', false]])
    r.add({
      type: 'approval.requested',
      callId: 'c1',
      preview: { kind: 'bash', command: 'npm test', cwd: '/w' },
    })
    r.add({ type: 'approval.decided', callId: 'c1', decision: 'rejected', note: 'not now' })
    let state = reduceEvents(r.events)
    expect(status(state, 'c1')).toBe('rejected')
    expect(state.pendingApprovals).toEqual([])
    r.add({
      type: 'tool.finished',
      callId: 'c1',
      isError: true,
      output: 'Rejected by the user: not now',
      durationMs: 0,
    })
    state = reduceEvents(r.events)
    expect(getCall(state, 'c1')).toMatchObject({
      status: 'rejected',
      isError: true,
      output: 'Rejected by the user: not now',
      approval: { decision: 'rejected', note: 'not now' },
    })
    expect(state.counts.byStatus).toMatchObject({ rejected: 1, error: 0, 'awaiting-approval': 0 })
    expect(state.counts.anomalies).toBe(0)
  })

  it('skips and cancels with the cause and the output the model sees', () => {
    const r = oneTurn([
      ['c1', 'bash', false],
      ['c2', 'write_file', false],
      ['c3', 'bash', false],
    ])
    r.add({ type: 'tool.started', callId: 'c1' })
    r.add({ type: 'tool.finished', callId: 'c1', isError: true, output: 'exit 2', durationMs: 1 })
    r.add({
      type: 'tool.skipped',
      callId: 'c2',
      causeCallId: 'c1',
      output: 'Skipped: not run because bash(x) failed',
    })
    r.add({ type: 'approval.requested', callId: 'c3', preview: { kind: 'bash', command: 'ls', cwd: '/w' } })
    r.add({
      type: 'tool.cancelled',
      callId: 'c3',
      output: 'Cancelled: the user stopped the run.',
      durationMs: 0,
    })
    r.add({ type: 'run.stopped', runId: 'r1' })
    const state = reduceEvents(r.events)
    expect(getCall(state, 'c2')).toMatchObject({ status: 'skipped', causeCallId: 'c1', isError: true })
    expect(getCall(state, 'c3')).toMatchObject({
      status: 'cancelled',
      output: 'Cancelled: the user stopped the run.',
    })
    expect(state.pendingApprovals).toEqual([])
    expect(state.status).toBe('stopped')
  })

  it('produces call states that match the ToolCallState schema in every status', () => {
    const r = oneTurn([
      ['q', 'read_file', true],
      ['a', 'write_file', false],
      ['run', 'bash', false],
      ['ok', 'read_file', true],
      ['err', 'bash', false],
      ['rej', 'bash', false],
      ['skip', 'bash', false],
      ['can', 'bash', false],
    ])
    r.add({ type: 'approval.requested', callId: 'a', preview: writePreview })
    r.add({ type: 'tool.started', callId: 'run' })
    r.add({ type: 'tool.output', callId: 'run', chunk: 'line\n' })
    r.add({ type: 'tool.started', callId: 'ok' })
    r.add({ type: 'tool.finished', callId: 'ok', isError: false, output: 'fine', durationMs: 1 })
    r.add({ type: 'tool.finished', callId: 'err', isError: true, output: 'bad', durationMs: 1 })
    r.add({ type: 'approval.requested', callId: 'rej', preview: { kind: 'other', summary: 's' } })
    r.add({ type: 'approval.decided', callId: 'rej', decision: 'rejected' })
    r.add({ type: 'tool.skipped', callId: 'skip', causeCallId: 'err', output: 'Skipped' })
    r.add({ type: 'tool.cancelled', callId: 'can', output: 'Cancelled' })
    const state = reduceEvents(r.events)
    const statuses = allCalls(state).map((call) => {
      expect(ToolCallState.safeParse(call).error?.issues).toBeUndefined()
      return call.status
    })
    // Every status the schema knows, in its order: a new status fails here until this test reaches it.
    expect(statuses).toEqual(ToolCallStatus.options)
    expect(Object.values(state.counts.byStatus)).toEqual([1, 1, 1, 1, 1, 1, 1, 1])
  })

  it('keeps only the last ~64 KB of live output and counts the rest', () => {
    const r = oneTurn([['c1', 'bash', false]])
    r.add({ type: 'tool.started', callId: 'c1' })
    let state = reduceEvents(r.events)
    const chunk = `${'0123456789'.repeat(100)}\n` // 1001 chars
    for (let i = 0; i < 1000; i++) {
      state = reduceEvent(
        state,
        SessionEvent.parse({ type: 'tool.output', at: 2e6 + i, seq: 100 + i, callId: 'c1', chunk }),
      )
    }
    const live = getCall(state, 'c1')?.live
    expect(live?.totalChars).toBe(1001 * 1000)
    expect(live?.chunks).toBe(1000)
    expect(live?.tail.length).toBeGreaterThanOrEqual(LIVE_OUTPUT_TAIL_CHARS)
    expect(live?.tail.length).toBeLessThanOrEqual(LIVE_OUTPUT_TAIL_CHARS * 1.25)
    expect((live?.tail.length ?? 0) + (live?.droppedChars ?? 0)).toBe(1001 * 1000)
    expect(live?.tail.endsWith(chunk)).toBe(true)
  })

  it('never starts the live tail with half a surrogate pair', () => {
    const r = oneTurn([['c1', 'bash', false]])
    let state = reduceEvents(r.events)
    // 😀 is two UTF-16 units; an odd-length prefix puts every cut point inside a pair at some point.
    for (let i = 0; i < 200; i++) {
      const chunk = `${'x'.repeat(i % 2)}${'😀'.repeat(400)}`
      state = reduceEvent(
        state,
        SessionEvent.parse({ type: 'tool.output', at: 2e6 + i, seq: 100 + i, callId: 'c1', chunk }),
      )
      const first = getCall(state, 'c1')?.live?.tail.charCodeAt(0) ?? 0
      expect(first >= 0xdc00 && first <= 0xdfff).toBe(false)
    }
  })

  it('keeps the latest snapshot per path', () => {
    const r = recorder()
    r.add({ type: 'file.snapshot', path: '/w/a', mtimeMs: 1, hash: 'h1' })
    r.add({ type: 'file.snapshot', path: '/w/b', mtimeMs: 2, hash: 'h2' })
    const last = r.add({ type: 'file.snapshot', path: '/w/a', mtimeMs: 3, hash: 'h3' })
    expect(reduceEvents(r.events).snapshots).toEqual({
      '/w/a': { mtimeMs: 3, hash: 'h3', at: last.at },
      '/w/b': { mtimeMs: 2, hash: 'h2', at: r.events[1]?.at },
    })
  })

  it('tracks seq and time of the events it saw', () => {
    const r = oneTurn([])
    const state = reduceEvents(r.events)
    expect(state.lastSeq).toBe(r.events.length - 1)
    expect(state.firstEventAt).toBe(r.events[0]?.at)
    expect(state.lastEventAt).toBe(r.events.at(-1)?.at)
    expect(state.counts.events).toBe(r.events.length)
  })
})

describe('reduceEvent on events that do not fit', () => {
  const anomalies = (state: SessionState) => state.counts.anomalies

  it('ignores a result for an unknown call and counts it', () => {
    const r = oneTurn([])
    r.add({ type: 'tool.finished', callId: 'ghost', isError: false, output: 'x', durationMs: 1 })
    r.add({ type: 'tool.started', callId: 'ghost' })
    r.add({ type: 'tool.output', callId: 'ghost', chunk: 'x' })
    r.add({ type: 'approval.decided', callId: 'ghost', decision: 'approved' })
    const state = reduceEvents(r.events)
    expect(anomalies(state)).toBe(4)
    expect(state.lastAnomaly).toContain('ghost')
    expect(allCalls(state)).toEqual([])
  })

  it('keeps the first result of a call and ignores a second one', () => {
    const r = oneTurn([['c1', 'bash', false]])
    r.add({ type: 'tool.finished', callId: 'c1', isError: false, output: 'first', durationMs: 1 })
    r.add({ type: 'tool.finished', callId: 'c1', isError: true, output: 'second', durationMs: 1 })
    r.add({ type: 'tool.cancelled', callId: 'c1', output: 'third' })
    r.add({ type: 'tool.started', callId: 'c1' })
    const state = reduceEvents(r.events)
    expect(getCall(state, 'c1')).toMatchObject({ status: 'ok', output: 'first' })
    expect(anomalies(state)).toBe(3)
  })

  it('creates a turn whose turn.started is missing instead of losing its calls', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 't' })
    r.add({ type: 'assistant.delta', turn: 3, index: 0, text: 'hi' })
    r.add({
      type: 'tool.queued',
      callId: 'c1',
      turn: 3,
      index: 1,
      name: 'read_file',
      input: {},
      safe: true,
      lane: { kind: 'parallel', group: 0 },
    })
    r.add({ type: 'tool.finished', callId: 'c1', isError: false, output: 'ok', durationMs: 1 })
    const state = reduceEvents(r.events)
    expect(turn(state, 3).blocks[0]).toEqual({ kind: 'text', index: 0, text: 'hi' })
    expect(status(state, 'c1')).toBe('ok')
    expect(anomalies(state)).toBe(1)
  })

  it('counts duplicate starts, duplicate queues, decisions twice and seq going backwards', () => {
    const r = oneTurn([['c1', 'bash', false]])
    r.add({ type: 'run.started', runId: 'r1', task: 'again' })
    r.add({ type: 'turn.started', runId: 'r1', turn: 1 })
    r.add({
      type: 'tool.queued',
      callId: 'c1',
      turn: 1,
      index: 5,
      name: 'other',
      input: {},
      safe: true,
      lane: { kind: 'serial' },
    })
    r.add({ type: 'approval.decided', callId: 'c1', decision: 'approved' })
    r.add({ type: 'approval.decided', callId: 'c1', decision: 'rejected' })
    let state = reduceEvents(r.events)
    expect(anomalies(state)).toBe(4)
    expect(getCall(state, 'c1')).toMatchObject({
      name: 'bash',
      status: 'queued',
      approval: { decision: 'approved' },
    })
    expect(state.runs).toHaveLength(1)

    const stale = SessionEvent.parse({ type: 'run.resumed', at: 5, seq: 2, runId: 'r1' })
    state = reduceEvent(state, stale)
    expect(anomalies(state)).toBe(5)
    expect(state.lastSeq).toBe(r.events.length - 1)
  })

  it('follows a run end whose start is missing, and ignores an old run ending late', () => {
    const r = recorder()
    r.add({ type: 'run.finished', runId: 'lost', reason: 'end_turn' })
    let state = reduceEvents(r.events)
    expect(state.status).toBe('finished')
    expect(anomalies(state)).toBe(1)

    r.add({ type: 'run.started', runId: 'r1', task: 'a' })
    r.add({ type: 'run.started', runId: 'r2', task: 'b' })
    r.add({ type: 'run.failed', runId: 'r1', error: 'late' })
    state = reduceEvents(r.events)
    expect(state.status).toBe('running')
    expect(state.runs.find((run) => run.runId === 'r1')?.status).toBe('failed')
  })

  it('does not throw on garbage that slipped past validation', () => {
    const state = reduceEvents(oneTurn([['c1', 'bash', false]]).events)
    const garbage = [
      { type: 'nonsense', at: 1, seq: 999 },
      { type: 'assistant.message', at: 1, seq: 1000, turn: 1, message: null, stopReason: null },
      { type: 'tool.queued', at: 1, seq: 1001 },
      {},
    ] as unknown as SessionEvent[]
    let next = state
    for (const event of garbage) next = reduceEvent(next, event)
    expect(next.counts.anomalies).toBeGreaterThanOrEqual(3)
    expect(status(next, 'c1')).toBe('queued')
  })

  it('stores a call whose id is __proto__ as a call, not as a prototype', () => {
    const r = oneTurn([['__proto__', 'bash', false]])
    r.add({ type: 'tool.started', callId: '__proto__' })
    r.add({ type: 'file.snapshot', path: '__proto__', mtimeMs: 1, hash: 'h' })
    const state = reduceEvents(r.events)
    expect(status(state, '__proto__')).toBe('running')
    expect(Object.getPrototypeOf(turn(state, 1).calls)).toBe(Object.prototype)
    expect(Object.keys(turn(state, 1).calls)).toEqual(['__proto__'])
    expect(Object.keys(state.snapshots)).toEqual(['__proto__'])
    expect(state.counts.anomalies).toBe(0)
  })

  it('does not mistake inherited object keys for calls', () => {
    const r = oneTurn([['c1', 'bash', false]])
    r.add({ type: 'tool.started', callId: 'constructor' })
    r.add({ type: 'tool.finished', callId: '__proto__', isError: false, output: 'x', durationMs: 1 })
    const state = reduceEvents(r.events)
    expect(getCall(state, 'constructor')).toBeUndefined()
    expect(getCall(state, 'toString')).toBeUndefined()
    expect(state.counts.anomalies).toBe(2)
  })
})
