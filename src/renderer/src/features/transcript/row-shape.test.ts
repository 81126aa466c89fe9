import { describe, expect, it } from 'vitest'
import type { SessionEventDraft } from '../../../../shared/events'
import { reduceEvents } from '../../../../shared/reducer'
import { recorder, settings } from '../../../../shared/reducer-test-events'
import { transcriptRows, type TranscriptRow } from './rows'
import { rowShape } from './Transcript'

/** The shapes of the card rows of one turn whose bash calls ended as `endings` say, by call id. */
function callShapes(endings: Record<string, Partial<SessionEventDraft & { type: 'tool.finished' }>>) {
  const r = recorder()
  r.add({ type: 'session.created', sessionId: 's1', workspace: '/w', settings })
  r.add({ type: 'run.started', runId: 'r1', task: 'do it' })
  r.add({ type: 'turn.started', runId: 'r1', turn: 1 })
  const ids = Object.keys(endings)
  ids.forEach((callId, i) =>
    r.add({
      type: 'tool.queued',
      callId,
      turn: 1,
      index: i,
      name: 'bash',
      input: { command: 'npm test' },
      safe: false,
      lane: { kind: 'serial' },
    }),
  )
  for (const callId of ids) {
    r.add({ type: 'tool.started', callId })
    r.add({ type: 'tool.finished', callId, isError: false, output: 'ok', durationMs: 5, ...endings[callId] })
  }
  const rows = transcriptRows(reduceEvents(r.events)).filter(
    (row): row is Extract<TranscriptRow, { kind: 'call' }> => row.kind === 'call',
  )
  return Object.fromEntries(rows.map((row) => [row.call.callId, rowShape(row)]))
}

describe('rowShape', () => {
  it('tells a failed command (its card explains the failure) from one that finished', () => {
    const failed = { isError: true, output: 'Exit code 1\nError: 2 tests failed' }
    const shapes = callShapes({
      ok: {},
      failed,
      'failed-too': failed,
      'failed-longer': {
        isError: true,
        output: 'Exit code 1\nError: the module cache could not be found in time',
      },
    })
    expect(shapes.failed).not.toBe(shapes.ok)
    // The same explanation is the same height; a longer one may wrap.
    expect(shapes['failed-too']).toBe(shapes.failed)
    expect(shapes['failed-longer']).not.toBe(shapes.failed)
  })

  it('tells a command by the lines its changes add to the card', () => {
    const changes = (paths: number) => ({
      metadata: {
        changes: {
          mode: 'overlay',
          counts: { changed: paths, added: 0, removed: 0, modeChanged: 0 },
          paths: Array.from({ length: paths }, (_, i) => ({ relPath: `f${i}.ts`, change: 'changed' })),
          truncated: false,
          undoable: true,
        },
      },
    })
    const shapes = callShapes({ none: {}, one: changes(1), three: changes(3), 'three-too': changes(3) })
    expect(new Set([shapes.none, shapes.one, shapes.three]).size).toBe(3)
    expect(shapes['three-too']).toBe(shapes.three)
  })
})
