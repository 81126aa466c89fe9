import { spawn } from 'node:child_process'
import { closeSync, fdatasync, openSync, renameSync, writeSync } from 'node:fs'
import { mkdir, mkdtemp, open, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openSessionWriter, type SessionWriter } from '../src/main/session/log'
import { preimagesDir, PreimageStore } from '../src/main/session/preimages'
import { applyRewind, planRewind } from '../src/main/session/rewind'
import { withRewindSession } from '../src/main/session/rewind-session'
import { bashTool } from '../src/main/tools/bash/bash'
import type { CaptureHost } from '../src/main/tools/bash/capture/land'
import { captureSupport } from '../src/main/tools/bash/capture/overlay'
import { sandboxSupport } from '../src/main/tools/bash/sandbox/launch'
import { loadBashGrammar } from '../src/main/tools/bash/validate'
import { GIT_WORKSPACE_RULES } from '../src/main/tools/sensitive-paths'
import { SnapshotStore } from '../src/main/tools/snapshots'
import { ensureTree } from './gen-tree'
import { median, result, sized, type Benchmark, type BenchResult } from './harness'
import { ensureRepository } from './sandbox.bench'

/**
 * Command capture (issue 20), each figure against its baseline in the same run, runs alternating:
 * - an approved command that changes nothing (`git status` on the 100k-file tree) with capture against the
 *   same approved sandboxed command without it: the overlay's own cost;
 * - a command rewriting 100 files of 32 KB: what capture adds (the overlay, reading the change set, keeping the
 *   previous contents, logging, the store's and the log's fsync, moving the files in) against the durable floor
 *   for those files (a temp file each, a rename, fsync, by direct system calls). What capture adds is measured
 *   round by round (the captured call less the uncaptured one run beside it, each round from a settled disk,
 *   its order reversed every other round), and its median taken over the floor's: a difference of two medians
 *   taken apart swung with every other process on the machine;
 * - a command creating 20,000 small files: the whole approved call with capture and landing against the same
 *   command run without capture; then undoing it (plan, journal, removals) against `rm -rf` of those files.
 */

const RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(9, 2))
/** Rounds of the 100-file rewrite: each is short, and the figure is a difference of two calls, so more of them. */
const REWRITE_RUNS = sized(Math.max(RUNS, 15), 3)
/** Folders of 100 files the create benchmark makes: 20,000 files (2,000 in quick mode). */
const CREATE_DIRS = sized(200, 20)
const CREATED = (CREATE_DIRS * 100).toLocaleString('en')

interface Session {
  writer: SessionWriter
  store: PreimageStore
  host: CaptureHost
  sessionsDir: string
  sessionId: string
  calls: number
}

async function openSession(root: string, workspace: string): Promise<Session> {
  const sessionsDir = join(root, 'sessions')
  const sessionId = `bench-${Date.now().toString(36)}`
  const writer = await openSessionWriter(sessionsDir, sessionId, { create: true })
  await writer.append({
    type: 'session.created',
    sessionId,
    workspace,
    settings: { model: 'm', scheduler: 'streaming', siblingSkip: true, demo: false },
  })
  const session: Session = {
    writer,
    store: await PreimageStore.open(preimagesDir(writer.outputDir)),
    host: {
      keep: (path, content) => session.store.put(path, content),
      content: (hash) => session.store.get(hash),
      log: (draft) => session.writer.append(draft),
      // As the app's session makes them durable (agent-session.ts): side by side.
      sync: async () => {
        await Promise.all([session.store.flush(), session.writer.sync()])
      },
      landProtected: false,
    },
    sessionsDir,
    sessionId,
    calls: 0,
  }
  return session
}

/** The session's log and store are let go (an undo opens them itself), then taken again. */
async function released<T>(session: Session, use: () => Promise<T>): Promise<T> {
  await session.store.close()
  await session.writer.close()
  try {
    return await use()
  } finally {
    session.writer = await openSessionWriter(session.sessionsDir, session.sessionId, { create: false })
    session.store = await PreimageStore.open(preimagesDir(session.writer.outputDir))
  }
}

/** One approved bash call, as the session runs it: with capture (`session`) or without. */
async function approved(workspace: string, command: string, session?: Session): Promise<string> {
  const callId = `c${session ? ++session.calls : 0}`
  if (session)
    await session.writer.append({
      type: 'tool.queued',
      callId,
      turn: 1,
      index: 0,
      name: 'bash',
      input: { command },
      safe: false,
      lane: { kind: 'serial' },
    })
  const outputDir = session ? session.writer.outputDir : join(workspace, '..', 'outputs')
  await mkdir(outputDir, { recursive: true })
  const res = await bashTool.execute(
    { command, timeout: 600 },
    {
      workspace,
      pathRules: GIT_WORKSPACE_RULES,
      signal: new AbortController().signal,
      snapshots: new SnapshotStore(),
      outputDir,
      callId,
      onProgress: () => undefined,
      approval: { network: false, outsideSandbox: false },
      ...(session ? { capture: session.host } : {}),
    },
  )
  if (res.isError) throw new Error(`${command} failed in the benchmark: ${res.output.slice(-500)}`)
  return callId
}

function run(command: string, args: string[], cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(command, args, { stdio: 'ignore', ...(cwd ? { cwd } : {}) })
    p.on('error', reject)
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}`))))
  })
}

async function unchanged(cache: string): Promise<BenchResult[]> {
  const tree = await ensureTree(cache)
  ensureRepository(tree.root)
  const root = await realpath(await mkdtemp(join(cache, 'unchanged-')))
  try {
    const session = await openSession(root, tree.root)
    const without: number[] = []
    const withCapture: number[] = []
    await approved(tree.root, 'git status --porcelain')
    await approved(tree.root, 'git status --porcelain', session)
    for (let i = 0; i < RUNS; i++) {
      for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const t0 = performance.now()
        await approved(tree.root, 'git status --porcelain', side === 1 ? session : undefined)
        ;(side === 1 ? withCapture : without).push(performance.now() - t0)
      }
    }
    await session.store.close()
    await session.writer.close()
    return [
      result(
        'capture: git status 100k files, overlay vs sandbox',
        median(withCapture),
        median(without),
        'ms',
        {
          maxRatio: 1.1,
          text: 'ratio <= 1.1',
        },
      ),
    ]
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

const REWRITE_SCRIPT = `const fs = require('fs')
const n = Number(process.argv[2])
for (let i = 0; i < 100; i++) fs.writeFileSync('files/f' + i + '.txt', Buffer.alloc(32 * 1024, 97 + ((i + n) % 26)))
`

async function rewrite100(cache: string): Promise<BenchResult[]> {
  const root = await realpath(await mkdtemp(join(cache, 'rewrite-')))
  try {
    const workspace = join(root, 'ws')
    const plain = join(root, 'plain')
    const floor = join(root, 'floor')
    for (const dir of [workspace, plain, floor]) {
      await mkdir(join(dir, 'files'), { recursive: true })
      await writeFile(join(dir, 'rewrite.js'), REWRITE_SCRIPT)
      for (let i = 0; i < 100; i++)
        await writeFile(join(dir, 'files', `f${i}.txt`), Buffer.alloc(32 * 1024, 65))
    }
    const session = await openSession(root, workspace)
    const captured: number[] = []
    const uncaptured: number[] = []
    const floorMs: number[] = []
    /** What capture added in each round: the captured call less the uncaptured one run beside it. */
    const added: number[] = []
    // The durable floor for the same files: temp file, content, rename, then all fsynced and their folder.
    const durableFloor = async (i: number): Promise<void> => {
      const fds: number[] = []
      for (let f = 0; f < 100; f++) {
        const tmp = join(floor, 'files', `.f${f}.tmp`)
        const fd = openSync(tmp, 'w')
        writeSync(fd, Buffer.alloc(32 * 1024, 97 + ((f + i) % 26)))
        renameSync(tmp, join(floor, 'files', `f${f}.txt`))
        fds.push(fd)
      }
      await Promise.all(fds.map((fd) => new Promise((resolve) => fdatasync(fd, resolve))))
      const folder = await open(join(floor, 'files'), 'r')
      await folder.sync()
      await folder.close()
      for (const fd of fds) closeSync(fd)
    }
    const timed = async (fn: () => Promise<unknown>): Promise<number> => {
      const t0 = performance.now()
      await fn()
      return performance.now() - t0
    }
    // A warm-up of each side, then rounds in turn, each round's order turned around every other time (A B C,
    // C B A, ...), from a settled disk: whatever one side left unwritten is not paid by the next one's fsync.
    await approved(workspace, 'node rewrite.js 0', session)
    await approved(plain, 'node rewrite.js 0')
    await durableFloor(0)
    for (let i = 1; i <= REWRITE_RUNS; i++) {
      const round: Record<'c' | 'u' | 'f', number> = { c: 0, u: 0, f: 0 }
      const sides: ['c' | 'u' | 'f', () => Promise<unknown>][] = [
        ['c', () => approved(workspace, `node rewrite.js ${i}`, session)],
        ['u', () => approved(plain, `node rewrite.js ${i}`)],
        ['f', () => durableFloor(i)],
      ]
      for (const [side, fn] of i % 2 === 0 ? sides : sides.reverse()) {
        await run('sync', [])
        round[side] = await timed(fn)
      }
      captured.push(round.c)
      uncaptured.push(round.u)
      floorMs.push(round.f)
      added.push(round.c - round.u)
    }
    await session.store.close()
    await session.writer.close()
    return [
      result(
        'capture: 100 files x 32 KB, capture+landing vs durable floor',
        median(added),
        median(floorMs),
        'ms',
        {
          maxRatio: 2,
          text: 'ratio <= 2 (median of each round’s captured less uncaptured call, over the median floor)',
        },
      ),
      result(
        'capture: 100 files x 32 KB, whole call vs uncaptured call',
        median(captured),
        median(uncaptured),
        'ms',
      ),
    ]
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

const CREATE_SCRIPT = `const fs = require('fs')
for (let d = 0; d < ${CREATE_DIRS}; d++) {
  fs.mkdirSync('made/d' + d, { recursive: true })
  for (let f = 0; f < 100; f++) fs.writeFileSync('made/d' + d + '/f' + f + '.js', 'module.exports = ' + (d * 100 + f) + '\\n')
}
`

async function create20k(cache: string): Promise<BenchResult[]> {
  const root = await realpath(await mkdtemp(join(cache, 'create-')))
  try {
    const workspace = join(root, 'ws')
    const plain = join(root, 'plain')
    for (const dir of [workspace, plain]) {
      await mkdir(dir, { recursive: true })
      await writeFile(join(dir, 'create.js'), CREATE_SCRIPT)
    }
    const session = await openSession(root, workspace)
    const captured: number[] = []
    const uncaptured: number[] = []
    const undoMs: number[] = []
    const rmMs: number[] = []
    const runs = sized(Math.max(3, Math.ceil(RUNS / 3)), 1)
    for (let i = 0; i < runs; i++) {
      let t0 = performance.now()
      const callId = await approved(workspace, 'node create.js', session)
      captured.push(performance.now() - t0)
      t0 = performance.now()
      await approved(plain, 'node create.js')
      uncaptured.push(performance.now() - t0)

      const undone = await released(session, async () => {
        const t1 = performance.now()
        const done = await withRewindSession(
          session.sessionsDir,
          session.sessionId,
          async (s) => {
            const plan = await planRewind(s.events, s.store, s.workspace, { mode: 'undo', callId })
            if (!plan.ok) throw new Error(plan.reason)
            return applyRewind(plan, s.store, s.log)
          },
          { callId },
        )
        undoMs.push(performance.now() - t1)
        return done
      })
      if (!undone.ok) throw new Error(undone.reason)
      // The folders the command made stay behind an undo only when something else is in them: none here.
      t0 = performance.now()
      await run('rm', ['-rf', join(plain, 'made')])
      rmMs.push(performance.now() - t0)
    }
    await session.store.close()
    await session.writer.close()
    return [
      result(
        `capture: create ${CREATED} files, captured vs uncaptured`,
        median(captured),
        median(uncaptured),
        'ms',
        {
          maxRatio: 1.5,
          text: 'ratio <= 1.5',
        },
      ),
      result(`capture: undo ${CREATED} created files vs rm -rf`, median(undoMs), median(rmMs), 'ms', {
        maxRatio: 1.5,
        text: 'ratio <= 1.5',
      }),
    ]
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

/** Each part on its own (`npm run bench -- capture-create`), skipped where commands cannot be captured. */
function part(name: string, run: (cache: string) => Promise<BenchResult[]>): Benchmark {
  return {
    name,
    async run(cache) {
      if (!sandboxSupport().available || captureSupport().mode !== 'overlay') {
        process.stderr.write(`capture benchmarks skipped: ${JSON.stringify(captureSupport())}\n`)
        return []
      }
      await loadBashGrammar()
      return run(cache)
    },
  }
}

export const benchmarks: Benchmark[] = [
  part('capture-rewrite', rewrite100),
  part('capture-create', create20k),
  part('capture-unchanged', unchanged),
]
