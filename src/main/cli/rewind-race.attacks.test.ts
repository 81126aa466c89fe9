import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentSession } from '../agent/agent-session'
import type { Scenario } from '../agent/scenario'
import { cleanUpScriptedRuns, scriptedRun } from '../agent/test-fixtures/scripted-run'
import { applyRewindFromApp, planRewindView } from '../app/rewind-view'
import { readSession, sessionPaths } from '../session/log'
import { recordSession, sessionEvents, type RecordedSession } from '../session/test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'
import { child, manyFiles, standing } from './test-fixtures/rewind-processes'

// Rewinds racing each other and a run: real processes on real folders. A rewind is refused or serialized,
// never interleaved with another writer of the session.

const cleanup = removedAfterEach()
afterEach(cleanUpScriptedRuns)

describe('two rewinds at once', { timeout: 120_000 }, () => {
  it('two `lanes rewind` processes on one session: one rewinds, the other is refused or finds nothing left', async () => {
    const s = await manyFiles(cleanup)
    const cli = ['cli', 'rewind', s.sessionId, '--to', 'e0', '--files-only', '--sessions-dir', s.sessionsDir]
    const [a, b] = await Promise.all([child(cli), child(cli)])
    const outcomes = [a, b].map((r) => r.code).sort()
    expect(outcomes, `${a.stderr}\n${b.stderr}`).toEqual([0, 1])
    const refused = (a.code === 1 ? a : b).stderr
    expect(refused).toMatch(/is open in another|already open|Nothing to rewind/)
    expect(await standing(s)).toBe('rewound')
    const finished = (await sessionEvents(s)).filter((e) => e.type === 'rewind.finished')
    expect(finished).toHaveLength(1)
  })
})

describe('two windows of the app rewinding one session at once', { timeout: 120_000 }, () => {
  it('one rewinds; the other is refused, never interleaved', async () => {
    const s = await manyFiles(cleanup)
    const target = { sessionId: s.sessionId, mode: 'rewind' as const, callId: 'e0' }
    const both = await Promise.all([
      applyRewindFromApp(s.sessionsDir, target),
      applyRewindFromApp(s.sessionsDir, target),
    ])
    const refused = both.filter((r) => 'ok' in r)
    expect(refused).toEqual([{ ok: false, reason: expect.stringMatching(/already open|Nothing to rewind/) }])
    expect(await standing(s)).toBe('rewound')
    expect((await sessionEvents(s)).filter((e) => e.type === 'rewind.finished')).toHaveLength(1)
  })
})

describe('a rewind while a run holds the session', { timeout: 120_000 }, () => {
  it('is refused, from the command line and from the app, and the run goes on unharmed', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'first\n' } }] },
        { blocks: [{ tool: 'write_file', input: { path: 'b.txt', content: 'second\n' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, {
      approvals: 'pause',
      strict: true,
      prefix: 'lanes-rewind-race-',
    })
    const session = await AgentSession.create(run.options)
    // The first write asks for review: the run waits for it, its session open (a window showing the review).
    expect(await session.run('write')).toMatchObject({ status: 'paused' })
    const first = run.events.find((e) => e.type === 'tool.queued')
    const callId = first?.type === 'tool.queued' ? first.callId : ''
    const cli = await child([
      'cli',
      'rewind',
      session.sessionId,
      '--to',
      callId,
      '--sessions-dir',
      run.sessionsDir,
    ])
    expect(cli.code).toBe(1)
    expect(cli.stderr).toMatch(/open|in use/)
    const app = await planRewindView(run.sessionsDir, { sessionId: session.sessionId, mode: 'undo', callId })
    expect(app).toMatchObject({ ok: false, reason: expect.stringMatching(/open|in use/) })
    const log = await readSession(sessionPaths(run.sessionsDir, session.sessionId).log)
    expect(log.events.some((e) => e.type.startsWith('rewind.'))).toBe(false)
    // The run goes on once reviewed.
    await session.close()
    const { session: again } = await AgentSession.open(session.sessionId, run.options)
    expect(await again.continue([{ callId, decision: 'approved' }])).toMatchObject({ status: 'paused' })
    await again.close()
    expect(await readFile(join(run.workspace, 'a.txt'), 'utf8')).toBe('first\n')
  })
})

describe('a rewind of files in many folders, with few files allowed open', { timeout: 120_000 }, () => {
  const FOLDERS = 400
  const LIMIT = { openFiles: 300 }
  async function inManyFolders(): Promise<RecordedSession> {
    const s = await recordSession()
    cleanup.push(s.sessionsDir, s.workspace)
    for (let i = 0; i < FOLDERS; i++)
      await s.call(1, `c${i}`, 'write_file', { path: `d${i}/f.txt`, content: `file ${i}\n` })
    await s.close()
    return s
  }
  const allRemoved = async (s: RecordedSession) => {
    for (let i = 0; i < FOLDERS; i++) expect(await readdir(join(s.workspace, `d${i}`))).toEqual([])
  }

  it('rewinds them all: the folders it checks are not all held open at once', async () => {
    const s = await inManyFolders()
    const cli = ['cli', 'rewind', s.sessionId, '--to', 'c0', '--files-only', '--sessions-dir', s.sessionsDir]
    const out = await child(cli, undefined, LIMIT)
    expect(out.stderr).toBe('')
    expect(out.code).toBe(0)
    await allRemoved(s)
  })

  it('finishes one a crash cut short half way, under the same limit', async () => {
    const s = await inManyFolders()
    const crashed = await child(
      ['crash', s.sessionsDir, s.sessionId, 'c0', String(FOLDERS / 2)],
      undefined,
      LIMIT,
    )
    expect(crashed.signal).toBe('SIGKILL')
    const recovered = await child(['recover', s.sessionsDir, s.sessionId], undefined, LIMIT)
    expect(recovered.stderr).toBe('')
    expect(recovered.stdout).toContain('"outcome":"done"')
    await allRemoved(s)
  })
})

describe('a rewind while a run is working', { timeout: 120_000 }, () => {
  it('is refused by the running session, the app and the command line, never interleaved with its writes', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'written by the run\n' } }] },
        // A command still running when the user asks to undo.
        { blocks: [{ tool: 'bash', input: { command: 'sleep 3' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, { approvals: 'all', strict: true, prefix: 'lanes-rewind-race-' })
    const session = await AgentSession.create(run.options)
    const running = session.run('write, then wait')
    await expect
      .poll(
        () =>
          run.events.some(
            (e) =>
              e.type === 'tool.started' &&
              run.events.some((q) => q.type === 'tool.queued' && q.callId === e.callId && q.name === 'bash'),
          ),
        { timeout: 30_000 },
      )
      .toBe(true)
    const write = run.events.find((e) => e.type === 'tool.queued' && e.name === 'write_file')
    const callId = write?.type === 'tool.queued' ? write.callId : ''
    expect(await session.rewind({ mode: 'undo', callId })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('stop the run first'),
    })
    const app = await planRewindView(run.sessionsDir, { sessionId: session.sessionId, mode: 'undo', callId })
    expect(app).toMatchObject({ ok: false, reason: expect.stringMatching(/already open/) })
    const cli = await child([
      'cli',
      'rewind',
      session.sessionId,
      '--to',
      callId,
      '--sessions-dir',
      run.sessionsDir,
    ])
    expect(cli.code).toBe(1)
    expect(await running).toEqual({ status: 'finished' })
    const log = await readSession(sessionPaths(run.sessionsDir, session.sessionId).log)
    expect(log.events.some((e) => e.type.startsWith('rewind.'))).toBe(false)
    expect(await readFile(join(run.workspace, 'a.txt'), 'utf8')).toBe('written by the run\n')
    // Once it has finished, the undo goes through.
    expect(await session.rewind({ mode: 'undo', callId })).toMatchObject({ ok: true })
    await session.close()
    expect(await readdir(run.workspace)).toEqual([])
  })
})

describe('`lanes rewind` on a session the app shows', { timeout: 120_000 }, () => {
  it('goes through (the app holds no lock while idle); the app then applies nothing from its stale preview', async () => {
    const s = await manyFiles(cleanup)
    const target = { sessionId: s.sessionId, mode: 'rewind' as const, callId: 'e0' }
    const view = await planRewindView(s.sessionsDir, target)
    if ('ok' in view) throw new Error(view.reason)
    expect(view.files).toHaveLength(200)
    // Meanwhile, in a terminal: the session goes back, then the user types in one of the files.
    const cli = await child([
      'cli',
      'rewind',
      s.sessionId,
      '--to',
      'e0',
      '--files-only',
      '--sessions-dir',
      s.sessionsDir,
    ])
    expect(cli.code).toBe(0)
    await writeFile(join(s.workspace, 'f1.txt'), 'typed after the rewind\n')
    expect(await applyRewindFromApp(s.sessionsDir, { ...target, rewindConflicts: ['f1.txt'] })).toEqual({
      ok: false,
      reason: 'Changed since the preview: f1.txt. Look at the rewind again; nothing was changed.',
    })
    expect(await readFile(join(s.workspace, 'f1.txt'), 'utf8')).toBe('typed after the rewind\n')
    expect((await sessionEvents(s)).filter((e) => e.type === 'rewind.finished')).toHaveLength(1)
  })
})
