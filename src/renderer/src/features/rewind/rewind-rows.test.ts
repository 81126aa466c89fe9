import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../../../shared/events'
import { reduceEvents } from '../../../../shared/reducer'
import { queuedCall, sessionStart } from '../../../../shared/reducer-test-events'
import { transcriptRows, type TranscriptRow } from '../transcript/rows'
import { buildTimeAxis, LABEL_WIDTH, PAD_RIGHT, displayTime, fitPxPerMs, type Scale } from '../timeline/scale'
import { rewindMarkX } from '../timeline/RewindMarks'
import {
  changeText,
  keptReason,
  rewindHeadline,
  rewindMarkLabel,
  rewoundToTurn,
  undoneCalls,
} from './rewind-summary'

// Undos and rewinds after they happened (issue 14): where their rows go in the transcript, what they say, the
// turns they took back, and where their marks stand on the timeline.

const hash = (c: string) => c.repeat(64)
const events = (list: Record<string, unknown>[]): SessionEvent[] =>
  list.map((e, seq) => ({ ...e, seq, at: 1000 + seq * 100 }) as SessionEvent)

/** Run 1: turn 1 reads a, turn 2 writes a and b, turn 3 only talks. The run finishes. */
const firstRun = [
  ...sessionStart('first task'),
  queuedCall({ callId: 'c1', index: 0, name: 'read_file', input: { path: 'a' } }),
  { type: 'tool.started', callId: 'c1' },
  { type: 'tool.finished', callId: 'c1', isError: false, output: 'a', durationMs: 5 },
  { type: 'turn.started', runId: 'r1', turn: 2 },
  { type: 'assistant.delta', turn: 2, index: 0, text: 'Writing.' },
  ...(['c2', 'c3'] as const).flatMap((callId, i) => [
    {
      ...queuedCall({ callId, index: i + 1, turn: 2, name: 'write_file', input: { path: `${callId}.txt` } }),
      safe: false,
      lane: { kind: 'serial' },
    },
    { type: 'file.preimage', callId, path: `/w/${callId}.txt`, relPath: `${callId}.txt`, hash: null },
    { type: 'tool.started', callId },
    { type: 'tool.finished', callId, isError: false, output: 'ok', durationMs: 5 },
  ]),
  { type: 'turn.started', runId: 'r1', turn: 3 },
  { type: 'assistant.delta', turn: 3, index: 0, text: 'Done.' },
  { type: 'run.finished', runId: 'r1', reason: 'end_turn' },
]

const rewindStarted = (over: Record<string, unknown> = {}) => ({
  type: 'rewind.started',
  rewindId: 'w1',
  mode: 'rewind',
  callId: 'c2',
  callIds: ['c2', 'c3'],
  changes: [
    { path: '/w/c2.txt', relPath: 'c2.txt', from: hash('a'), to: null },
    { path: '/w/c3.txt', relPath: 'c3.txt', from: hash('b'), to: hash('c') },
  ],
  skipped: [{ relPath: 'd.txt', reason: 'changed since by someone else' }],
  turn: 2,
  ...over,
})
const rewindFinished = { type: 'rewind.finished', rewindId: 'w1', outcome: 'done', conversationFromTurn: 2 }

const kinds = (rows: TranscriptRow[]) =>
  rows.map((r) => (r.kind === 'turn' ? `turn${r.turn}${r.rewoundBy ? '-rewound' : ''}` : r.kind))

describe('undos and rewinds in the transcript', () => {
  it('places a rewind where it happened: after the run it followed, before the next task', () => {
    const rows = transcriptRows(
      reduceEvents(
        events([
          ...firstRun,
          rewindStarted({ turn: undefined }),
          { type: 'rewind.finished', rewindId: 'w1', outcome: 'done' },
          { type: 'run.started', runId: 'r2', task: 'second task' },
          { type: 'run.stopped', runId: 'r2' },
        ]),
      ),
    )
    // Turn 3 has no call: nothing to rewind to, so no header of its own. Files only: no turn is taken back.
    expect(kinds(rows)).toEqual([
      'task',
      'turn1',
      'call',
      'turn2',
      'text',
      'call',
      'call',
      'text',
      'run-end',
      'rewind',
      'task',
      'run-end',
    ])
    expect(rows[1]).toMatchObject({ kind: 'turn', firstCallId: 'c1' })
    expect(rows[3]).toMatchObject({ kind: 'turn', firstCallId: 'c2' })
    expect(rows[9]).toMatchObject({ kind: 'rewind', key: 'rewind-w1', rewind: { status: 'done' } })
  })

  it('marks every row of the turns whose conversation a rewind took back, and their headers', () => {
    const rows = transcriptRows(reduceEvents(events([...firstRun, rewindStarted(), rewindFinished])))
    // The run goes on from turn 2 when continued: it has not ended any more.
    expect(kinds(rows)).toEqual([
      'task',
      'turn1',
      'call',
      'turn2-rewound',
      'text',
      'call',
      'call',
      'turn3-rewound',
      'text',
      'rewind',
    ])
    expect(rows.slice(3, 9).every((r) => 'rewoundBy' in r && r.rewoundBy === 'w1')).toBe(true)
    expect(rows.slice(0, 3).some((r) => 'rewoundBy' in r && r.rewoundBy !== undefined)).toBe(false)
  })

  it('shows a replay the rewind from the moment it happened: absent before, applying, then done', () => {
    const all = events([...firstRun, rewindStarted(), rewindFinished])
    const at = (n: number) => transcriptRows(reduceEvents(all.slice(0, n)))
    const before = at(firstRun.length)
    expect(before.some((r) => r.kind === 'rewind')).toBe(false)
    expect(before.some((r) => r.kind === 'call' && r.call.rewoundBy !== undefined)).toBe(false)
    expect(at(firstRun.length + 1).find((r) => r.kind === 'rewind')).toMatchObject({
      rewind: { status: 'applying' },
    })
    const after = at(all.length)
    expect(after.find((r) => r.kind === 'rewind')).toMatchObject({ rewind: { status: 'done' } })
    expect(after.filter((r) => r.kind === 'call' && r.call.rewoundBy === 'w1').map((r) => r.key)).toEqual([
      'c2',
      'c3',
    ])
  })

  it('keeps a rewind row the same object while the rewind does not change', () => {
    const state = reduceEvents(events([...firstRun, rewindStarted(), rewindFinished]))
    const a = transcriptRows(state).find((r) => r.kind === 'rewind')
    const b = transcriptRows(reduceEvents(events([...firstRun, rewindStarted(), rewindFinished]))).find(
      (r) => r.kind === 'rewind',
    )
    expect(transcriptRows(state).find((r) => r.kind === 'rewind')).toBe(a)
    expect(b).not.toBe(a)
  })

  it('waits to continue after a rewind of the conversation, for no review: no working row', () => {
    const state = reduceEvents(events([...firstRun, rewindStarted(), rewindFinished]))
    expect(state.status).toBe('paused')
    expect(rewoundToTurn(state)).toBe(2)
    expect(transcriptRows(state).some((r) => r.kind === 'working')).toBe(false)
    // Continued: the session works again and the rewind no longer describes what it waits for.
    const resumed = reduceEvents(
      events([
        ...firstRun,
        rewindStarted(),
        rewindFinished,
        { type: 'run.resumed', runId: 'r1' },
        { type: 'turn.started', runId: 'r1', turn: 4 },
      ]),
    )
    expect(rewoundToTurn(resumed)).toBeUndefined()
  })
})

describe('the words for a rewind', () => {
  const stateWith = (extra: Record<string, unknown>[]) => reduceEvents(events([...firstRun, ...extra]))

  it('says what it was, with the conversation or not, and how it ended', () => {
    const done = stateWith([rewindStarted(), rewindFinished])
    expect(rewindHeadline(done.rewinds[0]!, done)).toBe(
      'Rewound to before turn 2: files and conversation (Claude no longer sees turn 2 or later)',
    )
    expect(rewindMarkLabel(done.rewinds[0]!)).toBe('Rewound')
    const filesOnly = stateWith([rewindStarted({ turn: undefined })])
    expect(rewindHeadline(filesOnly.rewinds[0]!, filesOnly)).toBe(
      'Rewinding to before turn 2: files only (Claude still sees every turn)',
    )
    // A rewind to a call after its turn's first (lanes rewind --to) names the call.
    const midTurn = stateWith([rewindStarted({ callId: 'c3', callIds: ['c3'] }), rewindFinished])
    expect(rewindHeadline(midTurn.rewinds[0]!, midTurn)).toBe(
      'Rewound to before write_file c3.txt (turn 2): files and conversation (Claude no longer sees turn 2 or later)',
    )
    const undo = stateWith([
      rewindStarted({ mode: 'undo', callId: 'c3', callIds: ['c3'], turn: undefined }),
      { type: 'rewind.finished', rewindId: 'w1', outcome: 'rolled-back', error: 'c3.txt is read-only' },
    ])
    expect(rewindHeadline(undo.rewinds[0]!, undo)).toBe('Could not undo write_file c3.txt')
    expect(rewindMarkLabel(undo.rewinds[0]!)).toBe('Undo failed')
    expect(undo.rewinds[0]).toMatchObject({ status: 'rolled-back', error: 'c3.txt is read-only' })
  })

  it('names only the changes it took back: a file changed since and kept took nothing back', () => {
    // c3.txt was changed by someone else and kept; c2.txt went back.
    const kept = stateWith([
      rewindStarted({
        changes: [{ path: '/w/c2.txt', relPath: 'c2.txt', from: hash('a'), to: null }],
        skipped: [{ relPath: 'c3.txt', reason: 'changed since Lanes last wrote it; left as it is' }],
      }),
      rewindFinished,
    ])
    const rewind = kept.rewinds[0]!
    expect(undoneCalls(rewind, kept).map((c) => c.callId)).toEqual(['c2'])
    const call = (id: string) => kept.turns[1]!.calls[id]!
    expect(keptReason(rewind, call('c3'))).toBe('changed since Lanes last wrote it; left as it is')
    expect(keptReason(rewind, call('c2'))).toBeUndefined()
    // A skipped file that is not this call's own takes nothing from it.
    const other = stateWith([rewindStarted(), rewindFinished])
    expect(undoneCalls(other.rewinds[0]!, other).map((c) => c.callId)).toEqual(['c2', 'c3'])
  })

  it('says what happens to each file', () => {
    expect(changeText({ path: '/w/a', relPath: 'a', from: hash('a'), to: null })).toMatch(/^removed/)
    expect(changeText({ path: '/w/a', relPath: 'a', from: null, to: hash('a') })).toMatch(/^created again/)
    expect(changeText({ path: '/w/a', relPath: 'a', from: hash('a'), to: hash('b') })).toMatch(/^put back/)
  })
})

describe('a rewind on the timeline', () => {
  it('stands at its moment on the squeezed axis: after every bar, inside the fitted width', () => {
    const state = reduceEvents(events(firstRun))
    // The rewind comes a minute after the run: the idle stretch is squeezed, the mark stays in view.
    const log = [
      ...events(firstRun),
      { ...rewindStarted(), seq: firstRun.length, at: state.lastEventAt! + 60_000 },
      { ...rewindFinished, seq: firstRun.length + 1, at: state.lastEventAt! + 60_050 },
    ] as SessionEvent[]
    const s = reduceEvents(log)
    const time = buildTimeAxis(s, s.lastEventAt!)
    const width = 800
    const scale: Scale = {
      origin: time.origin,
      time,
      pxPerMs: fitPxPerMs(displayTime(time, s.lastEventAt!) * 1.02, width),
    }
    const x = rewindMarkX(scale, s.rewinds[0]!)
    const lastCallEnd = Math.max(
      ...s.turns.flatMap((t) => Object.values(t.calls).map((c) => c.finishedAt ?? 0)),
    )
    expect(x).toBeGreaterThan(LABEL_WIDTH + displayTime(time, lastCallEnd) * scale.pxPerMs)
    expect(x).toBeLessThanOrEqual(width - PAD_RIGHT)
    // Squeezed: a minute of waiting takes less room than the session's busy part would at this scale.
    expect(displayTime(time, s.rewinds[0]!.startedAt) - displayTime(time, lastCallEnd)).toBeLessThan(2000)
  })
})
