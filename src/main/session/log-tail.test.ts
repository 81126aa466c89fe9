import { appendFile, readFile, writeFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { readSession, readSessionTail, sessionPaths } from './log'
import { planRewind } from './rewind'
import { withRewindSession } from './rewind-session'
import { recordCalls, type RecordedCall } from './test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'

const cleanup = removedAfterEach()

/**
 * Forty calls over ten turns on seven files, each content 20 KB and one line away from the file's last one, so
 * the log is read in many chunks backwards (and the diffs stay small).
 */
function calls(): RecordedCall[] {
  const base = Array.from({ length: 400 }, (_, j) => `line ${j} of a file that is long enough\n`)
  const out: RecordedCall[] = []
  for (let i = 0; i < 40; i++) {
    const path = `d${i % 3}/f${i % 7}.txt`
    const lines = base.slice()
    lines[i * 9] = `changed by call ${i}\n`
    out.push([1 + Math.floor(i / 4), `c${i}`, 'write_file', { path, content: lines.join('') }])
  }
  return out
}

const logOf = (s: { sessionsDir: string; sessionId: string }) => sessionPaths(s.sessionsDir, s.sessionId).log
const queuedAs = (callId: string) => (e: { type: string; callId?: string }) =>
  e.type === 'tool.queued' && e.callId === callId

describe('readSessionTail', () => {
  it('reads the first event and everything from the call on, exactly as the whole read has them', async () => {
    const s = await recordCalls(calls(), cleanup)
    const whole = (await readSession(logOf(s))).events
    for (const callId of ['c39', 'c25', 'c3', 'c0']) {
      const tail = await readSessionTail(logOf(s), queuedAs(callId))
      const at = whole.findIndex(queuedAs(callId))
      expect(tail.whole).toBe(false)
      expect(tail.events).toEqual([whole[0], ...whole.slice(at)].filter((e, i, all) => all.indexOf(e) === i))
    }
  })

  it('is the whole log when no event matches, skipping a torn last line with a warning', async () => {
    const s = await recordCalls(calls().slice(0, 5), cleanup)
    await appendFile(logOf(s), '{"seq":999,"type":"tool.sta')
    const whole = await readSession(logOf(s))
    const tail = await readSessionTail(logOf(s), queuedAs('no-such-call'))
    expect(tail.whole).toBe(true)
    expect(tail.events).toEqual(whole.events)
    expect(tail.warnings).toEqual([expect.stringContaining('incomplete last line')])
  })

  it('reads only the types asked for, passing the others over unparsed, and parses a line written otherwise', async () => {
    const s = await recordCalls(calls(), cleanup)
    // A line written with its fields in another order (by hand, or another writer) is parsed to find its type.
    const text = await readFile(logOf(s), 'utf8')
    const reordered = text.replace(
      /\{"type":"(file\.snapshot)",("at":[^,]+,"seq":[0-9]+),/,
      '{$2,"type":"$1",',
    )
    expect(reordered).not.toBe(text)
    await writeFile(logOf(s), reordered)
    const only = new Set(['session.created', 'tool.queued', 'file.snapshot'] as const)
    const whole = (await readSession(logOf(s))).events
    const tail = await readSessionTail(logOf(s), queuedAs('c0'), { only })
    expect(tail.whole).toBe(false)
    expect(tail.events).toEqual(whole.filter((e) => only.has(e.type as 'tool.queued')))
  })

  it('reads only the tool.queued of the call asked for, and parses one whose id is written with an escape', async () => {
    const s = await recordCalls(calls().slice(0, 6), cleanup)
    // c3 written as "\u0063\u0033": the same call, spelled another way.
    const text = await readFile(logOf(s), 'utf8')
    await writeFile(logOf(s), text.replace('"callId":"c3"', '"callId":"\\u0063\\u0033"'))
    const whole = (await readSession(logOf(s))).events
    const tail = await readSessionTail(logOf(s), queuedAs('c3'), { queuedCall: 'c3' })
    expect(tail.whole).toBe(false)
    const at = whole.findIndex(queuedAs('c3'))
    expect(tail.events).toEqual(
      [whole[0], ...whole.slice(at)].filter((e) => e?.type !== 'tool.queued' || e.callId === 'c3'),
    )
    expect(tail.events.filter((e) => e.type === 'tool.queued')).toHaveLength(1)
  })

  it('finds the first event behind a byte-order mark', async () => {
    const s = await recordCalls(calls().slice(0, 3), cleanup)
    const text = await readFile(logOf(s), 'utf8')
    await writeFile(logOf(s), '\ufeff' + text)
    const tail = await readSessionTail(logOf(s), queuedAs('c2'))
    expect(tail.events[0]?.type).toBe('session.created')
    expect(tail.events[1]).toMatchObject({ type: 'tool.queued', callId: 'c2' })
  })
})

describe('a rewind session opened at a call', () => {
  it('plans exactly what the whole log plans, for an undo and a rewind at every call', async () => {
    const s = await recordCalls(calls(), cleanup)
    for (const callId of ['c0', 'c13', 'c38']) {
      for (const mode of ['undo', 'rewind'] as const) {
        const request = { mode, callId, conversation: true }
        const plan = (at?: string) =>
          withRewindSession(
            s.sessionsDir,
            s.sessionId,
            async (r) => {
              const p = await planRewind(r.events, r.store, r.workspace, request)
              // What planning read from disk is not part of the plan's meaning.
              return p.ok ? { ...p, files: p.files.map(({ seen: _, ...f }) => f) } : p
            },
            at === undefined ? {} : { callId: at },
          )
        expect(await plan(callId)).toEqual(await plan())
      }
    }
  })
})
