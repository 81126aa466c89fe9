import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  truncate,
  utimes,
  writeFile,
} from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { sessionPaths } from '../session/log'
import { contentHashOf } from '../fs/path-token'
import { preimagesDir, PreimageStore } from '../session/preimages'
import { applyRewind, planRewind } from '../session/rewind'
import { withRewindSession } from '../session/rewind-session'
import { trashDeleted, trashRoot } from '../session/rewind-trash'
import { captureSupport } from '../tools/bash/capture/overlay'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { tree } from '../test-fixtures/tree'
import { commandRuns } from './test-fixtures/command-runs'
import { child } from './test-fixtures/rewind-processes'
import { runLanes } from './test-fixtures/run-lanes'

/**
 * Issue 20 end to end: `lanes run` with the scripted model approves a command whose changes are captured on a
 * copy-on-write layer and landed; `lanes rewind` takes every one of them back, and a crash while landing is
 * rolled back on the next start.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the command capture tests: ${JSON.stringify(captureSupport())}`)

const { prepare, landed: ranCommand, base } = commandRuns('lanes-capture-cli-')

const callOf = (events: SessionEvent[]) => {
  const queued = events.find((e) => e.type === 'tool.queued')
  return queued?.type === 'tool.queued' ? queued.callId : ''
}

describe.skipIf(!overlay)('a command’s changes through lanes run', { timeout: 60_000 }, () => {
  it('are landed, shown in the result, and fully undone by lanes rewind', async () => {
    const t = await prepare(
      {
        'src/a.ts': 'export const a = 1\n',
        'src/gone.ts': 'gone\n',
        'src/old-name.ts': 'moved\n',
        'bin/run': '#!/bin/sh\necho run\n',
        'docs/x.md': 'x\n',
        'docs/y.md': 'y\n',
      },
      [
        'set -e',
        "sed -i 's/1/2/' src/a.ts",
        'rm src/gone.ts',
        'mv src/old-name.ts src/new-name.ts',
        'chmod 755 bin/run',
        'ln -s ../src/a.ts bin/a-link',
        'mkdir -p build/out && echo built > build/out/app.js',
        // Folders in folders: undo removes them one at a time, the deepest first.
        'mkdir -p build/out/a/b/c build/lib && echo c > build/out/a/b/c/c.js && echo l > build/lib/l.js',
        'for i in $(seq 1 40); do mkdir -p build/many/m$i/n; done',
        'rm -rf docs && mkdir docs && echo new > docs/z.md',
        'ln -sfn new-target src/dangling',
      ],
    )
    await symlink('a.ts', join(t.workspace, 'src/alias'))
    await chmod(join(t.workspace, 'docs'), 0o750)
    const before = await tree(t.workspace)
    const ran = await t.run()
    expect(ran.code, ran.stderr).toBe(0)
    const finished = ran.events.find((e) => e.type === 'tool.finished')
    expect(finished, JSON.stringify(finished)).toMatchObject({ isError: false })
    const changes = (finished as unknown as { metadata: { changes: { mode: string; counts: object } } })
      .metadata.changes
    expect(changes.mode).toBe('overlay')
    // docs/ was made again (0o755 where it was 0o750): a mode change too.
    expect(changes.counts).toEqual({ added: 94, changed: 1, removed: 4, modeChanged: 2 })
    const after = await tree(t.workspace)
    expect(after['src/a.ts']).toBe('644 export const a = 2\n')
    expect(after['bin/run']).toMatch(/^755 /)
    expect(after['bin/a-link']).toBe('-> ../src/a.ts')
    expect(after['docs/z.md']).toBe('644 new\n')
    expect(after['docs/x.md']).toBeUndefined()
    expect(ran.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['file.preimage', 'command.landing', 'command.landed']),
    )

    const sessionId = ran.events.find((e) => e.type === 'session.created')!.sessionId
    const rewound = await runLanes([
      'rewind',
      sessionId,
      '--to',
      callOf(ran.events),
      '--files-only',
      '--sessions-dir',
      t.sessionsDir,
    ])
    expect(rewound.code, rewound.stderr).toBe(0)
    expect(await tree(t.workspace)).toEqual(before)
  })

  it('discards protected changes headless and says so, unless --land-protected', async () => {
    const lines = [
      'echo ../elsewhere > .git/commondir',
      'echo TOKEN=1 > .env.local',
      'mkdir -p .git/modules/s && echo "[core]" > .git/modules/s/config',
      'echo fine > ok.txt',
    ]
    const t = await prepare({ 'a.txt': 'a\n' }, lines)
    execFileSync('git', ['init', '-q', t.workspace])
    const ran = await t.run()
    expect(ran.code, ran.stderr).toBe(0)
    const held = ran.events.find((e) => e.type === 'command.held')
    expect(held).toMatchObject({ landed: false, count: 5 })
    expect(held?.type === 'command.held' && held.paths.map((p) => p.relPath).sort()).toEqual([
      '.env.local',
      '.git/commondir',
      '.git/modules',
      '.git/modules/s',
      '.git/modules/s/config',
    ])
    await expect(lstat(join(t.workspace, '.git/commondir'))).rejects.toThrow()
    await expect(lstat(join(t.workspace, '.env.local'))).rejects.toThrow()
    expect(await readFile(join(t.workspace, 'ok.txt'), 'utf8')).toBe('fine\n')

    const t2 = await prepare({ 'a.txt': 'a\n' }, lines)
    execFileSync('git', ['init', '-q', t2.workspace])
    const landed = await t2.run('--land-protected')
    expect(landed.code, landed.stderr).toBe(0)
    expect(landed.events.find((e) => e.type === 'command.held')).toMatchObject({ landed: true })
    expect(await readFile(join(t2.workspace, '.git/commondir'), 'utf8')).toBe('../elsewhere\n')
    expect(await readFile(join(t2.workspace, '.env.local'), 'utf8')).toBe('TOKEN=1\n')
  })

  it('rolls back a landing a crash cut short, on the next start', async () => {
    const t = await prepare({ 'a.txt': 'one\n', 'b.txt': 'two\n', 'c.txt': 'three\n' }, [
      'echo ONE > a.txt',
      'echo TWO > b.txt',
      'rm c.txt',
      'echo new > d.txt',
    ])
    const before = await tree(t.workspace)
    const ran = await t.run()
    expect(ran.code, ran.stderr).toBe(0)
    const sessionId = ran.events.find((e) => e.type === 'session.created')!.sessionId
    // What a crash half-way through the landing leaves: the intent logged and synced, no outcome, some paths
    // as the command left them (a.txt, d.txt) and the rest as they were (b.txt, c.txt).
    const log = sessionPaths(t.sessionsDir, sessionId).log
    const text = await readFile(log, 'utf8')
    const cut = text.indexOf('"type":"command.landed"')
    await truncate(log, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n', cut) + 1)))
    await writeFile(join(t.workspace, 'b.txt'), 'two\n')
    await writeFile(join(t.workspace, 'c.txt'), 'three\n')
    expect(await tree(t.workspace)).not.toEqual(before)

    // The next start (here: a rewind opening the session) finds the open landing and takes it back.
    const reopened = await runLanes([
      'rewind',
      sessionId,
      '--to',
      callOf(ran.events),
      '--files-only',
      '--sessions-dir',
      t.sessionsDir,
    ])
    expect(await tree(t.workspace)).toEqual(before)
    expect(reopened.code).toBe(1) // nothing left to rewind: the landing was rolled back
    const events = (await readFile(log, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as SessionEvent)
    expect(events.filter((e) => e.type === 'command.landed')).toEqual([
      expect.objectContaining({ outcome: 'rolled-back', recovered: true }),
    ])
  })
})

/** The session's trash (rewind-trash.ts): what is in it. */
async function trashOf(sessionsDir: string, sessionId: string): Promise<string[]> {
  const dir = trashRoot(preimagesDir(sessionPaths(sessionsDir, sessionId).outputDir))
  return readdir(dir).catch(() => [])
}

/** The command makes `made/` (a folder in a folder, 30 files), then waits: what it made is older than the landing. */
const MAKE = [
  'set -e',
  'mkdir -p made/a/b',
  'for i in $(seq 1 30); do echo "file $i" > made/a/f$i.js; done',
  'echo deep > made/a/b/d.js',
  'echo top > top.txt',
  'sleep 0.3',
]

describe.skipIf(!overlay)('undoing what a command made', { timeout: 60_000 }, () => {
  const undo = (t: { sessionsDir: string }, sessionId: string, callId: string) =>
    runLanes(['rewind', sessionId, '--to', callId, '--files-only', '--sessions-dir', t.sessionsDir])

  it('finds the files unchanged by their identity, moves the folder away whole, and deletes it', async () => {
    const { t, ran, before, sessionId } = await ranCommand({ 'keep.txt': 'k\n' }, MAKE)
    // Made 300 ms before the landing: old enough for their identities to be trusted.
    const made = ran.events.filter((e) => e.type === 'file.preimage' && e.relPath.endsWith('.js'))
    expect(made).toHaveLength(31)
    for (const e of made) expect(e.type === 'file.preimage' && e.afterId).toMatch(/^\d+:\d+:\d+:\d+:\d+$/)

    const undone = await undo(t, sessionId, callOf(ran.events))
    expect(undone.code, undone.stderr).toBe(0)
    expect(await tree(t.workspace)).toEqual(before)
    const events = await readLog(t.sessionsDir, sessionId)
    const started = events.find((e) => e.type === 'rewind.started')
    expect(started?.type === 'rewind.started' && started.trash?.folders).toEqual([join(t.workspace, 'made')])
    await trashDeleted()
    expect(await trashOf(t.sessionsDir, sessionId)).toEqual([])
  })

  it('catches a file edited after the landing with the same size and time, and never sends a user’s file away', async () => {
    const { t, ran, after: landed, sessionId } = await ranCommand({}, MAKE)
    const edited = join(t.workspace, 'made/a/f7.js')
    const was = await lstat(edited)
    await writeFile(edited, 'FILE 7\n')
    await utimes(edited, was.atime, was.mtime)
    // A file the user added in a folder the command made.
    await writeFile(join(t.workspace, 'made/a/b/mine.txt'), 'mine\n')

    // The folders that hold them cannot go: the undo is refused and rolled back, nothing went whole.
    const undone = await undo(t, sessionId, callOf(ran.events))
    expect(undone.code, undone.stderr).toBe(1)
    expect(await tree(t.workspace)).toEqual({
      ...landed,
      'made/a/b/mine.txt': '644 mine\n',
      'made/a/f7.js': '644 FILE 7\n',
    })
    const events = await readLog(t.sessionsDir, sessionId)
    const started = events.find((e) => e.type === 'rewind.started')
    expect(started?.type === 'rewind.started' && started.trash).toBeUndefined()
    expect(started?.type === 'rewind.started' && started.skipped.map((s) => s.relPath)).toEqual([
      'made/a/f7.js',
    ])
  })

  it('finishes on the next start an undo killed once its folder was in the trash', async () => {
    const { t, ran, before, sessionId } = await ranCommand({ 'keep.txt': 'k\n' }, MAKE)
    // Killed right after the first change: the folder's rename into the trash, the journal still open.
    const killed = await child(['crash', t.sessionsDir, sessionId, callOf(ran.events), '1'])
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    expect(await trashOf(t.sessionsDir, sessionId)).toHaveLength(1)
    await expect(lstat(join(t.workspace, 'made'))).rejects.toThrow()

    const recovered = await withRewindSession(t.sessionsDir, sessionId, async (r) => r.recovered)
    expect(recovered).toMatchObject({ outcome: 'done' })
    expect(await tree(t.workspace)).toEqual(before)
    await trashDeleted()
    expect(await trashOf(t.sessionsDir, sessionId)).toEqual([])
  })

  it('rolls back an undo killed once its folder was in the trash, when a file it changes was changed since', async () => {
    const { t, ran, after: landed, sessionId } = await ranCommand({ 'keep.txt': 'k\n' }, MAKE)
    const killed = await child(['crash', t.sessionsDir, sessionId, callOf(ran.events), '1'])
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    // Neither as the command left it nor gone: the rewind cannot be finished.
    await writeFile(join(t.workspace, 'top.txt'), 'someone else\n')

    const recovered = await withRewindSession(t.sessionsDir, sessionId, async (r) => r.recovered)
    expect(recovered).toMatchObject({ outcome: 'rolled-back' })
    // Every file the command made is back, from the trash, as it was.
    expect(await tree(t.workspace)).toEqual({ ...landed, 'top.txt': '644 someone else\n' })
    await trashDeleted()
    expect(await trashOf(t.sessionsDir, sessionId)).toEqual([])
  })

  it.skipIf(!existsSync('/dev/shm'))(
    'removes file by file, keeping every content first, where the trash is on another file system',
    async () => {
      const other = await mkdtemp(join('/dev/shm', 'lanes-sessions-'))
      try {
        const { t, ran, before, sessionId } = await ranCommand({ 'keep.txt': 'k\n' }, MAKE, other)
        const undone = await undo(t, sessionId, callOf(ran.events))
        expect(undone.code, undone.stderr).toBe(0)
        expect(await tree(t.workspace)).toEqual(before)
        const events = await readLog(t.sessionsDir, sessionId)
        const started = events.find((e) => e.type === 'rewind.started')
        expect(started?.type === 'rewind.started' && started.trash).toBeUndefined()
        // What it removed is in the store (it was not read by the plan: found unchanged by its identity).
        const store = await PreimageStore.open(preimagesDir(sessionPaths(t.sessionsDir, sessionId).outputDir))
        try {
          const f1 =
            started?.type === 'rewind.started' && started.changes.find((c) => c.relPath === 'made/a/f1.js')
          expect((await store.get(contentHashOf(f1 ? f1.from : null) as string)).toString()).toBe('file 1\n')
        } finally {
          await store.close()
        }
      } finally {
        await rm(other, { recursive: true, force: true })
      }
    },
  )

  it('never moves a folder from elsewhere when a folder on its way was swapped for a link after the plan', async () => {
    const { t, sessionId, callId } = await ranCommand({ 'a/keep.txt': 'k\n' }, [
      'set -e',
      'mkdir -p a/made',
      'echo one > a/made/x.js',
      'sleep 0.3',
    ])
    const outside = await mkdtemp(join(base(), 'outside-'))
    await mkdir(join(outside, 'made'))
    await writeFile(join(outside, 'made/x.js'), 'one\n')
    const applied = await withRewindSession(t.sessionsDir, sessionId, async (session) => {
      const plan = await planRewind(session.events, session.store, session.workspace, {
        mode: 'undo',
        callId,
      })
      if (!plan.ok) return plan
      await rename(join(t.workspace, 'a'), join(t.root, 'a-moved'))
      await symlink(outside, join(t.workspace, 'a'))
      return applyRewind(plan, session.store, session.log)
    })
    expect(applied.ok).toBe(false)
    expect(await tree(outside)).toEqual({ 'made/': '755', 'made/x.js': '644 one\n' })
    expect(await trashOf(t.sessionsDir, sessionId)).toEqual([])
  })

  it('deletes on the next start a trash whose deletion was cut short, and keeps one a roll-back could not empty', async () => {
    const { t, sessionId } = await ranCommand({}, MAKE)
    const root = trashRoot(preimagesDir(sessionPaths(t.sessionsDir, sessionId).outputDir))
    await mkdir(join(root, 'rw-abc123-0a0b0c/0/x'), { recursive: true })
    await mkdir(join(root, 'rw-abc124-0a0b0d-kept/0'), { recursive: true })
    await withRewindSession(t.sessionsDir, sessionId, async () => undefined)
    await trashDeleted()
    expect(await trashOf(t.sessionsDir, sessionId)).toEqual(['rw-abc124-0a0b0d-kept'])
  })
})

async function readLog(sessionsDir: string, sessionId: string): Promise<SessionEvent[]> {
  return (await readFile(sessionPaths(sessionsDir, sessionId).log, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as SessionEvent)
}
