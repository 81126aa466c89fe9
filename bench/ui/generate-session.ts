import type { SessionEvent } from '../../src/shared/events'

/**
 * A realistic session of any size, for the UI benchmark and the UI's visual checks: turns of parallel reads
 * and searches, serial edits and commands (some failing, with their later siblings skipped), writes that went
 * through approval, streamed text, live command output. Deterministic for a given seed.
 */

interface Options {
  /** Stop once at least this many events were generated (the last run is closed properly). */
  events: number
  seed?: number
  workspace?: string
  /** Leave the last turn paused for approval of a write and a command (for the review screen). */
  endPaused?: boolean
  startAt?: number
}

const FILES = [
  'src/app.ts',
  'src/server/routes.ts',
  'src/server/auth.ts',
  'src/lib/cache.ts',
  'src/lib/format.ts',
  'src/components/Button.tsx',
  'README.md',
  'package.json',
  'tests/app.test.ts',
]

export function generateSession(opts: Options): SessionEvent[] {
  let seed = opts.seed ?? 42
  const random = (): number => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0
    let t = seed
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T
  const events: SessionEvent[] = []
  let at = opts.startAt ?? 1_700_000_000_000
  let seq = 0
  // Each event gets the next seq; `at` only moves forward.
  const push = (event: Record<string, unknown>, advance = 0): void => {
    at += Math.round(advance)
    events.push({ ...event, at, seq: seq++ } as SessionEvent)
  }
  const runId = 'run-1'
  push({
    type: 'session.created',
    sessionId: 'bench-session',
    workspace: opts.workspace ?? '/home/dev/project',
    title: 'Add caching to the API routes and fix the failing tests',
    settings: { model: 'claude-sonnet-4-5', scheduler: 'streaming', siblingSkip: true, demo: false },
  })
  push({ type: 'run.started', runId, task: 'Add caching to the API routes and fix the failing tests.' }, 5)
  let turn = 0
  let callNo = 0
  const callId = (): string => `toolu_${String(++callNo).padStart(6, '0')}`

  while (events.length < opts.events) {
    turn++
    push({ type: 'turn.started', runId, turn }, 30)
    const text = pick([
      'Let me look at how the routes are wired before changing anything.',
      'The cache layer needs an invalidation hook; I will read the auth middleware first.',
      'Running the tests to see what fails.',
      'Now I will apply the change and check it compiles.',
    ])
    for (const word of text.split(' '))
      push({ type: 'assistant.delta', turn, index: 0, text: word + ' ' }, 12)
    const content: unknown[] = [{ type: 'text', text }]
    // Parallel group: 2-5 reads/searches that overlap.
    const reads = 2 + Math.floor(random() * 4)
    const readIds: string[] = []
    for (let i = 0; i < reads; i++) {
      const id = callId()
      readIds.push(id)
      const isGrep = random() < 0.3
      const path = pick(FILES)
      const input = isGrep ? { pattern: 'cache', path: 'src' } : { path, offset: 1, limit: 200 }
      content.push({ type: 'tool_use', id, name: isGrep ? 'grep' : 'read_file', input })
      push(
        {
          type: 'tool.queued',
          callId: id,
          turn,
          index: i + 1,
          name: isGrep ? 'grep' : 'read_file',
          input,
          safe: true,
          lane: { kind: 'parallel', group: 0 },
          title: isGrep ? 'Search for cache in src' : `Read ${path}, lines 1-200`,
        },
        8,
      )
      push({ type: 'tool.started', callId: id }, 1)
    }
    for (const id of readIds) {
      push(
        {
          type: 'tool.finished',
          callId: id,
          isError: false,
          output: Array.from(
            { length: 12 },
            (_, l) => `${String(l + 1).padStart(6)}|export const line${l} = ${l}`,
          ).join('\n'),
          metadata: { totalLines: 120 },
          durationMs: 20 + random() * 60,
        },
        15 + random() * 40,
      )
    }
    // Serial: an edit (sometimes through approval), a command (sometimes failing), then a write.
    const serial: { id: string; name: string; input: Record<string, unknown>; title: string }[] = [
      {
        id: callId(),
        name: 'edit_file',
        input: { path: 'src/lib/cache.ts', old_string: 'ttl = 60', new_string: 'ttl = 300' },
        title: 'Edit src/lib/cache.ts',
      },
      {
        id: callId(),
        name: 'bash',
        input: { command: 'npm test', description: 'Run the test suite' },
        title: 'Run the test suite',
      },
      {
        id: callId(),
        name: 'write_file',
        input: { path: 'src/server/routes.ts', content: '...' },
        title: 'Write src/server/routes.ts',
      },
    ]
    serial.forEach((c, i) => {
      content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input })
      push(
        {
          type: 'tool.queued',
          callId: c.id,
          turn,
          index: reads + 1 + i,
          name: c.name,
          input: c.input,
          safe: false,
          lane: { kind: 'serial' },
          title: c.title,
        },
        6,
      )
    })
    push(
      {
        type: 'assistant.message',
        turn,
        message: { role: 'assistant', content },
        stopReason: 'tool_use',
        usage: { inputTokens: 1200, outputTokens: 180 },
      },
      2,
    )
    const last = events.length >= opts.events - 40
    if (opts.endPaused && last) {
      const edit = serial[0]!
      const bash = serial[1]!
      push({
        type: 'approval.requested',
        callId: edit.id,
        preview: {
          kind: 'write',
          path: 'src/lib/cache.ts',
          before: 'export const ttl = 60\n',
          after: 'export const ttl = 300\n',
          hunks: [
            {
              oldStart: 1,
              oldLines: 3,
              newStart: 1,
              newLines: 4,
              lines: [
                ' // cache settings',
                '-export const ttl = 60',
                '+export const ttl = 300',
                '+export const maxEntries = 1000',
                ' export const enabled = true',
              ],
            },
          ],
          protected: false,
        },
      })
      push({
        type: 'approval.requested',
        callId: bash.id,
        preview: {
          kind: 'bash',
          command: 'npm test',
          description: 'Run the test suite',
          cwd: opts.workspace ?? '/home/dev/project',
        },
      })
      push({ type: 'run.paused', runId, reason: 'approval', callIds: [edit.id, bash.id] }, 1)
      return events
    }
    const fails = random() < 0.35
    serial.forEach((c, i) => {
      if (fails && i === 2) {
        push(
          {
            type: 'tool.skipped',
            callId: c.id,
            causeCallId: serial[1]!.id,
            output:
              'Skipped: not run because bash(npm test) failed earlier in this turn; issue it again if it is still needed.',
          },
          1,
        )
        return
      }
      if (c.name !== 'bash' && random() < 0.3) {
        push(
          {
            type: 'approval.requested',
            callId: c.id,
            preview: {
              kind: 'write',
              path: String(c.input.path),
              hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ['-a', '+b'] }],
              protected: false,
            },
          },
          2,
        )
        push({ type: 'run.paused', runId, reason: 'approval', callIds: [c.id] })
        push(
          { type: 'approval.decided', callId: c.id, decision: 'approved', by: 'user' },
          800 + random() * 2000,
        )
        push({ type: 'run.resumed', runId }, 1)
      }
      push({ type: 'tool.started', callId: c.id }, 3)
      const duration = c.name === 'bash' ? 400 + random() * 1500 : 5 + random() * 20
      if (c.name === 'bash') {
        const chunks = 2 + Math.floor(random() * 4)
        for (let k = 0; k < chunks; k++) {
          push(
            { type: 'tool.output', callId: c.id, chunk: `\u001b[32m✓\u001b[0m test ${k + 1} passed\n` },
            duration / (chunks + 1),
          )
        }
      }
      const failed = fails && c.name === 'bash'
      push(
        {
          type: 'tool.finished',
          callId: c.id,
          isError: failed,
          output: failed ? 'FAIL tests/app.test.ts\n  expected 300, got 60\n[Exit code: 1]' : 'ok',
          durationMs: duration,
          metadata: c.name === 'bash' ? { exitCode: failed ? 1 : 0 } : {},
        },
        c.name === 'bash' ? duration / (serial.length + 1) : duration,
      )
    })
  }
  push(
    { type: 'run.finished', runId, reason: 'end_turn', usage: { inputTokens: 120000, outputTokens: 9000 } },
    40,
  )
  return events
}
