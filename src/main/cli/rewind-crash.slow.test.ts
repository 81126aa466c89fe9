import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { reduceEvents } from '../../shared/reducer'
import { unfinishedRewind } from '../session/rewind-history'
import { withRewindSession } from '../session/rewind-session'
import { sessionEvents } from '../session/test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'
import { child, keptAside, manyFiles, N, standing, timedFrom } from './test-fixtures/rewind-processes'

// A rewind of 200 files SIGKILLed (a real process) at random moments, and the start that finishes it killed
// too: after the next start the rewind is wholly done or wholly undone, never left half way.

const cleanup = removedAfterEach()

describe('a rewind of 200 files killed at a random moment', { timeout: 240_000 }, () => {
  it('is, after the next start, wholly done or wholly undone, whatever the moment', async () => {
    const s = await manyFiles(cleanup)
    const restore = await keptAside(s, cleanup)
    const args = ['apply', s.sessionsDir, s.sessionId, 'e0']

    // Uncut, to learn how long the apply takes here.
    const { ms: applyMs, out: whole } = await timedFrom(args, 'applying')
    expect(whole.stdout).toContain('done')
    expect(await standing(s)).toBe('rewound')

    const seen = new Set<string>()
    for (let round = 0; round < 10; round++) {
      await restore()
      // Spread over the apply (and a little past it), each at a random point of its share. The kill comes from
      // outside and its moment depends on the machine's load, so the last two rounds make sure the process
      // dies mid-apply: it kills itself right after a random one of its 2N file changes.
      const delay = ((round + Math.random()) / 8) * applyMs * 1.2
      const nth = 1 + Math.floor(Math.random() * 2 * N)
      const killed =
        round < 8
          ? await child(args, (line, kill) => {
              if (line === 'applying') setTimeout(kill, delay)
            })
          : await child(['crash', ...args.slice(1), String(nth)])
      const moment = round < 8 ? `killed after ${delay.toFixed(1)} ms` : `killed after change ${nth}`
      const recovered = await withRewindSession(s.sessionsDir, s.sessionId, async (r) => r.recovered)
      const events = await sessionEvents(s)
      expect(unfinishedRewind(events), `round ${round}, ${moment}`).toBeUndefined()
      const state = await standing(s)
      expect(['before', 'rewound'], `round ${round}: ${moment} (${killed.signal})`).toContain(state)
      // The log says what the folder shows.
      const last = reduceEvents(events).rewinds.at(-1)
      if (state === 'rewound') expect(last?.status).toBe('done')
      else expect(last === undefined || last.status === 'rolled-back').toBe(true)
      seen.add(
        `${killed.signal ?? 'exited'}:${recovered && 'outcome' in recovered ? recovered.outcome : 'none'}`,
      )
    }
    // Some rounds (at least the last two) were cut mid-apply and finished on the next start.
    expect([...seen].some((k) => k === 'SIGKILL:done')).toBe(true)
  })
})

describe('a rewind cut short, and the start that finishes it cut short too', { timeout: 240_000 }, () => {
  it('is still wholly done or wholly undone after the start after that, rolling forward or back', async () => {
    const s = await manyFiles(cleanup)
    const restore = await keptAside(s, cleanup)
    const recover = ['recover', s.sessionsDir, s.sessionId]
    const killedAfter = (args: string[], line: string, ms: number) =>
      child(args, (l, kill) => {
        if (l === line) setTimeout(kill, ms)
      })
    const USER = 'the user typed this after the crash\n'
    /** The rewind cut after half its files; in odd rounds the user then edits a file: the start rolls back. */
    const crashed = async (round: number) => {
      await restore()
      expect((await child(['crash', s.sessionsDir, s.sessionId, 'e0', String(N)])).signal).toBe('SIGKILL')
      if (round % 2 === 1) await writeFile(join(s.workspace, 'sub/g0.txt'), USER)
    }
    // How long a start takes to finish it, and to roll it back.
    const recoverMs: number[] = []
    for (const round of [0, 1]) {
      await crashed(round)
      recoverMs[round] = (await timedFrom(recover, 'opening')).ms
    }
    const cut = new Set<string>()
    for (let round = 0; round < 4; round++) {
      await crashed(round)
      const delay = Math.random() * (recoverMs[round % 2] as number) * 1.2
      const first = await killedAfter(recover, 'opening', delay)
      cut.add(String(first.signal))
      await withRewindSession(s.sessionsDir, s.sessionId, async () => undefined)
      const events = await sessionEvents(s)
      const at = `round ${round}: the start killed after ${delay.toFixed(1)} ms (${first.signal})`
      expect(unfinishedRewind(events), at).toBeUndefined()
      if (round % 2 === 1) {
        expect(await readFile(join(s.workspace, 'sub/g0.txt'), 'utf8'), at).toBe(USER)
        expect(await standing(s, 'sub/g0.txt'), at).toBe('before')
      } else expect(await standing(s), at).toBe('rewound')
    }
    expect(cut.has('SIGKILL')).toBe(true)
  })
})
