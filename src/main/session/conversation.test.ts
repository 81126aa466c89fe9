import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SessionEvent, type SessionEventDraft } from '../../shared/events'
import { queuedCall } from '../../shared/reducer-test-events'
import { buildConversation, snapshotsFrom } from './conversation'
import { openSessionWriter, readSession } from './log'

function recorder() {
  const events: SessionEvent[] = []
  const add = (draft: SessionEventDraft): void => {
    events.push(SessionEvent.parse({ ...draft, at: draft.at ?? 1000 + events.length, seq: events.length }))
  }
  add({
    type: 'session.created',
    sessionId: 's1',
    workspace: '/w',
    settings: { model: 'm', scheduler: 'batch', siblingSkip: true, demo: false },
  })
  return { events, add }
}

const read = (id: string, path: string) => ({ type: 'tool_use', id, name: 'read_file', input: { path } })
const bash = (id: string, command: string) => ({ type: 'tool_use', id, name: 'bash', input: { command } })

/** A turn: its message with these blocks, and each tool_use queued. */
function turn(
  r: ReturnType<typeof recorder>,
  n: number,
  content: Record<string, unknown>[],
  stopReason = 'tool_use',
) {
  r.add({ type: 'turn.started', runId: 'r1', turn: n })
  r.add({ type: 'assistant.message', turn: n, message: { role: 'assistant', content }, stopReason })
  content.forEach((block, index) => {
    if (block.type !== 'tool_use') return
    r.add({
      type: 'tool.queued',
      callId: block.id as string,
      turn: n,
      index,
      name: block.name as string,
      input: block.input,
      safe: block.name === 'read_file',
      lane: block.name === 'read_file' ? { kind: 'parallel', group: 0 } : { kind: 'serial' },
    })
  })
}

describe('buildConversation', () => {
  it('rebuilds task, assistant messages and one tool_result per tool_use in call order', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 'Fix the build' })
    turn(r, 1, [
      { type: 'text', text: 'Reading.' },
      read('t1', 'a.ts'),
      read('t2', 'b.ts'),
      bash('t3', 'npm test'),
    ])
    // Results arrive out of order (parallel reads); the model gets them in call order.
    r.add({ type: 'tool.finished', callId: 't2', isError: false, output: 'B', durationMs: 1 })
    r.add({ type: 'tool.finished', callId: 't1', isError: false, output: 'A', durationMs: 1 })
    r.add({
      type: 'tool.finished',
      callId: 't3',
      isError: true,
      output: 'exit 1\n[HINT: ...]',
      durationMs: 1,
    })
    turn(r, 2, [{ type: 'text', text: 'Done.' }], 'end_turn')
    r.add({ type: 'run.finished', runId: 'r1', reason: 'end_turn' })

    const { messages, pendingCalls, recordedResults } = buildConversation(r.events)
    expect(pendingCalls).toEqual([])
    expect(recordedResults).toEqual([])
    expect(messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Fix the build' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading.' },
          read('t1', 'a.ts'),
          read('t2', 'b.ts'),
          bash('t3', 'npm test'),
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'A' },
          { type: 'tool_result', tool_use_id: 't2', content: 'B' },
          { type: 'tool_result', tool_use_id: 't3', content: 'exit 1\n[HINT: ...]', is_error: true },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    ])
    // Decorating the request must not change the log's events.
    ;(messages[1]?.content as unknown as Record<string, unknown>[])[0]!.cache_control = { type: 'ephemeral' }
    expect(JSON.stringify(r.events)).not.toContain('cache_control')
  })

  it('sends skipped, cancelled and rejected calls their recorded output as errors', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 't' })
    turn(r, 1, [bash('b1', 'false'), bash('b2', 'ls'), bash('b3', 'pwd'), bash('b4', 'env')])
    r.add({ type: 'tool.finished', callId: 'b1', isError: true, output: 'failed', durationMs: 1 })
    r.add({ type: 'tool.skipped', callId: 'b2', causeCallId: 'b1', output: 'Skipped: b1 failed' })
    r.add({ type: 'approval.requested', callId: 'b3', preview: { kind: 'bash', command: 'pwd', cwd: '/w' } })
    r.add({ type: 'approval.decided', callId: 'b3', decision: 'rejected', note: 'no' })
    r.add({
      type: 'tool.finished',
      callId: 'b3',
      isError: true,
      output: 'Rejected by the user: no',
      durationMs: 0,
    })
    r.add({ type: 'tool.cancelled', callId: 'b4', output: 'Cancelled: stopped' })
    r.add({ type: 'run.stopped', runId: 'r1' })
    const { messages, pendingCalls } = buildConversation(r.events)
    expect(pendingCalls).toEqual([])
    expect(messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'b1', content: 'failed', is_error: true },
        { type: 'tool_result', tool_use_id: 'b2', content: 'Skipped: b1 failed', is_error: true },
        { type: 'tool_result', tool_use_id: 'b3', content: 'Rejected by the user: no', is_error: true },
        { type: 'tool_result', tool_use_id: 'b4', content: 'Cancelled: stopped', is_error: true },
      ],
    })
  })

  it('returns the calls of a paused last turn as pending, with what the log knows about them', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 't' })
    turn(r, 1, [read('r1c', 'a.ts'), bash('w1', 'npm test'), bash('w2', 'npm run lint')])
    r.add({ type: 'tool.finished', callId: 'r1c', isError: false, output: 'A', durationMs: 1 })
    r.add({
      type: 'approval.requested',
      callId: 'w1',
      preview: { kind: 'bash', command: 'npm test', cwd: '/w' },
    })
    r.add({
      type: 'approval.requested',
      callId: 'w2',
      preview: { kind: 'bash', command: 'npm run lint', cwd: '/w' },
    })
    r.add({ type: 'approval.decided', callId: 'w1', decision: 'approved' })
    r.add({ type: 'run.paused', runId: 'r1', reason: 'approval', callIds: ['w2'] })

    const { messages, pendingCalls, recordedResults } = buildConversation(r.events)
    // The list ends with the assistant message: the loop sends the turn's results at once when the calls are
    // done.
    expect(messages.at(-1)?.role).toBe('assistant')
    expect(recordedResults).toEqual([{ type: 'tool_result', tool_use_id: 'r1c', content: 'A' }])
    expect(pendingCalls.map((c) => [c.callId, c.name, c.state?.status, c.state?.approval?.decision])).toEqual(
      [
        ['w1', 'bash', 'queued', 'approved'],
        ['w2', 'bash', 'awaiting-approval', undefined],
      ],
    )
    expect(pendingCalls[0]).toMatchObject({ input: { command: 'npm test' }, turn: 1, index: 1 })
  })

  it('reports a call that was running when the app died as pending, and one never queued without a state', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 't' })
    turn(r, 1, [bash('b1', 'npm test')])
    r.add({ type: 'tool.started', callId: 'b1' })
    r.add({
      type: 'assistant.message',
      turn: 2,
      message: { role: 'assistant', content: [read('x1', 'never-queued.ts')] },
      stopReason: 'tool_use',
    })
    const { pendingCalls, messages } = buildConversation(r.events)
    // Turn 1 is not the last one any more: its missing result is filled in so the history stays valid.
    expect(messages[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'b1',
          content: expect.stringContaining('interrupted'),
          is_error: true,
        },
      ],
    })
    expect(pendingCalls).toEqual([
      {
        callId: 'x1',
        name: 'read_file',
        input: { path: 'never-queued.ts' },
        turn: 2,
        index: 0,
        state: undefined,
      },
    ])
  })

  it('merges consecutive user content: results of a stopped run, then the next task', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 'first' })
    turn(r, 1, [read('a', 'a.ts')])
    r.add({ type: 'tool.cancelled', callId: 'a', output: 'Cancelled' })
    r.add({ type: 'run.stopped', runId: 'r1' })
    r.add({ type: 'run.started', runId: 'r2', task: 'second' })
    r.add({ type: 'run.failed', runId: 'r2', error: 'network' })
    r.add({ type: 'run.started', runId: 'r3', task: 'third' })
    const { messages } = buildConversation(r.events)
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(messages[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'a', content: 'Cancelled', is_error: true },
      { type: 'text', text: 'second' },
      { type: 'text', text: 'third' },
    ])
  })

  it('rebuilds a turn whose assistant.message never arrived from its deltas and queued calls', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 't' })
    r.add({ type: 'turn.started', runId: 'r1', turn: 1 })
    r.add({ type: 'assistant.delta', turn: 1, index: 0, text: 'Let me ' })
    r.add({ type: 'assistant.delta', turn: 1, index: 0, text: 'look.' })
    r.add(queuedCall({ callId: 'q1', index: 1, name: 'glob', input: { pattern: '**/*.ts' } }))
    r.add({
      type: 'tool.queued',
      callId: 'q2',
      turn: 1,
      index: 2,
      name: 'bash',
      input: null,
      rawInput: '{"command": ',
      safe: false,
      lane: { kind: 'serial' },
    })
    r.add({ type: 'tool.finished', callId: 'q1', isError: false, output: '', durationMs: 1 })
    r.add({ type: 'tool.finished', callId: 'q2', isError: true, output: 'bad arguments', durationMs: 0 })
    r.add({ type: 'run.failed', runId: 'r1', error: 'The connection dropped.', kind: 'network' })
    const { messages, pendingCalls } = buildConversation(r.events)
    expect(pendingCalls).toEqual([])
    expect(messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', id: 'q1', name: 'glob', input: { pattern: '**/*.ts' } },
          { type: 'tool_use', id: 'q2', name: 'bash', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          // An empty output is sent without content: the API refuses empty text.
          { type: 'tool_result', tool_use_id: 'q1' },
          { type: 'tool_result', tool_use_id: 'q2', content: 'bad arguments', is_error: true },
        ],
      },
    ])
  })

  it('leaves out a turn that produced nothing', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 't' })
    r.add({ type: 'turn.started', runId: 'r1', turn: 1 })
    r.add({ type: 'run.failed', runId: 'r1', error: 'overloaded', kind: 'model' })
    expect(buildConversation(r.events).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 't' }] },
    ])
  })

  it('continues from a log written and read back by the real writer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lanes-conv-'))
    try {
      const r = recorder()
      r.add({ type: 'run.started', runId: 'r1', task: 'Fix it' })
      turn(r, 1, [read('t1', 'a.ts')])
      r.add({ type: 'tool.finished', callId: 't1', isError: false, output: 'A', durationMs: 1 })
      const w = await openSessionWriter(dir, 's1', { create: true })
      for (const event of r.events) {
        const { seq: _seq, ...draft } = event
        await w.append(draft as SessionEventDraft)
      }
      await w.close()
      const { events, warnings } = await readSession(w.file)
      expect(warnings).toEqual([])
      expect(buildConversation(events)).toEqual(buildConversation(r.events))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('snapshotsFrom', () => {
  it('keeps the latest snapshot per path', () => {
    const r = recorder()
    r.add({ type: 'file.snapshot', path: '/w/a', mtimeMs: 1, hash: 'a1' })
    r.add({ type: 'file.snapshot', path: '/w/b', mtimeMs: 2, hash: 'b1' })
    r.add({ type: 'file.snapshot', path: '/w/a', mtimeMs: 3.5, hash: 'a2' })
    expect(snapshotsFrom(r.events)).toEqual([
      { path: '/w/a', mtimeMs: 3.5, hash: 'a2' },
      { path: '/w/b', mtimeMs: 2, hash: 'b1' },
    ])
    expect(snapshotsFrom([])).toEqual([])
  })

  it('drops the files a finished rewind put back: the model must read them again', () => {
    const r = recorder()
    r.add({ type: 'file.snapshot', path: '/w/a', mtimeMs: 1, hash: 'a1' })
    r.add({ type: 'file.snapshot', path: '/w/b', mtimeMs: 2, hash: 'b1' })
    rewound(r, { rewindId: 'w1', mode: 'undo', callId: 't1', changes: [change('a')] })
    expect(snapshotsFrom(r.events)).toEqual([{ path: '/w/b', mtimeMs: 2, hash: 'b1' }])
  })
})

const hash = (c: string) => c.repeat(64)
const change = (name: string, to: string | null = hash('1')) => ({
  path: `/w/${name}`,
  relPath: name,
  from: hash('2'),
  to,
})

/** A rewind logged from its intent to its outcome (done). */
function rewound(
  r: ReturnType<typeof recorder>,
  w: {
    rewindId: string
    mode: 'undo' | 'rewind'
    callId: string
    changes: ReturnType<typeof change>[]
    skipped?: { relPath: string; reason: string }[]
    turn?: number
  },
) {
  r.add({ type: 'rewind.started', callIds: [w.callId], skipped: [], ...w })
  r.add({
    type: 'rewind.finished',
    rewindId: w.rewindId,
    outcome: 'done',
    ...(w.turn === undefined ? {} : { conversationFromTurn: w.turn }),
  })
}

describe('what the conversation says of rewinds', () => {
  const task = (text: string) => ({ type: 'text', text })

  it('tells of files an undo put back once, in the next user message, before the next task', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 'Fix it' })
    turn(r, 1, [{ type: 'text', text: 'Done.' }], 'end_turn')
    r.add({ type: 'run.finished', runId: 'r1', reason: 'end_turn' })
    rewound(r, {
      rewindId: 'w1',
      mode: 'undo',
      callId: 't9',
      changes: [change('a.ts'), change('b.ts', null)],
    })
    r.add({ type: 'run.started', runId: 'r2', task: 'Again' })
    const note =
      'The user put these files back to earlier versions: a.ts (as before call t9), b.ts (removed). ' +
      'Read them again before changing them.'
    expect(buildConversation(r.events).messages).toEqual([
      { role: 'user', content: [task('Fix it')] },
      { role: 'assistant', content: [task('Done.')] },
      { role: 'user', content: [task(note), task('Again')] },
    ])
  })

  it('tells of the files a conversation rewind skipped, not of those that went back with it', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 'Fix it' })
    turn(r, 1, [read('t1', 'a.ts')])
    r.add({ type: 'tool.finished', callId: 't1', isError: false, output: 'A', durationMs: 1 })
    turn(r, 2, [{ type: 'text', text: 'Later.' }], 'end_turn')
    rewound(r, {
      rewindId: 'w1',
      mode: 'rewind',
      callId: 't1',
      changes: [change('a.ts')],
      skipped: [{ relPath: 'c.ts', reason: 'changed since' }],
      turn: 2,
    })
    const { messages } = buildConversation(r.events)
    expect(messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: 'A' },
        task(
          'These files were not put back and keep the changes made since: c.ts. ' +
            'Read them again before changing them.',
        ),
      ],
    })
    expect(JSON.stringify(messages)).not.toContain('Later.')
  })

  it('leaves the calls of an interrupted last turn pending when an undo follows it', () => {
    const r = recorder()
    r.add({ type: 'run.started', runId: 'r1', task: 'Fix it' })
    turn(r, 1, [read('t1', 'a.ts')])
    rewound(r, { rewindId: 'w1', mode: 'undo', callId: 't0', changes: [change('a.ts')] })
    const { messages, pendingCalls } = buildConversation(r.events)
    expect(pendingCalls.map((c) => c.callId)).toEqual(['t1'])
    expect(messages.at(-2)?.role).toBe('assistant')
    expect(JSON.stringify(messages.at(-1))).toContain('a.ts (as before call t0)')
  })
})
