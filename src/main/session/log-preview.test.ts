import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { reduceEvents } from '../../shared/reducer'
import { readSession, readSessionPreview } from './log'
import { useTempDir } from '../test-fixtures/temp-dir'

const dir = useTempDir('lanes-preview-')

/**
 * Three runs of `turnsPerRun` turns, each turn a paused-and-resumed approval of one write and a read beside it, a
 * compaction in the middle of the second run: every kind of event a preview keeps or leaves out.
 */
function day(turnsPerRun: number): SessionEvent[] {
  const events: Record<string, unknown>[] = [
    {
      type: 'session.created',
      sessionId: 's1',
      workspace: '/w',
      settings: { model: 'm', scheduler: 'streaming', siblingSkip: true, demo: false },
    },
  ]
  let turn = 0
  for (const runId of ['r1', 'r2', 'r3']) {
    events.push({ type: 'run.started', runId, task: `task ${runId}` })
    for (let t = 0; t < turnsPerRun; t++) {
      turn++
      events.push({ type: 'turn.started', runId, turn })
      events.push({ type: 'assistant.delta', turn, index: 0, text: `turn ${turn}` })
      const read = `c${turn}-r`
      const write = `c${turn}-w`
      events.push({
        type: 'tool.queued',
        callId: read,
        turn,
        index: 1,
        name: 'read_file',
        input: { path: 'a' },
        safe: true,
        lane: { kind: 'parallel', group: 0 },
      })
      events.push({
        type: 'tool.queued',
        callId: write,
        turn,
        index: 2,
        name: 'write_file',
        input: { path: 'a', content: 'x' },
        safe: false,
        lane: { kind: 'serial' },
      })
      events.push({ type: 'tool.started', callId: read })
      events.push({ type: 'tool.finished', callId: read, isError: false, output: 'ok', durationMs: 5 })
      events.push({ type: 'run.paused', runId, reason: 'approval', callIds: [write] })
      events.push({ type: 'run.resumed', runId })
      events.push({ type: 'tool.started', callId: write })
      events.push({ type: 'tool.finished', callId: write, isError: false, output: 'written', durationMs: 9 })
      if (runId === 'r2' && t === Math.floor(turnsPerRun / 2))
        events.push({
          type: 'context.compacted',
          runId,
          turn,
          mode: 'client',
          strategy: 'summary',
          reason: 'threshold',
          tokensBefore: 150_000,
          tokensAfter: 9_000,
          summary: 'so far',
        })
    }
    if (runId !== 'r3') events.push({ type: 'run.finished', runId, reason: 'end_turn' })
  }
  return events.map((e, seq) => ({ ...e, seq, at: 1000 + seq * 10 }) as SessionEvent)
}

async function logOf(events: SessionEvent[], extra = ''): Promise<string> {
  const file = join(dir(), 's1.jsonl')
  await writeFile(file, events.map((e) => JSON.stringify(e)).join('\n') + '\n' + extra)
  return file
}

describe('readSessionPreview', () => {
  it('keeps the last turns whole and, from before them, the session and the start and latest state of each run', async () => {
    const all = day(40)
    const file = await logOf(all)
    const preview = await readSessionPreview(file, 100)
    expect(preview.whole).toBe(false)
    expect(preview.warnings).toEqual([])
    // The tail starts at a turn's start, at least 100 events from the end.
    const cut = preview.events.findIndex((e) => e.type === 'turn.started')
    const tail = preview.events.slice(cut)
    expect(tail.length).toBeGreaterThanOrEqual(100)
    expect(tail).toEqual(all.slice(all.length - tail.length))
    // Before it: the session, each run's start and its latest run event, the compaction; in log order.
    const before = preview.events.slice(0, cut)
    expect(before.map((e) => `${e.type} ${'runId' in e ? e.runId : ''}`.trim())).toEqual([
      'session.created',
      'run.started r1',
      'run.finished r1',
      'run.started r2',
      'context.compacted r2',
      'run.finished r2',
      'run.started r3',
      'run.resumed r3',
    ])
    expect(before.map((e) => e.seq)).toEqual([...before.map((e) => e.seq)].sort((a, b) => a - b))
  })

  it('shows the last turns, the runs and the compactions as the whole log does', async () => {
    const all = day(40)
    const preview = (await readSessionPreview(await logOf(all), 100)).events
    const full = reduceEvents(all)
    const shown = reduceEvents(preview)
    const lastTurns = shown.turns.length
    expect(lastTurns).toBeGreaterThan(3)
    expect(shown.turns).toEqual(full.turns.slice(-lastTurns))
    expect(shown.runs.map((r) => [r.runId, r.status, r.task])).toEqual(
      full.runs.map((r) => [r.runId, r.status, r.task]),
    )
    expect(shown.status).toBe(full.status)
    expect(shown.compactions).toEqual(full.compactions)
    expect(shown.session).toEqual(full.session)
  })

  it('is the whole log when the log is no longer than the tail, damaged lines warned about as a whole read does', async () => {
    const all = day(2)
    const file = await logOf(all, '{"type":"tool.output","callI')
    const preview = await readSessionPreview(file, 1000)
    const whole = await readSession(file)
    expect(preview.whole).toBe(true)
    expect(preview.events).toEqual(whole.events)
    expect(preview.warnings).toHaveLength(1)
    expect(preview.warnings[0]).toMatch(/incomplete last line/)
  })

  it('skips a damaged line before the last turns with a warning, keeping the rest', async () => {
    const all = day(40)
    const lines = all.map((e) => JSON.stringify(e))
    // A torn run start early in the log (a paused or resumed of a run whose latest event is known is not even read).
    lines.splice(
      3,
      0,
      '{"type":"run.started","runId":"r0","task":',
      '{"type":"run.paused","runId":"r1","reason":',
    )
    const file = join(dir(), 's1.jsonl')
    await writeFile(file, lines.join('\n') + '\n')
    const preview = await readSessionPreview(file, 100)
    expect(preview.whole).toBe(false)
    expect(preview.warnings).toEqual([expect.stringMatching(/^a line before the last turns: not valid JSON/)])
    expect(preview.events[0]?.type).toBe('session.created')
  })
})
