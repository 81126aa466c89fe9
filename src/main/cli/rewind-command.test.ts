import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { withRewindSession } from '../session/rewind-session'
import {
  fileExists,
  fileText,
  recordCalls,
  sessionEvents,
  type RecordedSession,
} from '../session/test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'

const CHILD = fileURLToPath(new URL('./test-fixtures/rewind-child.ts', import.meta.url))

function child(
  args: string[],
): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    p.once('error', reject)
    p.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

const cleanup = removedAfterEach()

/** c1 creates a.txt; c2 edits it; c3 creates sub/b.txt. */
function session(): Promise<RecordedSession> {
  return recordCalls(
    [
      [1, 'c1', 'write_file', { path: 'a.txt', content: 'one\ntwo\n' }],
      [2, 'c2', 'edit_file', { path: 'a.txt', old_string: 'two', new_string: 'TWO' }],
      [2, 'c3', 'write_file', { path: 'sub/b.txt', content: 'bee\n' }],
    ],
    cleanup,
  )
}

const rewindEvents = async (s: RecordedSession) =>
  (await sessionEvents(s)).filter((e) => e.type.startsWith('rewind.'))

describe('a rewind killed half-way', { timeout: 60_000 }, () => {
  it('is resumed on the next start when the files are as it left them', async () => {
    const s = await session()
    const crashed = await child(['crash', s.sessionsDir, s.sessionId, 'c2'])
    expect(crashed.signal).toBe('SIGKILL')
    // Killed after a first file was changed: the intent is logged without an outcome.
    const aBack = (await fileText(s, 'a.txt')) === 'one\ntwo\n'
    const bGone = !(await fileExists(s, 'sub/b.txt'))
    expect(aBack || bGone).toBe(true)
    expect((await rewindEvents(s)).map((e) => e.type)).toEqual(['rewind.started'])

    // Opened at the latest call, as an undo of it would: the cut-short rewind is in the log's tail read.
    const recovered = await withRewindSession(s.sessionsDir, s.sessionId, async (r) => r.recovered, {
      callId: 'c3',
    })
    expect(recovered).toMatchObject({ outcome: 'done' })
    expect(await fileText(s, 'a.txt')).toBe('one\ntwo\n')
    expect(await fileExists(s, 'sub/b.txt')).toBe(false)
    expect((await rewindEvents(s)).at(-1)).toMatchObject({
      type: 'rewind.finished',
      outcome: 'done',
      recovered: true,
    })
  })

  it('is rolled back on the next start when a file changed in between', async () => {
    const s = await session()
    expect((await child(['crash', s.sessionsDir, s.sessionId, 'c2'])).signal).toBe('SIGKILL')
    await writeFile(join(s.workspace, 'sub/b.txt'), 'the user changed it after the crash\n')

    const recovered = await withRewindSession(s.sessionsDir, s.sessionId, async (r) => r.recovered)
    expect(recovered).toMatchObject({ outcome: 'rolled-back' })
    // Neither half stays: a.txt is as before the rewind, and the user's file is left alone.
    expect(await fileText(s, 'a.txt')).toBe('one\nTWO\n')
    expect(await fileText(s, 'sub/b.txt')).toBe('the user changed it after the crash\n')
    expect((await rewindEvents(s)).at(-1)).toMatchObject({ outcome: 'rolled-back', recovered: true })
  })
})

describe('lanes rewind', { timeout: 60_000 }, () => {
  it('rewinds, printing one JSON line per file, and exits 0', async () => {
    const s = await session()
    const out = await child(['cli', 'rewind', s.sessionId, '--to', 'c2', '--sessions-dir', s.sessionsDir])
    expect(out.stderr).toBe('')
    expect(out.code).toBe(0)
    const lines = out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    // Files are rewound side by side: their lines come in the order they finish.
    const files = lines.slice(0, -1).sort((x, y) => String(x.path).localeCompare(String(y.path)))
    expect(files).toEqual([
      expect.objectContaining({ type: 'file.rewound', path: 'a.txt', action: 'restored' }),
      expect.objectContaining({ type: 'file.rewound', path: 'sub/b.txt', action: 'removed', to: null }),
    ])
    expect(lines.at(-1)).toEqual(
      expect.objectContaining({ type: 'rewind.done', files: 2, skipped: 0, conversationFromTurn: 2 }),
    )
    expect(await fileText(s, 'a.txt')).toBe('one\ntwo\n')
  })

  it('refuses an unknown call with the reason and exit 1, changing nothing', async () => {
    const s = await session()
    const out = await child([
      'cli',
      'rewind',
      s.sessionId,
      '--to',
      'zz',
      '--sessions-dir',
      s.sessionsDir,
      '--files-only',
    ])
    expect(out.code).toBe(1)
    expect(out.stderr).toContain('no call zz')
    expect(out.stdout).toBe('')
    expect(await fileText(s, 'a.txt')).toBe('one\nTWO\n')
    const missing = await child([
      'cli',
      'rewind',
      'no-such-session',
      '--to',
      'c1',
      '--sessions-dir',
      s.sessionsDir,
    ])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/no-such-session/)
    expect((await child(['cli', 'rewind', s.sessionId])).code).toBe(2)
  })
})
