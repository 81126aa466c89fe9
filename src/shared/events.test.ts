import { describe, expect, it } from 'vitest'
import {
  canReviewByHunk,
  capWritePreview,
  rejectsEveryHunk,
  PREVIEW_MAX_CHARS,
  SessionEvent,
  SessionId,
  type SessionEventType,
  type WritePreview,
} from './events'

const base = { at: 1_764_531_612_123, seq: 0 }

/** One valid example of every event type, with every optional field somewhere. */
const samples: Record<SessionEventType, unknown[]> = {
  'session.created': [
    {
      type: 'session.created',
      ...base,
      sessionId: '2026-11-30T19-40-12-123Z-a1b2c3',
      workspace: '/home/ada/project',
      title: 'Fix the tests',
      settings: { model: 'claude-sonnet-4-5', scheduler: 'streaming', siblingSkip: true, demo: false },
    },
    {
      type: 'session.created',
      ...base,
      sessionId: 's1',
      workspace: 'C:\\Users\\ada\\project',
      settings: {
        model: 'm',
        scheduler: 'batch',
        siblingSkip: false,
        baseUrl: 'http://127.0.0.1:4000',
        demo: true,
      },
    },
  ],
  'run.started': [{ type: 'run.started', ...base, runId: 'r1', task: 'Make the build green' }],
  'turn.started': [{ type: 'turn.started', ...base, runId: 'r1', turn: 1 }],
  'assistant.delta': [{ type: 'assistant.delta', ...base, turn: 1, index: 0, text: 'Reading ' }],
  'assistant.thinking': [
    {
      type: 'assistant.thinking',
      ...base,
      turn: 1,
      index: 0,
      block: { type: 'thinking', thinking: 'Look at a.ts first.', signature: 'sig-1' },
    },
    {
      type: 'assistant.thinking',
      ...base,
      turn: 1,
      index: 1,
      block: { type: 'redacted_thinking', data: 'EmwK' },
    },
  ],
  'model.retrying': [
    {
      type: 'model.retrying',
      ...base,
      runId: 'r1',
      turn: 1,
      attempt: 2,
      of: 6,
      delayMs: 4000,
      reason: 'overloaded',
      message: 'The model API is overloaded right now.',
    },
  ],
  'assistant.message': [
    {
      type: 'assistant.message',
      ...base,
      turn: 1,
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading the sources.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/a.ts' } },
        ],
      },
      stopReason: 'tool_use',
      usage: { inputTokens: 1200, outputTokens: 80, cacheReadTokens: 1000, cacheCreationTokens: 0 },
    },
    {
      type: 'assistant.message',
      ...base,
      turn: 2,
      message: { role: 'assistant', content: [] },
      stopReason: null,
    },
  ],
  'tool.queued': [
    {
      type: 'tool.queued',
      ...base,
      callId: 'toolu_1',
      turn: 1,
      index: 1,
      name: 'read_file',
      input: { path: 'src/a.ts' },
      safe: true,
      lane: { kind: 'parallel', group: 0 },
      title: 'Read src/a.ts',
      server: 'files',
    },
    {
      type: 'tool.queued',
      ...base,
      callId: 'toolu_2',
      turn: 1,
      index: 2,
      name: 'bash',
      input: null,
      rawInput: '{"command": "npm test",}',
      safe: false,
      lane: { kind: 'serial' },
    },
  ],
  'approval.requested': [
    {
      type: 'approval.requested',
      ...base,
      callId: 'toolu_3',
      preview: {
        kind: 'write',
        path: 'src/a.ts',
        before: 'a\n',
        after: 'b\n',
        hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ['-a', '+b'] }],
        protected: false,
      },
      sessionRule: { kind: 'edits' },
    },
    {
      type: 'approval.requested',
      ...base,
      callId: 'toolu_4',
      preview: { kind: 'write', path: 'new.md', before: null, hunks: [], truncated: true, protected: true },
    },
    {
      type: 'approval.requested',
      ...base,
      callId: 'toolu_5',
      preview: { kind: 'bash', command: 'npm test', description: 'Run the tests', cwd: '/home/ada/project' },
    },
    {
      type: 'approval.requested',
      ...base,
      callId: 'toolu_6',
      preview: { kind: 'other', summary: 'Do a thing' },
    },
  ],
  'approval.decided': [
    { type: 'approval.decided', ...base, callId: 'toolu_3', decision: 'approved' },
    {
      type: 'approval.decided',
      ...base,
      callId: 'toolu_5',
      decision: 'rejected',
      note: 'use the grep tool',
      always: false,
      by: 'user',
    },
  ],
  'run.paused': [
    { type: 'run.paused', ...base, runId: 'r1', reason: 'approval', callIds: ['toolu_3', 'toolu_5'] },
  ],
  'run.resumed': [{ type: 'run.resumed', ...base, runId: 'r1' }],
  'tool.started': [{ type: 'tool.started', ...base, callId: 'toolu_1' }],
  'tool.output': [{ type: 'tool.output', ...base, callId: 'toolu_5', chunk: '\u001b[32mok\u001b[0m\r\n' }],
  'tool.finished': [
    {
      type: 'tool.finished',
      ...base,
      callId: 'toolu_1',
      isError: false,
      output: '     1|export const a = 1',
      metadata: { totalLines: 1, nested: { ok: true } },
      durationMs: 3.25,
      title: 'Read src/a.ts (1 line)',
    },
  ],
  'tool.skipped': [
    {
      type: 'tool.skipped',
      ...base,
      callId: 'toolu_7',
      causeCallId: 'toolu_5',
      output:
        'Skipped: not run because bash(npm test) failed earlier in this turn; issue it again if it is still needed.',
    },
  ],
  'tool.cancelled': [
    { type: 'tool.cancelled', ...base, callId: 'toolu_8', output: 'Cancelled: the user stopped the run.' },
    {
      type: 'tool.cancelled',
      ...base,
      callId: 'toolu_9',
      output: 'Cancelled after 1200 ms.',
      durationMs: 1200,
    },
  ],
  'file.preimage': [
    {
      type: 'file.preimage',
      ...base,
      callId: 'toolu_3',
      path: '/w/a.ts',
      relPath: 'a.ts',
      hash: 'ab'.repeat(32),
    },
    { type: 'file.preimage', ...base, callId: 'toolu_4', path: '/w/new.ts', relPath: 'new.ts', hash: null },
    {
      type: 'file.preimage',
      ...base,
      callId: 'toolu_5',
      path: '/w/run.sh',
      relPath: 'run.sh',
      hash: 'cd'.repeat(32),
      before: `${'cd'.repeat(32)}:644`,
      after: 'link:../bin/run',
    },
    {
      type: 'file.preimage',
      ...base,
      callId: 'toolu_5',
      path: '/w/d',
      relPath: 'd',
      hash: null,
      before: null,
      after: 'dir:755',
    },
  ],
  'command.landing': [
    { type: 'command.landing', ...base, callId: 'toolu_5', layer: '/s/capture/toolu_5', entries: 2 },
  ],
  'command.landed': [
    { type: 'command.landed', ...base, callId: 'toolu_5', outcome: 'done' },
    {
      type: 'command.landed',
      ...base,
      callId: 'toolu_5',
      outcome: 'rolled-back',
      recovered: true,
      error: 'disk full',
    },
  ],
  'command.held': [
    {
      type: 'command.held',
      ...base,
      callId: 'toolu_5',
      paths: [{ relPath: '.git/commondir', reason: 'git reads it as configuration' }],
      count: 1,
      landed: false,
    },
  ],
  'rewind.started': [
    {
      type: 'rewind.started',
      ...base,
      rewindId: 'rw1',
      mode: 'rewind',
      callId: 'toolu_3',
      callIds: ['toolu_3', 'toolu_4'],
      changes: [
        { path: '/w/a.ts', relPath: 'a.ts', from: 'cd'.repeat(32), to: 'ab'.repeat(32) },
        { path: '/w/new.ts', relPath: 'new.ts', from: 'ef'.repeat(32), to: null },
      ],
      skipped: [{ relPath: 'b.ts', reason: 'changed since by someone else' }],
      turn: 2,
    },
  ],
  'rewind.finished': [
    { type: 'rewind.finished', ...base, rewindId: 'rw1', outcome: 'done' },
    {
      type: 'rewind.finished',
      ...base,
      rewindId: 'rw1',
      outcome: 'rolled-back',
      recovered: true,
      error: 'x',
    },
  ],
  'file.snapshot': [
    {
      type: 'file.snapshot',
      ...base,
      path: '/home/ada/project/src/a.ts',
      mtimeMs: 1764531612123.456,
      hash: 'ab'.repeat(32),
    },
  ],
  'run.finished': [
    {
      type: 'run.finished',
      ...base,
      runId: 'r1',
      reason: 'end_turn',
      usage: { inputTokens: 5, outputTokens: 6 },
    },
    { type: 'run.finished', ...base, runId: 'r2', reason: 'max_turns' },
  ],
  'run.failed': [
    { type: 'run.failed', ...base, runId: 'r1', error: 'The API key was refused.', kind: 'auth' },
    { type: 'run.failed', ...base, runId: 'r2', error: 'Something broke.' },
  ],
  'run.stopped': [{ type: 'run.stopped', ...base, runId: 'r1' }],
  'context.compacted': [
    {
      type: 'context.compacted',
      ...base,
      runId: 'r1',
      turn: 7,
      mode: 'client',
      strategy: 'summary',
      reason: 'window_full',
      tokensBefore: 180_000,
      tokensAfter: 12_000,
      summary: 'The task so far.',
      keptFromTurn: 6,
      readFiles: ['src/a.ts'],
    },
    {
      type: 'context.compacted',
      ...base,
      turn: 3,
      mode: 'server',
      strategy: 'summary',
      reason: 'threshold',
      tokensBefore: 160_000,
    },
    {
      type: 'context.compacted',
      ...base,
      turn: 3,
      mode: 'client',
      strategy: 'cleared_tool_results',
      reason: 'threshold',
      tokensBefore: 160_000,
      clearedBeforeTurn: 2,
    },
  ],
  'instructions.loaded': [
    {
      type: 'instructions.loaded',
      ...base,
      scope: 'root',
      files: [
        { path: 'AGENTS.md', bytes: 120, tokens: 30 },
        { path: 'CLAUDE.md', bytes: 5_000_000, tokens: 8000, note: 'capped' },
      ],
      text: '<project-instructions>...</project-instructions>',
    },
    { type: 'instructions.loaded', ...base, scope: 'nested', folder: 'pkg/a', turn: 2, files: [], text: '' },
  ],
  'mcp.server': [
    { type: 'mcp.server', ...base, server: 'files', status: 'starting' },
    {
      type: 'mcp.server',
      ...base,
      server: 'files',
      status: 'ready',
      origin: 'workspace',
      sandboxed: true,
      message: 'ok',
      tools: [{ name: 'mcp__files__read', tool: 'read', readOnly: true, destructive: false, tokens: 40 }],
      problems: ['the tool "bad" is left out: its input schema is not valid JSON Schema'],
    },
  ],
  'rule.granted': [
    { type: 'rule.granted', ...base, ruleId: 'r1', rule: { kind: 'edits' }, callId: 'toolu_1' },
    { type: 'rule.granted', ...base, ruleId: 'r2', rule: { kind: 'command', words: ['npm', 'test'] } },
    { type: 'rule.granted', ...base, ruleId: 'r3', rule: { kind: 'tool', tool: 'mcp__files__write' } },
  ],
  'rule.revoked': [{ type: 'rule.revoked', ...base, ruleId: 'r1' }],
}

describe('SessionEvent', () => {
  it('round-trips every event type through JSON unchanged', () => {
    for (const [type, list] of Object.entries(samples)) {
      expect(list.length, type).toBeGreaterThan(0)
      for (const sample of list) {
        const parsed = SessionEvent.parse(sample)
        expect(parsed).toEqual(sample)
        expect(SessionEvent.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(sample)
      }
    }
  })

  it('covers every member of the union with a sample', () => {
    const members = SessionEvent.options.map((option) => option.shape.type.value).sort()
    expect(Object.keys(samples).sort()).toEqual(members)
  })

  it('rejects a missing field and names it', () => {
    const result = SessionEvent.safeParse({
      type: 'tool.finished',
      ...base,
      callId: 'c',
      output: 'x',
      durationMs: 1,
    })
    expect(result.success).toBe(false)
    expect(result.error?.issues.map((i) => i.path.join('.'))).toContain('isError')
  })

  it('rejects an unknown type, a fractional or negative seq, and a fractional at', () => {
    expect(SessionEvent.safeParse({ type: 'tool.exploded', ...base, callId: 'c' }).success).toBe(false)
    expect(SessionEvent.safeParse({ type: 'run.resumed', at: 1, seq: 1.5, runId: 'r' }).success).toBe(false)
    expect(SessionEvent.safeParse({ type: 'run.resumed', at: 1, seq: -1, runId: 'r' }).success).toBe(false)
    expect(SessionEvent.safeParse({ type: 'run.resumed', at: 1.5, seq: 1, runId: 'r' }).success).toBe(false)
  })

  it('rejects a relative workspace, a bad lane and an unknown approval decision', () => {
    const created = samples['session.created'][0] as Record<string, unknown>
    expect(SessionEvent.safeParse({ ...created, workspace: 'project' }).success).toBe(false)
    expect(SessionEvent.safeParse({ ...created, workspace: '../etc' }).success).toBe(false)
    const queued = samples['tool.queued'][0] as Record<string, unknown>
    expect(SessionEvent.safeParse({ ...queued, lane: { kind: 'parallel' } }).success).toBe(false)
    expect(SessionEvent.safeParse({ ...queued, lane: { kind: 'diagonal' } }).success).toBe(false)
    const decided = samples['approval.decided'][0] as Record<string, unknown>
    expect(SessionEvent.safeParse({ ...decided, decision: 'maybe' }).success).toBe(false)
  })

  it('drops unknown keys instead of refusing a line written by a newer version', () => {
    const parsed = SessionEvent.parse({ type: 'run.resumed', ...base, runId: 'r1', addedLater: 1 })
    expect(parsed).toEqual({ type: 'run.resumed', ...base, runId: 'r1' })
  })
})

describe('SessionId', () => {
  it('accepts the generated shape and refuses anything that could leave the folder', () => {
    expect(SessionId.safeParse('2026-11-30T19-40-12-123Z-a1b2c3').success).toBe(true)
    for (const bad of [
      '',
      '..',
      '../x',
      'a/b',
      'a\\b',
      '.hidden',
      'a.jsonl',
      'x'.repeat(129),
      'café',
      'a b',
      '-a',
    ]) {
      expect(SessionId.safeParse(bad).success, bad).toBe(false)
    }
  })
})

describe('capWritePreview', () => {
  const hunk = (n: number) => ({
    oldStart: n,
    oldLines: 1,
    newStart: n,
    newLines: 1,
    lines: ['-old', '+new'],
  })

  it('keeps a small preview as it is', () => {
    const preview: WritePreview = {
      kind: 'write',
      path: 'a',
      before: 'old',
      after: 'new',
      hunks: [hunk(1)],
      protected: false,
    }
    expect(capWritePreview(preview)).toEqual(preview)
  })

  it('drops an oversized side, keeps null for a new file, and marks the preview truncated', () => {
    const huge = 'x'.repeat(PREVIEW_MAX_CHARS + 1)
    const created = capWritePreview({
      kind: 'write',
      path: 'a',
      before: null,
      after: huge,
      hunks: [],
      protected: false,
    })
    expect(created.before).toBeNull()
    expect(created).not.toHaveProperty('after')
    expect(created.truncated).toBe(true)
    const edited = capWritePreview({
      kind: 'write',
      path: 'a',
      before: huge,
      after: 'y',
      hunks: [],
      protected: true,
    })
    expect(edited).not.toHaveProperty('before')
    expect(edited.after).toBe('y')
    expect(edited.protected).toBe(true)
  })

  it('keeps whole hunks up to the budget and stops at the first one that does not fit', () => {
    const line = `+${'y'.repeat(1000)}`
    const big = { oldStart: 1, oldLines: 0, newStart: 1, newLines: 300, lines: Array<string>(300).fill(line) }
    const capped = capWritePreview({
      kind: 'write',
      path: 'a',
      hunks: [hunk(1), big, hunk(900)],
      protected: false,
    })
    expect(capped.hunks).toEqual([hunk(1)])
    expect(capped.truncated).toBe(true)
    const size = JSON.stringify(capped).length
    expect(size).toBeLessThan(PREVIEW_MAX_CHARS)
  })

  it('says whether the change can still be reviewed hunk by hunk: only the full texts left out, or hunks too', () => {
    const huge = 'x'.repeat(PREVIEW_MAX_CHARS + 1)
    const sidesOnly = capWritePreview({
      kind: 'write',
      path: 'a',
      before: huge,
      after: huge + 'y',
      hunks: [hunk(1)],
      protected: false,
    })
    expect(sidesOnly).toMatchObject({ truncated: true, hunksCut: false })
    expect(canReviewByHunk(sidesOnly)).toBe(true)
    const line = `+${'y'.repeat(1000)}`
    const big = { oldStart: 1, oldLines: 0, newStart: 1, newLines: 300, lines: Array<string>(300).fill(line) }
    const cut = capWritePreview({ kind: 'write', path: 'a', hunks: [hunk(1), big], protected: false })
    expect(cut).toMatchObject({ truncated: true, hunksCut: true })
    expect(canReviewByHunk(cut)).toBe(false)
    // A log from before `hunksCut` existed: a truncated preview is not reviewed by hunk.
    expect(
      canReviewByHunk({ kind: 'write', path: 'a', hunks: [hunk(1)], truncated: true, protected: false }),
    ).toBe(false)
  })
})

describe('rejectsEveryHunk', () => {
  const preview: WritePreview = {
    kind: 'write',
    path: 'a',
    before: 'a\nb\n',
    after: 'A\nB\n',
    hunks: [0, 1].map((n) => ({
      oldStart: n + 1,
      oldLines: 1,
      newStart: n + 1,
      newLines: 1,
      lines: ['-x', '+y'],
    })),
    protected: false,
  }
  it('is true only when every hunk of the preview is left out', () => {
    expect(rejectsEveryHunk(preview, [{ index: 0, decision: 'rejected' }])).toBe(false)
    expect(
      rejectsEveryHunk(preview, [
        { index: 0, decision: 'rejected' },
        { index: 1, decision: 'edited', text: '' },
      ]),
    ).toBe(false)
    expect(
      rejectsEveryHunk(preview, [
        { index: 1, decision: 'rejected' },
        { index: 0, decision: 'rejected', note: 'no' },
      ]),
    ).toBe(true)
    expect(rejectsEveryHunk(preview, undefined)).toBe(false)
    expect(rejectsEveryHunk({ kind: 'bash', command: 'ls', cwd: '.' }, [])).toBe(false)
  })
})
