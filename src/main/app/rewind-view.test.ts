import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { recordCalls } from '../session/test-fixtures/recorded-session'
import { applyRewindFromApp, planRewindView } from './rewind-view'
import { removedAfterEach } from '../test-fixtures/temp-dir'

const cleanup = removedAfterEach()

function twoFiles() {
  return recordCalls(
    [
      [1, 'c1', 'write_file', { path: 'a.txt', content: 'alpha\n' }],
      [2, 'c2', 'edit_file', { path: 'a.txt', old_string: 'alpha', new_string: 'ALPHA' }],
      [2, 'c3', 'write_file', { path: 'b.txt', content: 'bravo\n' }],
    ],
    cleanup,
  )
}

describe('the rewind dialog in the app', () => {
  it('shows each file as a diff from now back to the point, and a conflict with its three versions', async () => {
    const s = await twoFiles()
    await writeFile(join(s.workspace, 'b.txt'), 'bravo, edited by the user\n')
    const view = await planRewindView(s.sessionsDir, { sessionId: s.sessionId, mode: 'rewind', callId: 'c2' })
    if ('ok' in view) throw new Error(view.reason)
    expect(view.callIds).toEqual(['c2', 'c3'])
    const [a, b] = view.files
    expect(a).toMatchObject({ relPath: 'a.txt', action: 'restore', conflict: false })
    expect(a?.diff.hunks[0]?.lines).toEqual(['-ALPHA', '+alpha'])
    expect(b).toMatchObject({
      relPath: 'b.txt',
      action: 'remove',
      conflict: true,
      versions: { atPoint: null, lanesLeft: 'bravo\n', now: 'bravo, edited by the user\n' },
    })
  })

  it('applies it, rewinding a conflicting file only when the user chose to', async () => {
    const s = await twoFiles()
    await writeFile(join(s.workspace, 'a.txt'), 'mine\n')
    const target = { sessionId: s.sessionId, mode: 'rewind' as const, callId: 'c2' }
    const kept = await applyRewindFromApp(s.sessionsDir, target)
    expect(kept).toMatchObject({
      changed: [{ relPath: 'b.txt', action: 'remove' }],
      skipped: [{ relPath: 'a.txt' }],
    })
    expect(await readFile(join(s.workspace, 'a.txt'), 'utf8')).toBe('mine\n')
    const chosen = await applyRewindFromApp(s.sessionsDir, { ...target, rewindConflicts: ['a.txt'] })
    expect(chosen).toMatchObject({ changed: [{ relPath: 'a.txt', action: 'restore' }], skipped: [] })
    expect(await readFile(join(s.workspace, 'a.txt'), 'utf8')).toBe('alpha\n')
  })

  it('refuses an unknown session or call with the reason', async () => {
    const s = await twoFiles()
    expect(
      await planRewindView(s.sessionsDir, { sessionId: 'nope', mode: 'undo', callId: 'c1' }),
    ).toMatchObject({
      ok: false,
    })
    expect(
      await planRewindView(s.sessionsDir, { sessionId: s.sessionId, mode: 'undo', callId: 'zz' }),
    ).toEqual({
      ok: false,
      reason: 'This session has no call zz.',
    })
  })
})
