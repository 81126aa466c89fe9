import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { reduceEvents } from '../../shared/reducer'
import {
  fileExists,
  fileText,
  recordCalls,
  sessionEvents,
  type RecordedSession,
} from '../session/test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'
import { createAppApi, dispatchRequest, type AppApi } from './app-api'

/**
 * A rewind killed half-way (a real process, SIGKILL after its first file) is finished, or rolled back, as soon
 * as the app opens its session: the user never looks at a half-rewound folder.
 */

const CRASH_CHILD = fileURLToPath(new URL('../cli/test-fixtures/rewind-child.ts', import.meta.url))

function crashRewind(s: RecordedSession, callId: string): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      ['--import', 'tsx', CRASH_CHILD, 'crash', s.sessionsDir, s.sessionId, callId],
      { stdio: 'ignore' },
    )
    p.once('error', reject)
    p.once('close', (_code, signal) => resolve(signal))
  })
}

const cleanup = removedAfterEach()
let api: AppApi | undefined
afterEach(async () => {
  await api?.shutdown()
  api = undefined
})

/** c1 creates a.txt; c2 edits it; c3 creates sub/b.txt; then a rewind to c2 is killed after its first file. */
async function crashedRewind(): Promise<RecordedSession> {
  const s = await recordCalls(
    [
      [1, 'c1', 'write_file', { path: 'a.txt', content: 'one\ntwo\n' }],
      [2, 'c2', 'edit_file', { path: 'a.txt', old_string: 'two', new_string: 'TWO' }],
      [2, 'c3', 'write_file', { path: 'sub/b.txt', content: 'bee\n' }],
    ],
    cleanup,
  )
  expect(await crashRewind(s, 'c2')).toBe('SIGKILL')
  const rewinds = (await sessionEvents(s)).filter((e) => e.type.startsWith('rewind.'))
  expect(rewinds.map((e) => e.type)).toEqual(['rewind.started'])
  return s
}

async function openInApp(s: RecordedSession): Promise<SessionEvent[]> {
  api = await createAppApi({
    sessionsDir: s.sessionsDir,
    name: 'Lanes',
    version: '1',
    transport: 'web',
    workspace: s.workspace,
  })
  const loaded = await dispatchRequest(api, 'session:load', { sessionId: s.sessionId })
  if (!loaded.ok) throw new Error(loaded.error)
  return (loaded.value as { events: SessionEvent[] }).events
}

describe('opening a session whose rewind a crash cut short', { timeout: 60_000 }, () => {
  it('finishes the rewind when the files are as it left them, and shows it done', async () => {
    const s = await crashedRewind()
    const events = await openInApp(s)
    expect(await fileText(s, 'a.txt')).toBe('one\ntwo\n')
    expect(await fileExists(s, 'sub/b.txt')).toBe(false)
    const rewind = reduceEvents(events).rewinds.at(-1)
    expect(rewind).toMatchObject({ status: 'done', recovered: true, callIds: ['c2', 'c3'] })
    // What the app was given is what the log now holds: opening it again finds nothing left to do.
    expect(events).toEqual(await sessionEvents(s))
    expect(await openInApp(s)).toEqual(events)
  })

  it('finishes it once when two windows open the session at the same time, and both show it done', async () => {
    const s = await crashedRewind()
    api = await createAppApi({ sessionsDir: s.sessionsDir, name: 'Lanes', version: '1', transport: 'web' })
    const loads = await Promise.all(
      [1, 2].map(() => dispatchRequest(api as AppApi, 'session:load', { sessionId: s.sessionId })),
    )
    for (const loaded of loads) {
      if (!loaded.ok) throw new Error(loaded.error)
      const { events } = loaded.value as { events: SessionEvent[] }
      expect(reduceEvents(events).rewinds.at(-1)).toMatchObject({ status: 'done', recovered: true })
    }
    const finished = (await sessionEvents(s)).filter((e) => e.type === 'rewind.finished')
    expect(finished).toHaveLength(1)
  })

  it('rolls it back when a file changed after the crash, leaving that file alone', async () => {
    const s = await crashedRewind()
    await writeFile(join(s.workspace, 'sub/b.txt'), 'the user changed it after the crash\n')
    const rewind = reduceEvents(await openInApp(s)).rewinds.at(-1)
    expect(rewind).toMatchObject({ status: 'rolled-back', recovered: true })
    expect(rewind?.error).toContain('sub/b.txt')
    expect(await fileText(s, 'a.txt')).toBe('one\nTWO\n')
    expect(await fileText(s, 'sub/b.txt')).toBe('the user changed it after the crash\n')
  })
})
