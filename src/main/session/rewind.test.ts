import type { Stats } from 'node:fs'
import { chmod, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { reduceEvents } from '../../shared/reducer'
import { buildConversation } from './conversation'
import { listSessions } from './store'
import { applyRewind, planRewind, type RewindRequest } from './rewind'
import { withRewindSession } from './rewind-session'
import {
  fileExists,
  fileText,
  recordSession,
  sessionEvents,
  type RecordedSession,
} from './test-fixtures/recorded-session'
import { removedAfterEach } from '../test-fixtures/temp-dir'

const cleanup = removedAfterEach()

/**
 * Four calls over three turns: c1 creates a.txt, c2 edits it, c3 creates b.txt, c4 edits a.txt again.
 */
async function fourCalls(): Promise<RecordedSession> {
  const s = await recordSession()
  cleanup.push(s.sessionsDir, s.workspace)
  await writeFile(join(s.workspace, 'keep.txt'), 'not touched by the agent\n')
  await s.call(1, 'c1', 'write_file', { path: 'a.txt', content: 'one\ntwo\nthree\n' })
  await s.call(2, 'c2', 'edit_file', { path: 'a.txt', old_string: 'two', new_string: 'TWO' })
  await s.call(2, 'c3', 'write_file', { path: 'sub/b.txt', content: 'bee\n' })
  await s.call(3, 'c4', 'edit_file', { path: 'a.txt', old_string: 'three', new_string: 'THREE' })
  await s.close()
  return s
}

async function rewind(s: RecordedSession, request: RewindRequest, rewindConflicts: string[] = []) {
  return withRewindSession(s.sessionsDir, s.sessionId, async (session) => {
    const plan = await planRewind(session.events, session.store, session.workspace, request)
    if (!plan.ok) return plan
    return applyRewind(plan, session.store, session.log, { rewindConflicts })
  })
}

describe('rewind', () => {
  it('puts every file back as it was just before the call, removing files created later', async () => {
    const s = await fourCalls()
    const done = await rewind(s, { mode: 'rewind', callId: 'c2' })
    expect(done.ok).toBe(true)
    expect(await fileText(s, 'a.txt')).toBe('one\ntwo\nthree\n')
    expect(await fileExists(s, 'sub/b.txt')).toBe(false)
    expect(await fileText(s, 'keep.txt')).toBe('not touched by the agent\n')

    const state = reduceEvents(await sessionEvents(s))
    const rw = state.rewinds.at(-1)
    expect(rw).toMatchObject({ status: 'done', mode: 'rewind', callId: 'c2' })
    const calls = Object.fromEntries(
      state.turns.flatMap((t) => Object.values(t.calls)).map((c) => [c.callId, c]),
    )
    expect(calls.c1?.rewoundBy).toBeUndefined()
    for (const id of ['c2', 'c3', 'c4']) expect(calls[id]?.rewoundBy).toBe(rw?.rewindId)
  })

  it('removes a file the call itself created when rewinding to it', async () => {
    const s = await fourCalls()
    expect((await rewind(s, { mode: 'rewind', callId: 'c1' })).ok).toBe(true)
    expect(await fileExists(s, 'a.txt')).toBe(false)
    expect(await fileExists(s, 'sub/b.txt')).toBe(false)
  })

  it('undoes one call: only its files, to their content before it', async () => {
    const s = await fourCalls()
    expect((await rewind(s, { mode: 'undo', callId: 'c3' })).ok).toBe(true)
    expect(await fileExists(s, 'sub/b.txt')).toBe(false)
    expect(await fileText(s, 'a.txt')).toBe('one\nTWO\nTHREE\n')
    // ...and the undone file's later rewind does not see Lanes' own undo as someone else's change.
    expect((await rewind(s, { mode: 'undo', callId: 'c4' })).ok).toBe(true)
    expect(await fileText(s, 'a.txt')).toBe('one\nTWO\nthree\n')
  })

  it('never overwrites a file changed since by someone else: skipped and reported, or rewound when chosen', async () => {
    const s = await fourCalls()
    await writeFile(join(s.workspace, 'a.txt'), 'the user rewrote this\n')
    const plan = await withRewindSession(s.sessionsDir, s.sessionId, async (session) =>
      planRewind(session.events, session.store, session.workspace, { mode: 'rewind', callId: 'c2' }),
    )
    if (!plan.ok) throw new Error(plan.reason)
    const a = plan.files.find((f) => f.relPath === 'a.txt')
    expect(a).toMatchObject({ conflict: true })
    expect(a?.lanesLeft).not.toBe(a?.now)

    const first = await rewind(s, { mode: 'rewind', callId: 'c2' })
    if (!first.ok) throw new Error(first.reason)
    expect(first.skipped).toEqual([{ relPath: 'a.txt', reason: expect.stringContaining('changed since') }])
    expect(await fileText(s, 'a.txt')).toBe('the user rewrote this\n')
    expect(await fileExists(s, 'sub/b.txt')).toBe(false)

    const second = await rewind(s, { mode: 'rewind', callId: 'c2' }, ['a.txt'])
    expect(second.ok).toBe(true)
    expect(await fileText(s, 'a.txt')).toBe('one\ntwo\nthree\n')
  })

  describe('finds a file a tool wrote unchanged by its identity, taken once the clock has moved on', () => {
    /** c1 writes a.txt, c2 rewrites it (as long): the rewind to c2 puts back c1's content. */
    async function twoWrites(changeRightAfter?: (file: string, written: Stats) => Promise<void>) {
      const s = await recordSession()
      cleanup.push(s.sessionsDir, s.workspace)
      const file = join(s.workspace, 'a.txt')
      await s.call(1, 'c1', 'write_file', { path: 'a.txt', content: 'first\n' })
      await s.call(2, 'c2', 'write_file', { path: 'a.txt', content: 'Lanes\n' })
      await changeRightAfter?.(file, await stat(file))
      await s.close()
      return { s, file }
    }
    /** The same size and modification time as the tool left it: only the content (and the ctime) differs. */
    const rewriteInPlace = async (file: string, written: Stats) => {
      await writeFile(file, 'users\n')
      await utimes(file, written.atime, written.mtime)
    }

    it('and rewinds it, its identity logged with the write', async () => {
      const { s, file } = await twoWrites()
      const ids = (await sessionEvents(s)).filter((e) => e.type === 'file.snapshot' && e.id !== undefined)
      expect(ids.map((e) => e.type === 'file.snapshot' && e.path)).toEqual([file])
      const done = await rewind(s, { mode: 'rewind', callId: 'c2' })
      expect(done).toMatchObject({ ok: true, skipped: [] })
      expect(await fileText(s, 'a.txt')).toBe('first\n')
    })

    it('but not one rewritten within the clock’s granularity of the write: no identity, a conflict', async () => {
      const { s } = await twoWrites(rewriteInPlace)
      expect((await sessionEvents(s)).some((e) => e.type === 'file.snapshot' && e.id !== undefined)).toBe(
        false,
      )
      const done = await rewind(s, { mode: 'rewind', callId: 'c2' })
      expect(done).toMatchObject({ ok: false, reason: expect.stringContaining('changed since') })
      expect(await fileText(s, 'a.txt')).toBe('users\n')
    })

    it('nor one rewritten after its identity was taken, its times set back', async () => {
      const { s, file } = await twoWrites()
      await rewriteInPlace(file, await stat(file))
      const done = await rewind(s, { mode: 'rewind', callId: 'c2' })
      expect(done).toMatchObject({ ok: false, reason: expect.stringContaining('changed since') })
      expect(await fileText(s, 'a.txt')).toBe('users\n')
    })
  })

  it('takes the conversation back to the turn that held the call', async () => {
    const s = await fourCalls()
    expect(
      buildConversation(await sessionEvents(s)).messages.filter((m) => m.role === 'assistant'),
    ).toHaveLength(3)
    expect((await rewind(s, { mode: 'rewind', callId: 'c3', conversation: true })).ok).toBe(true)
    const all = await sessionEvents(s)
    const conversation = buildConversation(all)
    expect(conversation.messages.filter((m) => m.role === 'assistant')).toHaveLength(1)
    expect(conversation.messages.at(-1)?.role).toBe('user')
    const state = reduceEvents(all)
    expect(state.status).toBe('paused')
    expect(state.turns.filter((t) => t.rewoundBy !== undefined).map((t) => t.turn)).toEqual([2, 3])
    // The session list offers it for continuing, like a paused run.
    const [summary] = await listSessions(s.sessionsDir)
    expect(summary?.status).toBe('paused')
  })

  describe('refuses, changing nothing', () => {
    const untouched = async (s: RecordedSession) => {
      expect(await fileText(s, 'a.txt')).toBe('one\nTWO\nTHREE\n')
      expect(await fileText(s, 'sub/b.txt')).toBe('bee\n')
      const state = reduceEvents(await sessionEvents(s))
      expect(state.rewinds).toEqual([])
    }

    it('a call the session does not have', async () => {
      const s = await fourCalls()
      expect(await rewind(s, { mode: 'rewind', callId: 'nope' })).toEqual({
        ok: false,
        reason: 'This session has no call nope.',
      })
      await untouched(s)
    })

    it('a pre-image that is missing from the store', async () => {
      const s = await fourCalls()
      await rm(join(s.sessionsDir, s.sessionId, 'preimages'), { recursive: true })
      const refused = await rewind(s, { mode: 'rewind', callId: 'c2' })
      expect(refused).toMatchObject({ ok: false, reason: expect.stringContaining('cannot be restored') })
      await untouched(s)
    })

    it('a read-only file', async () => {
      const s = await fourCalls()
      await chmod(join(s.workspace, 'sub/b.txt'), 0o444)
      const refused = await rewind(s, { mode: 'rewind', callId: 'c2' })
      expect(refused).toMatchObject({ ok: false, reason: expect.stringContaining('read-only') })
      await untouched(s)
    })

    it('a workspace folder that no longer exists', async () => {
      const s = await fourCalls()
      await rename(s.workspace, `${s.workspace}-moved`)
      cleanup.push(`${s.workspace}-moved`)
      const refused = await rewind(s, { mode: 'rewind', callId: 'c2' })
      expect(refused).toMatchObject({ ok: false, reason: expect.stringContaining('no longer exists') })
      await rename(`${s.workspace}-moved`, s.workspace)
      await untouched(s)
    })

    it('a journal that cannot be made durable: no file is renamed in, and no temp file is left', async () => {
      const s = await fourCalls()
      await expect(
        withRewindSession(s.sessionsDir, s.sessionId, async (session) => {
          const plan = await planRewind(session.events, session.store, session.workspace, {
            mode: 'rewind',
            callId: 'c4',
          })
          if (!plan.ok) return plan
          // a.txt is rewritten in place: its temp file is written while the journal syncs, then this fails.
          const log = { ...session.log, sync: () => Promise.reject(new Error('the disk failed')) }
          return applyRewind(plan, session.store, log)
        }),
      ).rejects.toThrow('the disk failed')
      expect(await fileText(s, 'a.txt')).toBe('one\nTWO\nTHREE\n')
      expect((await readdir(s.workspace)).filter((name) => name.endsWith('.tmp'))).toEqual([])
    })

    it('a rewind to where the files already are', async () => {
      const s = await fourCalls()
      expect((await rewind(s, { mode: 'rewind', callId: 'c2' })).ok).toBe(true)
      expect(await rewind(s, { mode: 'rewind', callId: 'c2' })).toMatchObject({
        ok: false,
        reason: expect.stringContaining('Nothing to rewind'),
      })
    })
  })
})
