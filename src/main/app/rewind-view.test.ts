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

  it('shows a binary file by what it is (size, type, image), never its bytes as text', async () => {
    const png = (n: number) =>
      Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(n, 0)])
    const s = await recordCalls(
      [
        [1, 'c1', 'write_file', { path: 'logo.png', content: png(8).toString('base64'), encoding: 'base64' }],
        [
          2,
          'c2',
          'write_file',
          { path: 'logo.png', content: png(24).toString('base64'), encoding: 'base64' },
        ],
      ],
      cleanup,
    )
    await writeFile(join(s.workspace, 'logo.png'), png(40))
    const view = await planRewindView(s.sessionsDir, { sessionId: s.sessionId, mode: 'rewind', callId: 'c2' })
    if ('ok' in view) throw new Error(view.reason)
    const [logo] = view.files
    expect(logo?.diff).toMatchObject({
      show: 'binary',
      hunks: [],
      files: { before: { bytes: 56, binary: true, mime: 'image/png' }, after: { bytes: 24, binary: true } },
    })
    expect(logo?.diff.before).toBeUndefined()
    expect(logo?.versions).toEqual({
      atPoint: '(binary: PNG image, 24 bytes)',
      lanesLeft: '(binary: PNG image, 40 bytes)',
      now: '(binary: PNG image, 56 bytes)',
    })
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
