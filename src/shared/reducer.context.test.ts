import { describe, expect, it } from 'vitest'
import type { SessionEvent } from './events'
import { reduceEvent, reduceEvents, stateAt } from './reducer'

// Issue 21: the context a session uses, its compactions and its project-instruction files, as the UI shows them.

const at = 1_764_531_612_000
let seq = 0
const ev = (e: Record<string, unknown>): SessionEvent => ({ at: at + seq, seq: seq++, ...e }) as SessionEvent

describe('reducer: context and instructions', () => {
  it('tracks the context the API reported, a compaction’s estimate, then the next answer’s figure', () => {
    seq = 0
    const events = [
      ev({ type: 'run.started', runId: 'r1', task: 't' }),
      ev({ type: 'turn.started', runId: 'r1', turn: 1 }),
      ev({
        type: 'assistant.message',
        turn: 1,
        message: { role: 'assistant', content: [{ type: 'text', text: 'hi' }] },
        stopReason: 'end_turn',
        usage: { inputTokens: 1000, outputTokens: 50, cacheReadTokens: 160_000, cacheCreationTokens: 2000 },
      }),
      ev({
        type: 'context.compacted',
        runId: 'r1',
        turn: 1,
        mode: 'client',
        strategy: 'summary',
        reason: 'threshold',
        tokensBefore: 163_050,
        tokensAfter: 9000,
        summary: 'S',
      }),
      ev({ type: 'turn.started', runId: 'r1', turn: 2 }),
      ev({
        type: 'assistant.message',
        turn: 2,
        message: { role: 'assistant', content: [{ type: 'text', text: 'on' }] },
        stopReason: 'end_turn',
        usage: { inputTokens: 9500, outputTokens: 10, contextTokens: 9400 },
      }),
    ]
    const states = events.reduce((list, e) => [...list, reduceEvent(list.at(-1)!, e)], [reduceEvents([])])
    expect(states[3]!.contextTokens).toBe(163_050)
    expect(states[4]!.contextTokens).toBe(9000)
    expect(states[4]!.compactions).toHaveLength(1)
    expect(states[4]!.compactions[0]).toMatchObject({ mode: 'client', summary: 'S', at: events[3]!.at })
    // The API's per-iteration figure wins over the sum of the top-level fields.
    expect(states.at(-1)!.contextTokens).toBe(9400)
    // Replay shows the compaction from its moment on, with the same reducer.
    expect(stateAt(events, events[3]!.at - 1).compactions).toHaveLength(0)
    expect(stateAt(events, events[3]!.at).compactions).toHaveLength(1)
  })

  it('a root reading replaces the root’s files; nested folders add theirs once', () => {
    seq = 0
    const state = reduceEvents([
      ev({
        type: 'instructions.loaded',
        scope: 'root',
        files: [{ path: 'AGENTS.md', bytes: 10, tokens: 3 }],
        text: 'x',
      }),
      ev({
        type: 'instructions.loaded',
        scope: 'nested',
        folder: 'pkg',
        turn: 1,
        files: [{ path: 'pkg/AGENTS.md', bytes: 10, tokens: 3 }],
        text: 'y',
      }),
      ev({
        type: 'instructions.loaded',
        scope: 'root',
        files: [{ path: 'CLAUDE.md', bytes: 5_000_000, tokens: 8192, note: 'capped' }],
        text: 'z',
      }),
    ])
    expect(state.instructions.map((f) => `${f.scope}:${f.path}`)).toEqual([
      'nested:pkg/AGENTS.md',
      'root:CLAUDE.md',
    ])
    expect(state.counts.anomalies).toBe(0)
  })
})
