import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../../../shared/events'
import { reduceEvents } from '../../../../shared/reducer'
import { queuedCall, sessionStart } from '../../../../shared/reducer-test-events'
import { transcriptRows } from './rows'

const events = (list: Record<string, unknown>[]): SessionEvent[] =>
  list.map((e, seq) => ({ ...e, seq, at: 100 + seq }) as SessionEvent)

const start = sessionStart('go', 'claude-sonnet-5-5')

describe('transcript rows for thinking and retries', () => {
  it('thinking before the answer is a Thinking section; thinking after a call is the agent’s narration', () => {
    const state = reduceEvents(
      events([
        ...start,
        {
          type: 'assistant.thinking',
          turn: 1,
          index: 0,
          block: { type: 'thinking', thinking: '', signature: 's1' },
        },
        queuedCall({ callId: 'c1', index: 1, name: 'read_file', input: { path: 'a' } }),
        {
          type: 'assistant.thinking',
          turn: 1,
          index: 2,
          block: { type: 'thinking', thinking: 'Now the tests.', signature: 's2' },
        },
      ]),
    )
    const rows = transcriptRows(state)
    expect(rows.map((r) => (r.kind === 'thinking' ? `thinking:${r.narration}` : r.kind))).toEqual([
      'task',
      'turn',
      'thinking:false',
      'call',
      'thinking:true',
      'working',
    ])
  })

  it('shows a retry on the working row until the turn’s first content arrives', () => {
    const retrying = [
      ...start,
      {
        type: 'model.retrying',
        runId: 'r1',
        turn: 1,
        attempt: 2,
        of: 6,
        delayMs: 4000,
        reason: 'overloaded',
        message: 'Overloaded',
      },
    ]
    const during = transcriptRows(reduceEvents(events(retrying))).at(-1)
    expect(during).toMatchObject({
      kind: 'working',
      retry: { attempt: 2, of: 6, delayMs: 4000, reason: 'overloaded' },
    })
    const after = transcriptRows(
      reduceEvents(events([...retrying, { type: 'assistant.delta', turn: 1, index: 0, text: 'Hi' }])),
    ).at(-1)
    expect(after).toMatchObject({ kind: 'working' })
    expect(after).not.toHaveProperty('retry')
  })
})
