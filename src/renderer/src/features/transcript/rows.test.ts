import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../../../shared/events'
import { reduceEvents } from '../../../../shared/reducer'
import { queuedCall, sessionStart } from '../../../../shared/reducer-test-events'
import { transcriptRows } from './rows'

const base = [
  ...sessionStart('first task'),
  { type: 'assistant.delta', turn: 1, index: 0, text: 'Looking.' },
  queuedCall({ callId: 'c1', index: 1, name: 'read_file', input: { path: 'a' } }),
  { type: 'assistant.delta', turn: 1, index: 2, text: '   ' },
]
const events = (list: Record<string, unknown>[]): SessionEvent[] =>
  list.map((e, seq) => ({ ...e, seq, at: 100 + seq }) as SessionEvent)

describe('transcriptRows', () => {
  it('lists the task, then text and calls in block order, and a working row while running', () => {
    const rows = transcriptRows(reduceEvents(events(base)))
    expect(rows.map((r) => r.kind)).toEqual(['task', 'turn', 'text', 'call', 'working'])
  })

  it('ends each finished run with how it ended and starts a follow-up with its task', () => {
    const rows = transcriptRows(
      reduceEvents(
        events([
          ...base,
          { type: 'run.finished', runId: 'r1', reason: 'end_turn' },
          { type: 'run.started', runId: 'r2', task: 'second task' },
          { type: 'run.stopped', runId: 'r2' },
        ]),
      ),
    )
    expect(rows.map((r) => r.kind)).toEqual(['task', 'turn', 'text', 'call', 'run-end', 'task', 'run-end'])
    expect(rows[5]).toMatchObject({ kind: 'task', number: 2 })
  })

  it('reuses the rows of turns that did not change', () => {
    const state = reduceEvents(events(base))
    const a = transcriptRows(state)
    const b = transcriptRows(state)
    expect(a[2]).toBe(b[2])
  })

  it('says what a live run waits on: the model since the last event, or a running call since it started', () => {
    const waiting = transcriptRows(reduceEvents(events(base))).at(-1)
    // base's last event is #5, at 105.
    expect(waiting).toMatchObject({ kind: 'working', wait: { label: 'Waiting for Claude', since: 105 } })

    const running = transcriptRows(
      reduceEvents(
        events([
          ...base,
          { type: 'tool.started', callId: 'c1' },
          { type: 'tool.output', callId: 'c1', chunk: 'x' },
        ]),
      ),
    ).at(-1)
    // Output keeps coming, but the call has been running since #6.
    expect(running).toMatchObject({ kind: 'working', wait: { label: 'Running read_file a', since: 106 } })

    const paused = transcriptRows(
      reduceEvents(
        events([
          ...base,
          { type: 'approval.requested', callId: 'c1', preview: { kind: 'other', summary: 'read a' } },
          { type: 'run.paused', runId: 'r1', reason: 'approval', callIds: ['c1'] },
        ]),
      ),
    ).at(-1)
    expect(paused).toMatchObject({ kind: 'working', paused: true })
    expect(paused).not.toHaveProperty('wait')
  })
})
