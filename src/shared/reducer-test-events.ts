import { SessionEvent, type SessionEventDraft, type WritePreview } from './events'
import { getCall, type SessionState, type TurnState } from './reducer'

// What the reducer's tests share (reducer.test.ts, reducer.cost.test.ts, reducer.call-index.test.ts): event lists built like the log's.

/** Builds a valid event list the way the log writer would: seq from 0, time advancing 10 ms per event. */
export function recorder(startAt = 1_000_000) {
  const events: SessionEvent[] = []
  let at = startAt
  const add = (draft: SessionEventDraft): SessionEvent => {
    at = draft.at ?? at + 10
    const event = SessionEvent.parse({ ...draft, at, seq: events.length })
    events.push(event)
    return event
  }
  return { events, add }
}

export const settings = { model: 'm', scheduler: 'batch', siblingSkip: true, demo: false } as const
export const writePreview: WritePreview = {
  kind: 'write',
  path: 'a.ts',
  before: 'a',
  after: 'b',
  hunks: [],
  protected: false,
}

/** A session with one run and one turn that queued `calls` (callId, name, safe). */
export function oneTurn(calls: [string, string, boolean][]) {
  const r = recorder()
  r.add({ type: 'session.created', sessionId: 's1', workspace: '/w', settings })
  r.add({ type: 'run.started', runId: 'r1', task: 'do it' })
  r.add({ type: 'turn.started', runId: 'r1', turn: 1 })
  calls.forEach(([callId, name, safe], i) =>
    r.add({
      type: 'tool.queued',
      callId,
      turn: 1,
      index: i + 1,
      name,
      input: { path: `${callId}.ts` },
      safe,
      lane: safe ? { kind: 'parallel', group: 0 } : { kind: 'serial' },
    }),
  )
  return r
}

export function turn(state: SessionState, n: number): TurnState {
  const found = state.turns.find((t) => t.turn === n)
  if (!found) throw new Error(`no turn ${n}`)
  return found
}

export function status(state: SessionState, callId: string): string | undefined {
  return getCall(state, callId)?.status
}

/** The first events of a session: created, its first run started with `task`, and its first turn. */
export function sessionStart(task: string, model = 'm') {
  return [
    {
      type: 'session.created',
      sessionId: 's',
      workspace: '/w',
      settings: { model, scheduler: 'streaming', siblingSkip: true, demo: false },
    },
    { type: 'run.started', runId: 'r1', task },
    { type: 'turn.started', runId: 'r1', turn: 1 },
  ] satisfies SessionEventDraft[]
}

/** A `tool.queued` draft for a safe call in the first parallel group of turn 1, unless `call` says otherwise. */
export function queuedCall(call: {
  callId: string
  name: string
  input: unknown
  index: number
  turn?: number
}): SessionEventDraft<'tool.queued'> {
  return { type: 'tool.queued', turn: 1, safe: true, lane: { kind: 'parallel', group: 0 }, ...call }
}
