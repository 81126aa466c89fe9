import { describe, expect, it } from 'vitest'
import { SessionEvent } from '../../../shared/events'
import { reduceEvents } from '../../../shared/reducer'
import { CHECKPOINT_EVERY, EventTimeline } from './event-timeline'

/**
 * Replay seeks from checkpoints (states kept every CHECKPOINT_EVERY events, sharing structure) and from the last
 * position it computed. Whatever the path, the state at position n must be the one reducing events 0..n from
 * scratch gives. Checked here over a session that has every kind of event, runs ending each way, a rewind between
 * runs, and enough events for several checkpoints.
 */

const hash = (n: number): string => n.toString(16).padStart(64, '0')

/** One run with every kind of event in it (the session's own events too when `first`); ids unique per run. */
function runEvents(r: number, first: boolean): Record<string, unknown>[] {
  const runId = `r${r}`
  const turn = r + 1
  const call = (i: number): string => `toolu_${r}_${i}`
  const events: Record<string, unknown>[] = []
  if (first)
    events.push(
      {
        type: 'session.created',
        sessionId: 'every-kind',
        workspace: '/w',
        title: 'Every kind of event',
        settings: { model: 'claude-sonnet-4-5', scheduler: 'streaming', siblingSkip: true, demo: false },
      },
      {
        type: 'instructions.loaded',
        scope: 'root',
        files: [{ path: 'AGENTS.md', bytes: 120, tokens: 30 }],
        text: '<project-instructions>be brief</project-instructions>',
      },
      { type: 'mcp.server', server: 'files', status: 'starting' },
      {
        type: 'mcp.server',
        server: 'files',
        status: 'ready',
        origin: 'workspace',
        sandboxed: true,
        tools: [{ name: 'mcp__files__read', tool: 'read', readOnly: true, destructive: false, tokens: 40 }],
      },
    )
  events.push(
    { type: 'run.started', runId, task: `Task number ${r}` },
    { type: 'turn.started', runId, turn },
    {
      type: 'assistant.thinking',
      turn,
      index: 0,
      block: { type: 'thinking', thinking: `Plan for ${r}.`, signature: `sig-${r}` },
    },
    { type: 'assistant.delta', turn, index: 1, text: 'Reading ' },
    { type: 'assistant.delta', turn, index: 1, text: 'the sources.' },
    {
      type: 'model.retrying',
      runId,
      turn,
      attempt: 2,
      of: 6,
      delayMs: 4000,
      reason: 'overloaded',
      message: 'The model API is overloaded right now.',
    },
    {
      type: 'assistant.message',
      turn,
      message: {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: `Plan for ${r}.`, signature: `sig-${r}` },
          { type: 'text', text: 'Reading the sources.' },
          ...[1, 2, 3, 4, 5, 6].map((i) => ({ type: 'tool_use', id: call(i), name: 'x', input: {} })),
        ],
      },
      stopReason: 'tool_use',
      usage: { inputTokens: 1200 + r, outputTokens: 80, cacheReadTokens: 1000, cacheCreationTokens: 0 },
    },
    {
      type: 'tool.queued',
      callId: call(1),
      turn,
      index: 2,
      name: 'mcp__files__read',
      input: { path: 'a.ts' },
      safe: true,
      lane: { kind: 'parallel', group: 0 },
      title: 'Read a.ts',
      server: 'files',
    },
    {
      type: 'tool.queued',
      callId: call(2),
      turn,
      index: 3,
      name: 'write_file',
      input: { path: 'a.ts', content: `v${r}` },
      safe: false,
      lane: { kind: 'serial' },
    },
    {
      type: 'tool.queued',
      callId: call(3),
      turn,
      index: 4,
      name: 'bash',
      input: { command: 'npm test', description: 'Run the tests' },
      safe: false,
      lane: { kind: 'serial' },
    },
    {
      type: 'tool.queued',
      callId: call(4),
      turn,
      index: 5,
      name: 'bash',
      input: { command: 'npm run lint' },
      safe: false,
      lane: { kind: 'serial' },
    },
    {
      type: 'tool.queued',
      callId: call(5),
      turn,
      index: 6,
      name: 'bash',
      input: null,
      rawInput: '{"command": "sleep 1",}',
      safe: false,
      lane: { kind: 'serial' },
    },
    {
      type: 'tool.queued',
      callId: call(6),
      turn,
      index: 7,
      name: 'read_file',
      input: { path: 'b.ts' },
      safe: true,
      lane: { kind: 'parallel', group: 0 },
    },
    { type: 'tool.started', callId: call(1) },
    { type: 'tool.started', callId: call(6) },
    {
      type: 'tool.finished',
      callId: call(1),
      isError: false,
      output: '     1|export const a = 1',
      metadata: { totalLines: 1 },
      durationMs: 3,
      title: 'Read a.ts (1 line)',
    },
    { type: 'file.snapshot', path: '/w/a.ts', mtimeMs: 1000 + r, hash: hash(r * 2 + 1) },
    {
      type: 'approval.requested',
      callId: call(2),
      preview: {
        kind: 'write',
        path: 'a.ts',
        before: 'a\n',
        after: 'b\n',
        hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ['-a', '+b'] }],
        protected: false,
      },
      sessionRule: { kind: 'edits' },
    },
    {
      type: 'approval.requested',
      callId: call(3),
      preview: { kind: 'bash', command: 'npm test', description: 'Run the tests', cwd: '/w' },
    },
    { type: 'run.paused', runId, reason: 'approval', callIds: [call(2), call(3)] },
    { type: 'rule.granted', ruleId: `rule-${r}`, rule: { kind: 'edits' }, callId: call(2) },
    { type: 'approval.decided', callId: call(2), decision: 'approved', always: false, by: 'user' },
    { type: 'approval.decided', callId: call(3), decision: 'approved', hold: true, by: 'user' },
    { type: 'run.resumed', runId },
    { type: 'file.preimage', callId: call(2), path: '/w/a.ts', relPath: 'a.ts', hash: hash(r * 2 + 1) },
    { type: 'tool.started', callId: call(2) },
    { type: 'tool.finished', callId: call(2), isError: false, output: 'Wrote a.ts', durationMs: 2 },
    { type: 'tool.started', callId: call(3) },
    { type: 'tool.output', callId: call(3), chunk: '\u001b[32mrunning\u001b[0m\r\n' },
    { type: 'command.landing', callId: call(3), layer: `/s/capture/${call(3)}`, entries: 2 },
    {
      type: 'command.held',
      callId: call(3),
      paths: [{ relPath: '.env', reason: 'a secret file' }],
      count: 1,
      landed: false,
      review: [
        {
          relPath: '.env',
          change: 'changed',
          kind: 'file',
          reason: 'a secret file',
          diff: {
            kind: 'write',
            path: '.env',
            hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ['-A=1', '+A=2'] }],
            protected: true,
          },
        },
      ],
    },
    {
      type: 'command.reviewed',
      callId: call(3),
      by: 'user',
      accepted: [],
      rejected: [{ relPath: '.env', reason: 'rejected by the user' }],
      acceptedCount: 0,
      rejectedCount: 1,
    },
    { type: 'command.landed', callId: call(3), outcome: 'done' },
    {
      type: 'tool.finished',
      callId: call(3),
      isError: true,
      output: 'Exit code 1\nError: 2 tests failed',
      metadata: {
        changes: {
          mode: 'overlay',
          counts: { changed: 1, added: 0, removed: 0, modeChanged: 0 },
          paths: [{ relPath: 'a.ts', change: 'changed' }],
          truncated: false,
          undoable: true,
        },
      },
      durationMs: 1200,
    },
    {
      type: 'tool.skipped',
      callId: call(4),
      causeCallId: call(3),
      output: 'Skipped: not run because bash(npm test) failed earlier in this turn.',
    },
    { type: 'tool.finished', callId: call(6), isError: false, output: 'b', durationMs: 9 },
    { type: 'tool.started', callId: call(5) },
    { type: 'tool.cancelled', callId: call(5), output: 'Cancelled after 1200 ms.', durationMs: 1200 },
    {
      type: 'context.compacted',
      runId,
      turn,
      mode: 'client',
      strategy: 'summary',
      reason: 'window_full',
      tokensBefore: 180_000,
      tokensAfter: 12_000,
      summary: 'The task so far.',
      keptFromTurn: turn,
      readFiles: ['a.ts'],
    },
    { type: 'instructions.loaded', scope: 'nested', folder: `pkg/${r}`, turn, files: [], text: '' },
    { type: 'rule.revoked', ruleId: `rule-${r}` },
  )
  // Runs end each way in turn.
  if (r % 3 === 0)
    events.push({
      type: 'run.finished',
      runId,
      reason: 'end_turn',
      usage: { inputTokens: 5, outputTokens: 6 },
    })
  else if (r % 3 === 1)
    events.push({ type: 'run.failed', runId, error: 'The API key was refused.', kind: 'auth' })
  else events.push({ type: 'run.stopped', runId })
  // Between runs, the write is taken back (an undo after one run, a rewind to its turn after the next).
  events.push(
    {
      type: 'rewind.started',
      rewindId: `rw${r}`,
      mode: r % 2 === 0 ? 'undo' : 'rewind',
      callId: call(2),
      callIds: [call(2)],
      changes: [{ path: '/w/a.ts', relPath: 'a.ts', from: hash(r * 2 + 2), to: hash(r * 2 + 1) }],
      skipped: [],
      ...(r % 2 === 0 ? {} : { turn }),
    },
    r % 4 === 3
      ? {
          type: 'rewind.finished',
          rewindId: `rw${r}`,
          outcome: 'rolled-back',
          recovered: true,
          error: 'disk full',
        }
      : { type: 'rewind.finished', rewindId: `rw${r}`, outcome: 'done' },
  )
  return events
}

function everyKindSession(minEvents: number): SessionEvent[] {
  const raw: Record<string, unknown>[] = []
  for (let r = 0; raw.length < minEvents; r++) raw.push(...runEvents(r, r === 0))
  // Valid events, as a log holds them: a clock that moves on, one seq each.
  return raw.map((e, seq) => SessionEvent.parse({ ...e, seq, at: 1_000_000 + seq * 250 }))
}

describe('EventTimeline over a session with every kind of event', () => {
  const events = everyKindSession(CHECKPOINT_EVERY * 3 + 40)
  const scratch = (n: number) => reduceEvents(events.slice(0, n))

  it('has every kind of event, in a session long enough for several checkpoints', () => {
    const kinds = new Set(events.map((e) => e.type))
    const members = SessionEvent.options.map((option) => option.shape.type.value)
    expect([...kinds].sort()).toEqual([...members].sort())
    expect(events.length).toBeGreaterThan(CHECKPOINT_EVERY * 3)
    // The reducer took it as a session, not as damage.
    expect(reduceEvents(events).lastAnomaly).toBeUndefined()
  })

  it('seeks to the state a from-scratch reduce gives: around each checkpoint, backwards, and at random', () => {
    const timeline = new EventTimeline(events)
    expect(timeline.head).toEqual(scratch(events.length))
    const positions: number[] = []
    // Each side of every checkpoint, where seeking switches from one to the next.
    for (let k = 0; k * CHECKPOINT_EVERY <= events.length; k++)
      for (let d = -2; d <= 2; d++) positions.push(k * CHECKPOINT_EVERY + d)
    // Backwards from the end in steps that land everywhere between checkpoints.
    for (let n = events.length; n >= 0; n -= 37) positions.push(n)
    // Forwards a few events at a time (the cursor), then at random (checkpoints and cursor mixed).
    for (let n = 100; n < 140; n += 3) positions.push(n)
    let seed = 11
    for (let i = 0; i < 60; i++) {
      seed = (seed * 16807) % 2147483647
      positions.push(seed % (events.length + 1))
    }
    for (const n of positions) {
      const index = Math.max(0, Math.min(events.length, n))
      expect(timeline.stateAtIndex(n), `position ${n}`).toEqual(scratch(index))
    }
  })

  it('gives the same states when the log arrives in pieces (a load, then live batches)', () => {
    const timeline = new EventTimeline(events.slice(0, 100))
    // A seek before the rest arrives leaves its cursor behind.
    expect(timeline.stateAtIndex(60)).toEqual(scratch(60))
    for (let from = 100; from < events.length; from += 33) timeline.append(events.slice(from, from + 33))
    expect(timeline.head).toEqual(scratch(events.length))
    for (const n of [61, 99, 100, 101, CHECKPOINT_EVERY + 1, events.length - 1, 60, 0])
      expect(timeline.stateAtIndex(n), `position ${n}`).toEqual(scratch(n))
  })

  it('gives the same state by time as by index, for every event time', () => {
    const timeline = new EventTimeline(events)
    for (let i = 0; i < events.length; i += 13) {
      const at = (events[i] as SessionEvent).at
      expect(timeline.stateAt(at), `at ${at}`).toEqual(scratch(i + 1))
    }
  })
})
