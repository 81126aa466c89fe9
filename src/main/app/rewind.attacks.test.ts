import { execFileSync } from 'node:child_process'
import {
  chmod,
  link,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentSession } from '../agent/agent-session'
import type { Scenario } from '../agent/scenario'
import { byType, cleanUpScriptedRuns, scriptedRun } from '../agent/test-fixtures/scripted-run'
import { writeFileAtomic } from '../fs/atomic-write'
import { applyRewindFromApp, planRewindView } from './rewind-view'
import { removedAfterEach } from '../test-fixtures/temp-dir'
import { sessionPaths } from '../session/log'
import { fileText, recordCalls, type RecordedSession } from '../session/test-fixtures/recorded-session'

// Undo and rewind under attack, on real folders: a hostile model (the real SDK against the scripted model over
// HTTP, real tools, a real command) or a hostile folder puts something else where the session's files were, and
// the user rewinds. Nothing outside the workspace may be read, written or removed, nothing may hang, and what
// cannot be rewound is said plainly while the rest is.

afterEach(cleanUpScriptedRuns)
const cleanup = removedAfterEach()

/** What a folder holds, name by name, with each file's text (a link as its target). */
async function contentsOf(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of (await readdir(dir)).sort()) {
    const info = await stat(join(dir, name)).catch(() => undefined)
    out[name] = info?.isFile()
      ? await readFile(join(dir, name), 'utf8')
      : info?.isDirectory()
        ? '<dir>'
        : '<other>'
  }
  return out
}

const SECRET = 'OUTSIDE SECRET: the user key\n'

describe('a model that swaps a folder for a link outside the workspace, then the user rewinds', () => {
  it(
    'reads, writes and removes nothing outside; says which files it left; rewinds the rest',
    { timeout: 60_000 },
    async () => {
      // The command is a script the model wrote (each step of it looks harmless to the command check).
      const swap =
        "const fs = require('fs')\nfs.renameSync('sub', 'sub.old')\nfs.symlinkSync(require('path').resolve('../outside'), 'sub')\n"
      const scenario: Scenario = {
        turns: [
          { blocks: [{ tool: 'read_file', input: { path: 'sub/a.txt' } }] },
          {
            blocks: [
              { tool: 'write_file', input: { path: 'sub/a.txt', content: 'model wrote a\n' } },
              { tool: 'write_file', input: { path: 'sub/new.txt', content: 'model made new\n' } },
              { tool: 'write_file', input: { path: 'notes.txt', content: 'model notes\n' } },
            ],
          },
          { blocks: [{ tool: 'write_file', input: { path: 'swap.js', content: swap } }] },
          { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
        ],
      }
      const run = await scriptedRun(scenario, {
        files: { 'sub/a.txt': 'original a\n' },
        approvals: 'all',
        strict: true,
        prefix: 'lanes-rewind-attack-',
      })
      const outside = join(run.base, 'outside')
      await mkdir(outside)
      await writeFile(join(outside, 'a.txt'), SECRET)
      await writeFile(join(outside, 'new.txt'), 'outside, to keep\n')
      const before = await contentsOf(outside)
      const session = await AgentSession.create(run.options)
      expect(await session.run('change the files')).toEqual({ status: 'finished' })
      await session.close()
      // The script runs outside Lanes (a command Lanes runs is captured, and its changes are undone with it:
      // issue 20), so the rewind meets a folder that now leads elsewhere.
      execFileSync(process.execPath, ['swap.js'], { cwd: run.workspace })
      const calls = byType(run.events, 'tool.queued')
      const firstWrite = calls.find((c) => c.name === 'write_file')?.callId as string
      const target = { sessionId: session.sessionId, mode: 'rewind' as const, callId: firstWrite }

      const view = await planRewindView(run.sessionsDir, target)
      if ('ok' in view) throw new Error(view.reason)
      // The preview never shows what the link leads to.
      expect(JSON.stringify(view)).not.toContain('OUTSIDE SECRET')
      expect(JSON.stringify(view)).not.toContain('outside, to keep')
      const byPath = new Map(view.files.map((f) => [f.relPath, f]))
      for (const rel of ['sub/a.txt', 'sub/new.txt']) {
        expect(byPath.get(rel)).toMatchObject({ conflict: true })
        expect(byPath.get(rel)?.blocked).toContain(
          `its folder ${join(run.workspace, 'sub')} now leads to ${outside}`,
        )
      }
      // Even chosen, the blocked files are skipped; the others are rewound.
      const done = await applyRewindFromApp(run.sessionsDir, {
        ...target,
        rewindConflicts: ['sub/a.txt', 'sub/new.txt'],
      })
      if ('ok' in done) throw new Error(done.reason)
      expect(done.skipped.map((s) => s.relPath).sort()).toEqual(['sub/a.txt', 'sub/new.txt'])
      expect(done.changed.map((c) => c.relPath).sort()).toEqual(['notes.txt', 'swap.js'])
      expect(await contentsOf(outside)).toEqual(before)
      // Nor is anything outside copied into the session's store of contents.
      const pack = await readFile(
        join(sessionPaths(run.sessionsDir, session.sessionId).outputDir, 'preimages', 'preimages.pack'),
      )
      expect(pack.includes('OUTSIDE SECRET')).toBe(false)
      expect(pack.includes('outside, to keep')).toBe(false)

      // The session's own undo (the engine, between runs) goes the same way.
      const { session: again } = await AgentSession.open(session.sessionId, run.options)
      const undo = await again.rewind({ mode: 'undo', callId: firstWrite }, ['sub/a.txt'])
      await again.close()
      expect(undo).toMatchObject({ ok: false })
      expect(await contentsOf(outside)).toEqual(before)
    },
  )
})

describe('a folder to make again, behind a link to outside the workspace', () => {
  it('makes no folder outside (the link is not followed to make the missing ones)', async () => {
    const s = await recordCalls(
      [
        [1, 'c1', 'write_file', { path: 'sub/deep/a.txt', content: 'alpha\n' }],
        [2, 'c2', 'edit_file', { path: 'sub/deep/a.txt', old_string: 'alpha', new_string: 'ALPHA' }],
      ],
      cleanup,
    )
    const outside = join(s.sessionsDir, 'outside')
    await mkdir(outside)
    await rm(join(s.workspace, 'sub'), { recursive: true })
    await symlink(outside, join(s.workspace, 'sub'))
    const target = { sessionId: s.sessionId, mode: 'undo' as const, callId: 'c2' }
    const view = await planRewindView(s.sessionsDir, target)
    if ('ok' in view) throw new Error(view.reason)
    const blocked = `sub/deep/a.txt was left alone: its folder ${join(s.workspace, 'sub/deep')} now leads to ${join(outside, 'deep')}`
    expect(view.files).toMatchObject([{ relPath: 'sub/deep/a.txt', blocked }])
    const done = await applyRewindFromApp(s.sessionsDir, { ...target, rewindConflicts: ['sub/deep/a.txt'] })
    expect(done).toEqual({ ok: false, reason: `Nothing was rewound: ${blocked}.` })
    expect(await readdir(outside)).toEqual([])
    // Even past the plan (the link made after it), a write makes no folder there.
    expect(await writeFileAtomic(join(s.workspace, 'sub/deep/a.txt'), 'x\n')).toMatchObject({ ok: false })
    expect(await readdir(outside)).toEqual([])
  })
})

/** c1 writes a.txt, c2 creates b.txt, c3 creates sub/c.txt: what the hostile folder then replaces. */
function threeFiles(): Promise<RecordedSession> {
  return recordCalls(
    [
      [1, 'c1', 'write_file', { path: 'a.txt', content: 'alpha\n' }],
      [1, 'c2', 'write_file', { path: 'b.txt', content: 'bravo\n' }],
      [2, 'c3', 'write_file', { path: 'sub/c.txt', content: 'charlie\n' }],
    ],
    cleanup,
  )
}

async function plannedWithin(s: RecordedSession, ms: number) {
  const started = performance.now()
  const view = await planRewindView(s.sessionsDir, { sessionId: s.sessionId, mode: 'rewind', callId: 'c1' })
  expect(performance.now() - started).toBeLessThan(ms)
  if ('ok' in view) throw new Error(view.reason)
  return view
}

describe('files replaced by something else', { timeout: 60_000 }, () => {
  let server: Server | undefined
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())))

  it('a FIFO, a socket, a directory and links (to /etc/passwd, to a secret inside): left, named, never read', async () => {
    const s = await threeFiles()
    const ws = s.workspace
    await writeFile(join(ws, '.env'), 'API_KEY=inside-secret\n')
    await rename(join(ws, 'a.txt'), join(ws, 'a.old'))
    execFileSync('mkfifo', [join(ws, 'a.txt')])
    await rename(join(ws, 'b.txt'), join(ws, 'b.old'))
    await symlink('/etc/passwd', join(ws, 'b.txt'))
    await rename(join(ws, 'sub/c.txt'), join(ws, 'sub/c.old'))
    await symlink(join(ws, '.env'), join(ws, 'sub/c.txt'))
    const view = await plannedWithin(s, 5_000)
    expect(JSON.stringify(view)).not.toMatch(/root:|inside-secret/)
    expect(view.files.map((f) => [f.relPath, f.blocked])).toEqual([
      ['a.txt', 'a.txt is no longer a regular file'],
      ['b.txt', 'b.txt is a symbolic link, not a regular file'],
      ['sub/c.txt', 'sub/c.txt is a symbolic link, not a regular file'],
    ])
    const done = await applyRewindFromApp(s.sessionsDir, {
      sessionId: s.sessionId,
      mode: 'rewind',
      callId: 'c1',
      rewindConflicts: ['a.txt', 'b.txt', 'sub/c.txt'],
    })
    expect(done).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^Nothing was rewound: a\.txt is no longer/),
    })
    expect(await readFile(join(ws, '.env'), 'utf8')).toBe('API_KEY=inside-secret\n')

    // A socket and a directory in the files' places.
    await rename(join(ws, 'a.txt'), join(ws, 'a.fifo'))
    server = createServer()
    await new Promise<void>((resolve) => (server as Server).listen(join(ws, 'a.txt'), resolve))
    await rm(join(ws, 'b.txt'))
    await mkdir(join(ws, 'b.txt'))
    const again = await plannedWithin(s, 5_000)
    expect(again.files.slice(0, 2).map((f) => [f.relPath, f.blocked])).toEqual([
      ['a.txt', 'a.txt is no longer a regular file'],
      ['b.txt', 'b.txt is no longer a regular file'],
    ])
  })

  it('a file of hundreds of megabytes: refused by its size at once, never read', async () => {
    const s = await threeFiles()
    // Sparse: costs no disk, but reading it would cost 300 MB of memory and the time to read them.
    await truncate(join(s.workspace, 'b.txt'), 300 * 2 ** 20)
    const heapBefore = process.memoryUsage().rss
    const view = await plannedWithin(s, 2_000)
    expect(process.memoryUsage().rss - heapBefore).toBeLessThan(100 * 2 ** 20)
    expect(view.files.find((f) => f.relPath === 'b.txt')?.blocked).toBe(
      'b.txt is 300.0 MiB, larger than Lanes keeps (128 MiB)',
    )
  })

  it('a read-only file among others: a clear refusal that changes none of them', async () => {
    const s = await threeFiles()
    await chmod(join(s.workspace, 'sub/c.txt'), 0o444)
    const done = await applyRewindFromApp(s.sessionsDir, {
      sessionId: s.sessionId,
      mode: 'rewind',
      callId: 'c1',
    })
    expect(done).toEqual({
      ok: false,
      reason: 'sub/c.txt is read-only; make it writable first. Nothing was changed.',
    })
    expect(await readdir(s.workspace)).toEqual(['a.txt', 'b.txt', 'sub'])
    expect(await fileText(s, 'sub/c.txt')).toBe('charlie\n')
  })

  it('a file hard-linked to one outside: the rewind replaces the name, the outside file keeps its content', async () => {
    const s = await recordCalls(
      [
        [1, 'c1', 'write_file', { path: 'a.txt', content: 'alpha\n' }],
        [2, 'c2', 'edit_file', { path: 'a.txt', old_string: 'alpha', new_string: 'ALPHA' }],
      ],
      cleanup,
    )
    const outsideFile = join(s.sessionsDir, 'outside.txt')
    await link(join(s.workspace, 'a.txt'), outsideFile)
    const done = await applyRewindFromApp(s.sessionsDir, {
      sessionId: s.sessionId,
      mode: 'undo',
      callId: 'c2',
    })
    expect(done).toMatchObject({ changed: [{ relPath: 'a.txt', action: 'restore' }] })
    expect(await fileText(s, 'a.txt')).toBe('alpha\n')
    expect(await readFile(outsideFile, 'utf8')).toBe('ALPHA\n')
  })
})

describe('the user edits a file between the preview and the apply', { timeout: 60_000 }, () => {
  it('never rewinds a content the user did not look at, even one chosen in the dialog', async () => {
    const s = await threeFiles()
    await writeFile(join(s.workspace, 'b.txt'), 'bravo, edited by the user\n')
    const target = { sessionId: s.sessionId, mode: 'rewind' as const, callId: 'c2' }
    const view = await planRewindView(s.sessionsDir, target)
    if ('ok' in view) throw new Error(view.reason)
    expect(view.files.find((f) => f.relPath === 'b.txt')?.versions?.now).toBe('bravo, edited by the user\n')
    // The user chose to rewind b.txt as shown; meanwhile they (or a command still running) typed more.
    await writeFile(join(s.workspace, 'b.txt'), 'bravo, edited by the user, and more typed since\n')
    const done = await applyRewindFromApp(s.sessionsDir, { ...target, rewindConflicts: ['b.txt'] })
    expect(done).toEqual({
      ok: false,
      reason: 'Changed since the preview: b.txt. Look at the rewind again; nothing was changed.',
    })
    expect(await fileText(s, 'b.txt')).toBe('bravo, edited by the user, and more typed since\n')
    expect(await fileText(s, 'sub/c.txt')).toBe('charlie\n')
    // Looked at again, it is applied as shown.
    expect(await planRewindView(s.sessionsDir, target)).not.toHaveProperty('ok')
    expect(await applyRewindFromApp(s.sessionsDir, { ...target, rewindConflicts: ['b.txt'] })).toMatchObject({
      skipped: [],
    })
    expect((await readdir(s.workspace)).sort()).toEqual(['a.txt', 'sub'])
    expect(await readdir(join(s.workspace, 'sub'))).toEqual([])
  })

  it('a file not in the plan when previewed is refused if it joins it before the apply', async () => {
    const s = await threeFiles()
    const target = { sessionId: s.sessionId, mode: 'rewind' as const, callId: 'c2' }
    await rm(join(s.workspace, 'sub/c.txt')) // already as at the point: not in the preview
    const view = await planRewindView(s.sessionsDir, target)
    if ('ok' in view) throw new Error(view.reason)
    expect(view.files.map((f) => f.relPath)).toEqual(['b.txt'])
    await writeFile(join(s.workspace, 'sub/c.txt'), 'made again by a command\n')
    expect(await applyRewindFromApp(s.sessionsDir, { ...target, rewindConflicts: ['sub/c.txt'] })).toEqual({
      ok: false,
      reason: 'Changed since the preview: sub/c.txt. Look at the rewind again; nothing was changed.',
    })
    expect(await fileText(s, 'b.txt')).toBe('bravo\n')
    expect(await fileText(s, 'sub/c.txt')).toBe('made again by a command\n')
  })
})

describe('a write reviewed before an undo, approved after it', () => {
  it(
    'is not written over the file the undo put back: the review no longer matches it',
    { timeout: 60_000 },
    async () => {
      const scenario: Scenario = {
        turns: [
          { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }] },
          { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'v1\n' } }] },
          { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'v2\n' } }] },
          { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
        ],
      }
      const run = await scriptedRun(scenario, {
        files: { 'a.txt': 'the user wrote this\n' },
        approvals: 'pause',
        strict: true,
        prefix: 'lanes-rewind-attack-',
      })
      const first = await AgentSession.create(run.options)
      expect(await first.run('change a.txt')).toMatchObject({ status: 'paused' })
      await first.close()
      const writes = () => byType(run.events, 'tool.queued').filter((e) => e.name === 'write_file')
      const v1 = writes()[0]?.callId as string
      const second = (await AgentSession.open(first.sessionId, run.options)).session
      expect(await second.continue([{ callId: v1, decision: 'approved' }])).toMatchObject({
        status: 'paused',
      })
      await second.close()
      expect(await readFile(join(run.workspace, 'a.txt'), 'utf8')).toBe('v1\n')
      // The v1 -> v2 write waits for review; the user undoes v1 first.
      const undo = await applyRewindFromApp(run.sessionsDir, {
        sessionId: first.sessionId,
        mode: 'undo',
        callId: v1,
      })
      expect(undo).toMatchObject({ changed: [{ relPath: 'a.txt', action: 'restore' }] })
      const v2 = writes()[1]?.callId as string
      const third = (await AgentSession.open(first.sessionId, run.options)).session
      await third.continue([{ callId: v2, decision: 'approved' }])
      await third.close()
      // The approval was given for a diff from v1; the file is no longer v1, so it is not overwritten.
      expect(await readFile(join(run.workspace, 'a.txt'), 'utf8')).toBe('the user wrote this\n')
      const result = byType(run.events, 'tool.finished').find((f) => f.callId === v2)
      expect(result?.isError).toBe(true)
    },
  )
})
