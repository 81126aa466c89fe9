import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A finished session written straight into `lanes web`'s sessions folder, for the specs that need exact times
 * (80 s of connection retries, a long pause) a live run would take minutes to make: two runs of one session.
 *
 * Run 1 ("Fix the tests") fails to reach the API twice (turns 1 and 2, 80 s of retries in all), is continued,
 * then turn 3 reads two files side by side and runs two commands one after the other: `npm test && npm run
 * lint`, which Lanes refused, then `npm test`, which ran; turn 4 answers. Run 2 (a follow-up) has turn 5, one
 * read, and turn 6, the answer. The visible turns are 3 and 5: "Turn 1" and "Turn 2".
 */
export const REFUSED_COMMAND = 'npm test && npm run lint'
export const REFUSAL_FOR_MODEL =
  'command lists (`&&`, `||`) are not allowed; run one command per call and check its result'

export async function writeTwoRunSession(
  sessionsDir: string,
  workspace: string,
): Promise<{ sessionId: string; retrySpanMs: number }> {
  const sessionId = 'replay-two-runs'
  const t0 = Date.UTC(2026, 10, 30, 9, 0, 0)
  let seq = 0
  const events: Record<string, unknown>[] = []
  const add = (at: number, e: Record<string, unknown>): void => {
    events.push({ ...e, at: t0 + at, seq: ++seq })
  }
  const hint =
    '\n\n[HINT: The tool returned an error. Analyze the error message and try a different approach.]'
  add(0, {
    type: 'session.created',
    sessionId,
    workspace,
    title: 'Fix the tests',
    settings: { model: 'claude-sonnet-5-5', scheduler: 'streaming', siblingSkip: true, demo: false },
  })
  add(10, { type: 'run.started', runId: 'r1', task: 'Fix the tests' })
  add(20, { type: 'turn.started', runId: 'r1', turn: 1 })
  const unreachable = 'Could not reach the model API at http://127.0.0.1:9 (connection refused).'
  add(40, {
    type: 'model.retrying',
    runId: 'r1',
    turn: 1,
    attempt: 2,
    of: 3,
    delayMs: 20_000,
    reason: 'unreachable',
    message: unreachable,
  })
  add(20_060, {
    type: 'model.retrying',
    runId: 'r1',
    turn: 1,
    attempt: 3,
    of: 3,
    delayMs: 40_000,
    reason: 'unreachable',
    message: unreachable,
  })
  add(60_080, { type: 'run.failed', runId: 'r1', error: unreachable, kind: 'network' })
  add(70_000, { type: 'run.started', runId: 'r2', task: 'Fix the tests' })
  add(70_010, { type: 'turn.started', runId: 'r2', turn: 2 })
  add(70_020, {
    type: 'model.retrying',
    runId: 'r2',
    turn: 2,
    attempt: 2,
    of: 3,
    delayMs: 10_000,
    reason: 'unreachable',
    message: unreachable,
  })
  add(80_030, { type: 'turn.started', runId: 'r2', turn: 3 })
  add(80_100, { type: 'assistant.delta', turn: 3, index: 0, text: 'Reading the **two** modules first.' })
  const read = (callId: string, index: number, path: string, start: number, end: number): void => {
    add(start, {
      type: 'tool.queued',
      callId,
      turn: 3,
      index,
      name: 'read_file',
      input: { path },
      safe: true,
      lane: { kind: 'parallel', group: 0 },
      title: `Read ${path}`,
    })
    add(start + 1, { type: 'tool.started', callId })
    add(end, {
      type: 'tool.finished',
      callId,
      isError: false,
      output: '     1|x',
      durationMs: end - start - 1,
      title: `Read ${path}`,
    })
  }
  read('toolu_read_a', 1, 'src/a.ts', 80_200, 80_900)
  read('toolu_read_b', 2, 'src/b.ts', 80_250, 81_000)
  add(81_100, {
    type: 'tool.queued',
    callId: 'toolu_list',
    turn: 3,
    index: 3,
    name: 'bash',
    input: { command: REFUSED_COMMAND },
    safe: false,
    lane: { kind: 'serial' },
    title: REFUSED_COMMAND,
  })
  add(81_110, {
    type: 'tool.finished',
    callId: 'toolu_list',
    isError: true,
    output: REFUSAL_FOR_MODEL + hint,
    durationMs: 0,
  })
  add(81_200, {
    type: 'tool.queued',
    callId: 'toolu_test',
    turn: 3,
    index: 4,
    name: 'bash',
    input: { command: 'npm test' },
    safe: false,
    lane: { kind: 'serial' },
    title: 'npm test',
  })
  add(81_210, { type: 'tool.started', callId: 'toolu_test' })
  add(84_210, {
    type: 'tool.finished',
    callId: 'toolu_test',
    isError: false,
    output: 'all 12 tests pass\n\n[Execution time: 3000 ms]',
    durationMs: 3000,
  })
  add(84_300, { type: 'turn.started', runId: 'r2', turn: 4 })
  add(84_400, { type: 'assistant.delta', turn: 4, index: 0, text: 'The tests pass now.' })
  add(84_500, { type: 'run.finished', runId: 'r2', reason: 'end_turn' })
  add(90_000, { type: 'run.started', runId: 'r3', task: 'Now add a changelog entry for the fix' })
  add(90_010, { type: 'turn.started', runId: 'r3', turn: 5 })
  read('toolu_read_c', 0, 'CHANGELOG.md', 90_100, 90_300)
  events[events.length - 3]!.turn = 5
  add(90_400, { type: 'turn.started', runId: 'r3', turn: 6 })
  add(90_500, { type: 'assistant.delta', turn: 6, index: 0, text: 'The changelog already has it.' })
  add(90_600, { type: 'run.finished', runId: 'r3', reason: 'end_turn' })
  await mkdir(sessionsDir, { recursive: true })
  await writeFile(
    join(sessionsDir, `${sessionId}.jsonl`),
    events.map((e) => JSON.stringify(e)).join('\n') + '\n',
  )
  return { sessionId, retrySpanMs: 80_000 }
}
