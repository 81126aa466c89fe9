import { readdir } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { readSession, sessionPaths } from '../session/log'
import { preimagesDir } from '../session/preimages'
import { unfinishedRewind } from '../session/rewind-history'
import { withRewindSession } from '../session/rewind-session'
import { trashDeleted, trashRoot } from '../session/rewind-trash'
import { captureSupport } from '../tools/bash/capture/overlay'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { tree } from '../test-fixtures/tree'
import { commandRuns } from './test-fixtures/command-runs'
import { child, timedFrom } from './test-fixtures/rewind-processes'

// The undo of a command that made 200 files in 10 folders (moved whole into the trash, see rewind-trash.ts)
// SIGKILLed at random moments: after the next start the workspace is wholly as the command left it or wholly as
// before it, and no trash is left behind.

const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
const { landed } = commandRuns('lanes-undo-crash-')

const MAKE = [
  'set -e',
  'for d in $(seq 1 10); do mkdir -p made/d$d; for f in $(seq 1 20); do echo "$d $f" > made/d$d/f$f.js; done; done',
  'echo top > top.txt',
  'sleep 0.3',
]

describe.skipIf(!overlay)(
  'an undo of the folders a command made, killed at a random moment',
  { timeout: 300_000 },
  () => {
    it('is, after the next start, wholly done or wholly undone, and leaves no trash', async () => {
      const uncut = await landed({ 'keep.txt': 'k\n' }, MAKE)
      // Uncut, to learn how long the apply takes here (from its plan to its "done").
      const { ms: applyMs, out: whole } = await timedFrom(
        ['apply', uncut.t.sessionsDir, uncut.sessionId, uncut.callId],
        'applying',
      )
      expect(whole.stdout).toContain('done')
      expect(await tree(uncut.t.workspace)).toEqual(uncut.before)

      for (let round = 0; round < 8; round++) {
        const s = await landed({ 'keep.txt': 'k\n' }, MAKE)
        const delay = ((round + Math.random()) / 8) * applyMs * 1.2
        const killed = await child(['apply', s.t.sessionsDir, s.sessionId, s.callId], (line, kill) => {
          if (line === 'applying') setTimeout(kill, delay)
        })
        await withRewindSession(s.t.sessionsDir, s.sessionId, async () => undefined)
        const now = await tree(s.t.workspace)
        const what = `round ${round}: killed after ${delay.toFixed(1)} ms (${killed.signal})`
        expect([s.before, s.after], what).toContainEqual(now)
        const { events } = await readSession(sessionPaths(s.t.sessionsDir, s.sessionId).log)
        expect(unfinishedRewind(events as SessionEvent[]), what).toBeUndefined()
        await trashDeleted()
        const trash = trashRoot(preimagesDir(sessionPaths(s.t.sessionsDir, s.sessionId).outputDir))
        expect(await readdir(trash).catch(() => []), what).toEqual([])
      }
    })
  },
)
