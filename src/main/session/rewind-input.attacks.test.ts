import {
  appendFile,
  mkdir,
  mkdtemp,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { SessionEventDraft } from '../../shared/events'
import { reduceEvents } from '../../shared/reducer'
import { removedAfterEach } from '../test-fixtures/temp-dir'
import { openSessionWriter } from './log'
import { sha256 } from './preimages'
import { applyRewind, planRewind, type RewindRequest } from './rewind'
import { withRewindSession } from './rewind-session'
import { fileText, recordCalls, sessionEvents, type RecordedSession } from './test-fixtures/recorded-session'

// Rewinds asked for with bad input, on real folders and real logs: calls that are not this session's, or that
// the conversation already took back, and session logs edited by hand or damaged. Each is a clear refusal
// that changes nothing, and nothing outside the workspace is ever touched.

const cleanup = removedAfterEach()

/** c1 creates a.txt (turn 1), c2 edits it (turn 2), c3 creates b.txt (turn 3). */
function threeTurns(): Promise<RecordedSession> {
  return recordCalls(
    [
      [1, 'c1', 'write_file', { path: 'a.txt', content: 'one\n' }],
      [2, 'c2', 'edit_file', { path: 'a.txt', old_string: 'one', new_string: 'ONE' }],
      [3, 'c3', 'write_file', { path: 'b.txt', content: 'bee\n' }],
    ],
    cleanup,
  )
}

function rewind(s: RecordedSession, request: RewindRequest, rewindConflicts: string[] = []) {
  return withRewindSession(
    s.sessionsDir,
    s.sessionId,
    async (session) => {
      const plan = await planRewind(session.events, session.store, session.workspace, request)
      if (!plan.ok) return plan
      return applyRewind(plan, session.store, session.log, { rewindConflicts })
    },
    { callId: request.callId },
  )
}

/** Appends events to the closed session's log, as a hand edit (or another program) would. */
async function appendToLog(s: RecordedSession, drafts: SessionEventDraft[]): Promise<void> {
  const writer = await openSessionWriter(s.sessionsDir, s.sessionId, { create: false })
  for (const draft of drafts) await writer.append(draft)
  await writer.close()
}

const queued = (callId: string, turn: number, name = 'read_file'): SessionEventDraft => ({
  type: 'tool.queued',
  callId,
  turn,
  index: 0,
  name,
  input: {},
  safe: true,
  lane: { kind: 'serial' },
})

async function untouched(s: RecordedSession, rewinds = 0): Promise<void> {
  expect(await fileText(s, 'a.txt')).toBe('ONE\n')
  expect(await fileText(s, 'b.txt')).toBe('bee\n')
  expect(reduceEvents(await sessionEvents(s)).rewinds).toHaveLength(rewinds)
}

/** A folder outside every workspace, holding a file nobody may touch. */
async function outsideVictim(): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'lanes-rw-outside-')))
  cleanup.push(dir)
  const victim = join(dir, 'victim.txt')
  await writeFile(victim, 'outside the workspace\n')
  return victim
}

describe('a rewind asked for with calls it cannot go to', { timeout: 60_000 }, () => {
  it('a call of another session', async () => {
    const s = await threeTurns()
    const other = await threeTurns()
    await appendToLog(other, [queued('elsewhere', 4, 'write_file')])
    expect(await rewind(s, { mode: 'undo', callId: 'elsewhere' })).toEqual({
      ok: false,
      reason: 'This session has no call elsewhere.',
    })
    await untouched(s)
  })

  it('a call that changed no file', async () => {
    const s = await threeTurns()
    await appendToLog(s, [queued('c4', 4)])
    expect(await rewind(s, { mode: 'undo', callId: 'c4' })).toEqual({
      ok: false,
      reason: 'Call c4 changed no file that can be undone.',
    })
    expect(await rewind(s, { mode: 'rewind', callId: 'c4' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('Nothing to rewind'),
    })
    await untouched(s)
  })

  it('a call in a turn the conversation was already rewound past: refused for the conversation', async () => {
    const s = await threeTurns()
    expect(await rewind(s, { mode: 'rewind', callId: 'c2', conversation: true })).toMatchObject({ ok: true })
    const [done] = reduceEvents(await sessionEvents(s)).rewinds
    expect(await rewind(s, { mode: 'rewind', callId: 'c3', conversation: true })).toEqual({
      ok: false,
      reason: `Call c3 is in a turn the rewind ${done?.rewindId} already took back; rewind to a call the conversation still holds (or rewind its files only). Nothing was changed.`,
    })
    expect(await fileText(s, 'a.txt')).toBe('one\n')
    expect(reduceEvents(await sessionEvents(s)).rewinds).toHaveLength(1)
    // Its files alone may still go back to that point: here they already are.
    expect(await rewind(s, { mode: 'rewind', callId: 'c3' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('Nothing to rewind'),
    })
  })
})

describe('large files', { timeout: 60_000 }, () => {
  it('too large to keep in memory between the plan and the writes: read again when needed, rewound whole', async () => {
    const big = (tag: string, i: number) => `${tag} ${i}\n${'x'.repeat(3 * 2 ** 20)}\nend\n`
    const calls: Parameters<RecordedSession['call']>[] = []
    for (let i = 0; i < 3; i++)
      calls.push([1, `w${i}`, 'write_file', { path: `big${i}.txt`, content: big('first', i) }])
    for (let i = 0; i < 3; i++)
      calls.push([
        2,
        `e${i}`,
        'edit_file',
        { path: `big${i}.txt`, old_string: `first ${i}\n`, new_string: `second ${i}\n` },
      ])
    const s = await recordCalls(calls, cleanup)
    expect(await rewind(s, { mode: 'rewind', callId: 'e0' })).toMatchObject({ ok: true })
    for (let i = 0; i < 3; i++) expect(await fileText(s, `big${i}.txt`)).toBe(big('first', i))
  })
})

describe('a session log edited by hand', { timeout: 60_000 }, () => {
  it('a change naming a file outside the workspace: refused, the file untouched even when chosen', async () => {
    const s = await threeTurns()
    const victim = await outsideVictim()
    await appendToLog(s, [
      queued('c4', 4, 'write_file'),
      { type: 'file.preimage', callId: 'c4', path: victim, relPath: 'victim.txt', hash: null },
    ])
    const refused = await rewind(s, { mode: 'rewind', callId: 'c4' }, ['victim.txt'])
    expect(refused).toEqual({
      ok: false,
      reason: `The session's log names ${JSON.stringify(victim)}, which is not a file of its workspace ${s.workspace}: the log was edited or damaged. Nothing was changed.`,
    })
    expect(await readFile(victim, 'utf8')).toBe('outside the workspace\n')
    await untouched(s)
  })

  it('a path that climbs out with "..", a relPath that names another file, the workspace itself', async () => {
    const s = await threeTurns()
    const victim = await outsideVictim()
    const cases: [string, string][] = [
      [`${s.workspace}/sub/../../${victim.split('/').slice(-2).join('/')}`, 'victim.txt'],
      [join(s.workspace, 'b.txt'), 'README.md'],
      [join(s.workspace, 'b.txt'), '../b.txt'],
      [s.workspace, '.'],
    ]
    for (const [index, [path, relPath]] of cases.entries()) {
      const callId = `c${5 + index}`
      await appendToLog(s, [
        queued(callId, 5 + index, 'write_file'),
        { type: 'file.preimage', callId, path, relPath, hash: null },
      ])
      const refused = await rewind(s, { mode: 'undo', callId }, [relPath])
      expect(refused, path).toMatchObject({
        ok: false,
        reason: expect.stringContaining('the log was edited or damaged'),
      })
    }
    expect(await readFile(victim, 'utf8')).toBe('outside the workspace\n')
    expect((await stat(s.workspace)).isDirectory()).toBe(true)
    await untouched(s)
  })

  it('a rewind journal naming a file outside, cut short: the next start touches nothing it names', async () => {
    const s = await threeTurns()
    const victim = await outsideVictim()
    await appendToLog(s, [
      {
        type: 'rewind.started',
        rewindId: 'rw-forged',
        mode: 'rewind',
        callId: 'c3',
        callIds: ['c3'],
        // As if it was removing the file: finishing it would remove the victim.
        changes: [{ path: victim, relPath: 'victim.txt', from: sha256(await readFile(victim)), to: null }],
        skipped: [],
      },
    ])
    const opened = await withRewindSession(s.sessionsDir, s.sessionId, async (session) => session.recovered)
    expect(opened).toMatchObject({ rewindId: 'rw-forged', outcome: 'rolled-back' })
    expect(JSON.stringify(opened)).toContain('the log was edited or damaged')
    expect(await readFile(victim, 'utf8')).toBe('outside the workspace\n')
    await untouched(s, 1)
  })

  it('a rewind journal naming a trash of its own choosing, cut short: nothing is moved in from it', async () => {
    const s = await threeTurns()
    const outside = dirname(await outsideVictim())
    // Put back from that trash, `<outside>/0` would come into the workspace (where the tools read it).
    await mkdir(join(outside, '0'))
    await writeFile(join(outside, '0', 'secret.txt'), 'outside the workspace\n')
    for (const rewindId of ['rw-forged', '../../../elsewhere']) {
      await appendToLog(s, [
        {
          type: 'rewind.started',
          rewindId,
          mode: 'rewind',
          callId: 'c3',
          callIds: ['c3'],
          changes: [{ path: join(s.workspace, 'made'), relPath: 'made', from: 'dir:755', to: null }],
          skipped: [],
          trash: {
            dir: rewindId === 'rw-forged' ? outside : join(s.sessionsDir, rewindId),
            folders: [join(s.workspace, 'made')],
          },
        },
      ])
      const opened = await withRewindSession(s.sessionsDir, s.sessionId, async (session) => session.recovered)
      expect(opened).toMatchObject({ rewindId, outcome: 'rolled-back' })
      expect(JSON.stringify(opened)).toContain('the log was edited or damaged')
      expect(await readFile(join(outside, '0', 'secret.txt'), 'utf8')).toBe('outside the workspace\n')
      await expect(stat(join(s.workspace, 'made'))).rejects.toThrow()
    }
  })

  it('a content the store does not have, a store cut short, a store deleted: refused, nothing changed', async () => {
    const s = await threeTurns()
    const pack = join(s.sessionsDir, s.sessionId, 'preimages', 'preimages.pack')
    await appendToLog(s, [
      queued('c4', 4, 'write_file'),
      {
        type: 'file.preimage',
        callId: 'c4',
        path: join(s.workspace, 'a.txt'),
        relPath: 'a.txt',
        hash: 'f'.repeat(64),
      },
    ])
    expect(await rewind(s, { mode: 'undo', callId: 'c4' })).toEqual({
      ok: false,
      reason: `The content of a.txt before that call cannot be restored: The content ${'f'.repeat(12)} is not in this session's store.`,
    })
    // Torn: the last records cut in the middle (a crash, a full disk).
    await truncate(pack, 10)
    expect(await rewind(s, { mode: 'rewind', callId: 'c2' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('cannot be restored'),
    })
    await rm(pack)
    expect(await rewind(s, { mode: 'rewind', callId: 'c2' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('cannot be restored'),
    })
    await untouched(s)
  })

  it('a file that cannot be read (a name too long for the file system): named and left, no crash', async () => {
    const s = await threeTurns()
    const name = 'n'.repeat(300)
    await appendToLog(s, [
      queued('c4', 4, 'write_file'),
      { type: 'file.preimage', callId: 'c4', path: join(s.workspace, name), relPath: name, hash: null },
    ])
    expect(await rewind(s, { mode: 'undo', callId: 'c4' }, [name])).toEqual({
      ok: false,
      reason: expect.stringMatching(
        new RegExp(`^Nothing was rewound: ${name} could not be read \\(ENAMETOOLONG`),
      ),
    })
    await untouched(s)
  })

  it('a store whose record is a change of itself (a loop): refused, not followed forever', async () => {
    const s = await threeTurns()
    const pack = join(s.sessionsDir, s.sessionId, 'preimages', 'preimages.pack')
    const looped = 'e'.repeat(64)
    const header = { hash: looped, len: 1, base: looped, prefix: 0, suffix: 0, depth: 1 }
    await appendFile(pack, `${JSON.stringify(header)}\nx\n`)
    await appendToLog(s, [
      queued('c4', 4, 'write_file'),
      {
        type: 'file.preimage',
        callId: 'c4',
        path: join(s.workspace, 'a.txt'),
        relPath: 'a.txt',
        hash: looped,
      },
    ])
    expect(await rewind(s, { mode: 'undo', callId: 'c4' })).toEqual({
      ok: false,
      reason: `The content of a.txt before that call cannot be restored: The stored content ${looped.slice(0, 12)} is a chain of changes that never ends.`,
    })
    await untouched(s)
  })

  it('the workspace moved, a link left in its place: nothing is written through the link', async () => {
    const s = await threeTurns()
    const moved = `${s.workspace}-moved`
    cleanup.push(moved)
    await rename(s.workspace, moved)
    await symlink(moved, s.workspace)
    const refused = await rewind(s, { mode: 'rewind', callId: 'c1' }, ['a.txt', 'b.txt'])
    expect(refused).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^Nothing was rewound: a\.txt was left alone: its folder/),
    })
    expect(await readFile(join(moved, 'a.txt'), 'utf8')).toBe('ONE\n')
    expect(await readFile(join(moved, 'b.txt'), 'utf8')).toBe('bee\n')
  })
})
