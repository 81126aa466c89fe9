import { spawn } from 'node:child_process'
import { closeSync, fdatasync, openSync, renameSync, writeSync } from 'node:fs'
import { mkdir, mkdtemp, open, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openSessionWriter, type SessionWriter } from '../src/main/session/log'
import { preimagesDir, PreimageStore } from '../src/main/session/preimages'
import { applyRewind, planRewind } from '../src/main/session/rewind'
import { withRewindSession } from '../src/main/session/rewind-session'
import { trashDeleted } from '../src/main/session/rewind-trash'
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
 *   same approved sandboxed command without it: the overlay's own cost; beside it the kernel's floor (a fresh
 *   overlay mount and `git status` against `git status`, no Lanes and no sandbox), what capture adds set against
 *   what that overlay adds round by round (near 1: the time is the kernel's), and capture's fixed cost per call;
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

/**
 * Waits (untimed) until the overlays of earlier captured calls are unmounted: each is let go by a holder process
 * beside the landing, off the call's own time (capture/overlay.ts), and its unmount must not land in the time of
 * whichever side runs next.
 */
async function layersReleased(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const holders = await new Promise<string>((resolve) => {
      const p = spawn('pgrep', ['-f', ' lanes-capture /'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      })
      let text = ''
      p.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()))
      p.on('error', () => resolve(''))
      p.on('close', () => resolve(text.trim()))
    })
    if (holders === '') return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

function run(command: string, args: string[], cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(command, args, { stdio: 'ignore', ...(cwd ? { cwd } : {}) })
    p.on('error', reject)
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}`))))
  })
}

/** Runs `command` and gives back what it printed; a non-zero exit fails. */
function output(command: string, args: string[], cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'], ...(cwd ? { cwd } : {}) })
    let text = ''
    p.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()))
    p.on('error', reject)
    p.on('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`${command} exited with ${code}`)),
    )
  })
}

/** One command as the shell that ran it timed it: wall and CPU (its user and system time), in ms. */
interface Timed {
  wall: number
  cpu: number
}

/**
 * `command` timed by the shell that runs it (bash's `time`: real, user and system seconds, one run a line),
 * `times` times, in the folder `$1` as the script finds it after `setup`.
 */
const TIMED = (setup: string, command: string, times: number) =>
  `TIMEFORMAT='%3R %3U %3S'\n${setup}cd "$1"\n` +
  `for i in ${Array.from({ length: times }, (_, i) => i + 1).join(' ')}; do\n` +
  `  { time ${command} >/dev/null; } 2>&1\n` +
  'done'

function parseTimed(out: string): Timed[] {
  return out
    .trim()
    .split('\n')
    .map((line) => {
      const [real, user, sys] = line.split(' ').map((s) => Number(s) * 1000)
      return { wall: real as number, cpu: (user as number) + (sys as number) }
    })
}

const GIT_STATUS = 'git status --porcelain'

/**
 * The kernel's own floor, with nothing of Lanes in it and no sandbox: a fresh overlay mounted over the tree in a
 * user and mount namespace (as the wrapper does), then `command` (`git status`, or the read-heavy script) on it
 * twice, against the same command on the tree itself, each timed by the shell around it (and its CPU time, which
 * the machine's other load does not stretch as it does the wall time). A fresh overlay has no entry of its own for
 * any file yet: the first look at each one builds it (a lookup in the lower folder, an overlay inode and dentry),
 * a few microseconds of kernel time per file that no mount option removes (metacopy, index, xino, uuid, volatile:
 * measured, no change). The second run in the same mount shows what stays once those entries exist: every look
 * and open still goes through the overlay to the file below it (1.48x on `git status` in CPU time, session 12).
 */
async function kernelOverlay(tree: string, layer: string, command = GIT_STATUS): Promise<Timed[]> {
  const mount =
    'mkdir -p "$2/upper" "$2/work"\n' +
    'mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work,userxattr" "$1"\n'
  return parseTimed(
    await output('unshare', ['-Urm', 'bash', '-ec', TIMED(mount, command, 2), 'floor', tree, layer]),
  )
}

async function plainTimed(tree: string, command = GIT_STATUS): Promise<Timed> {
  return parseTimed(await output('bash', ['-ec', TIMED('', command, 1), 'plain', tree]))[0] as Timed
}

/**
 * An `npm test`-like read-heavy command: node reading every source file of four packages of the tree (18,000
 * files; quick mode's tree has two packages) and going through their lines, as a test run loading and compiling its
 * modules would. The script lives in `.git`, where it is in the workspace and `git status` does not see it.
 */
const READ_HEAVY_SCRIPT = `const fs = require('fs')
const path = require('path')
let lines = 0
const walk = (dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) walk(p)
    else for (const line of fs.readFileSync(p, 'utf8').split('\\n')) if (line.includes('export')) lines++
  }
}
for (const k of ['00', '01', '02', '03'])
  if (fs.existsSync('packages/pkg-' + k)) walk('packages/pkg-' + k + '/src')
if (lines === 0) process.exit(1)
`
const READ_HEAVY = 'node .git/lanes-bench-read-heavy.js'

async function unchanged(cache: string): Promise<BenchResult[]> {
  const tree = await ensureTree(cache)
  ensureRepository(tree.root)
  const root = await realpath(await mkdtemp(join(cache, 'unchanged-')))
  try {
    const session = await openSession(root, tree.root)
    // Three sides, each warmed up once, then in turn, the order turned around every other round: the approved call
    // with capture and without (the figure the issue sets), and the kernel's floor: `git status` in a fresh overlay
    // (first and second run) and on the tree.
    const captured: number[] = []
    const sandboxed: number[] = []
    const overlayFirst: Timed[] = []
    const overlaySecond: Timed[] = []
    const plain: Timed[] = []
    let layers = 0
    const timed = async (into: number[], fn: () => Promise<unknown>) => {
      const t0 = performance.now()
      await fn()
      into.push(performance.now() - t0)
      await layersReleased()
    }
    const sides: (() => Promise<unknown>)[] = [
      () => timed(captured, () => approved(tree.root, GIT_STATUS, session)),
      () => timed(sandboxed, () => approved(tree.root, GIT_STATUS)),
      async () => {
        const [first, second] = await kernelOverlay(tree.root, join(root, `layer-${++layers}`))
        overlayFirst.push(first as Timed)
        overlaySecond.push(second as Timed)
        plain.push(await plainTimed(tree.root))
      },
    ]
    for (const side of sides) await side()
    for (const list of [captured, sandboxed, overlayFirst, overlaySecond, plain]) list.length = 0
    for (let i = 0; i < RUNS; i++) for (const side of i % 2 === 0 ? sides : [...sides].reverse()) await side()
    // What capture costs a call that looks at nothing (`true`): the namespace, the mount, the wrapper's walk,
    // reading an empty change set, the layer's folders made and removed. Short calls: more rounds.
    const fixedCaptured: number[] = []
    const fixedSandboxed: number[] = []
    for (let i = 0; i < RUNS * 2; i++) {
      for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
        await timed(side === 1 ? fixedCaptured : fixedSandboxed, () =>
          approved(tree.root, 'true', side === 1 ? session : undefined),
        )
      }
    }
    await writeFile(join(tree.root, '.git', 'lanes-bench-read-heavy.js'), READ_HEAVY_SCRIPT)
    // The read-heavy script the same way: with capture and without, and the kernel's floor for it beside them.
    const readCaptured: number[] = []
    const readSandboxed: number[] = []
    const readOverlayFirst: Timed[] = []
    const readOverlaySecond: Timed[] = []
    const readPlain: Timed[] = []
    const readSides: (() => Promise<unknown>)[] = [
      () => timed(readCaptured, () => approved(tree.root, READ_HEAVY, session)),
      () => timed(readSandboxed, () => approved(tree.root, READ_HEAVY)),
      async () => {
        const [first, second] = await kernelOverlay(tree.root, join(root, `layer-${++layers}`), READ_HEAVY)
        readOverlayFirst.push(first as Timed)
        readOverlaySecond.push(second as Timed)
        readPlain.push(await plainTimed(tree.root, READ_HEAVY))
      },
    ]
    for (const side of readSides) await side()
    for (const list of [readCaptured, readSandboxed, readOverlayFirst, readOverlaySecond, readPlain])
      list.length = 0
    for (let i = 0; i < RUNS; i++)
      for (const side of i % 2 === 0 ? readSides : [...readSides].reverse()) await side()
    await session.store.close()
    await session.writer.close()
    // Round by round: what capture added to the approved call, and what a fresh overlay added to bare git status.
    const captureAdded = captured.map((t, i) => t - (sandboxed[i] as number))
    const kernelAdded = overlayFirst.map((t, i) => t.wall - (plain[i] as Timed).wall)
    const of = (list: Timed[], key: keyof Timed) => median(list.map((t) => t[key]))
    return [
      result(
        'capture: git status 100k files, overlay vs sandbox',
        median(captured),
        median(sandboxed),
        'ms',
        {
          maxRatio: 1.1,
          text: 'ratio <= 1.1',
        },
      ),
      result(
        'capture: kernel floor, git status in a fresh overlay vs on the tree (no Lanes, no sandbox)',
        of(overlayFirst, 'wall'),
        of(plain, 'wall'),
        'ms',
      ),
      result(
        'capture: kernel floor in CPU time, git status in a fresh overlay vs on the tree',
        of(overlayFirst, 'cpu'),
        of(plain, 'cpu'),
        'ms cpu',
      ),
      result(
        'capture: kernel, second git status in the same overlay vs on the tree (CPU time)',
        of(overlaySecond, 'cpu'),
        of(plain, 'cpu'),
        'ms cpu',
      ),
      result(
        'capture: time capture adds to the approved git status vs time a fresh overlay adds to git status',
        median(captureAdded),
        median(kernelAdded),
        'ms',
      ),
      result(
        'capture: read-heavy script (18,000 files read), overlay vs sandbox',
        median(readCaptured),
        median(readSandboxed),
        'ms',
        { maxRatio: 1.1, text: 'ratio <= 1.1' },
      ),
      result(
        'capture: kernel floor, read-heavy script in a fresh overlay vs on the tree (no Lanes, no sandbox)',
        of(readOverlayFirst, 'wall'),
        of(readPlain, 'wall'),
        'ms',
      ),
      result(
        'capture: kernel, read-heavy script run again in the same overlay vs on the tree',
        of(readOverlaySecond, 'wall'),
        of(readPlain, 'wall'),
        'ms',
      ),
      result(
        'capture: `true`, overlay vs sandbox (the fixed cost per call)',
        median(fixedCaptured),
        median(fixedSandboxed),
        'ms',
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
        await layersReleased()
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
    const trashMs: number[] = []
    const rmMs: number[] = []
    const runs = sized(Math.max(3, Math.ceil(RUNS / 3)), 1)
    for (let i = 0; i < runs; i++) {
      let t0 = performance.now()
      const callId = await approved(workspace, 'node create.js', session)
      captured.push(performance.now() - t0)
      await layersReleased()
      t0 = performance.now()
      await approved(plain, 'node create.js')
      uncaptured.push(performance.now() - t0)

      // The undo and rm -rf each start from a settled disk: whatever the landing (or the other side) left unwritten
      // is written out first, or the undo, run right after the landing, would pay for the landing's writeback and
      // rm -rf, run on a tree made long before, would not.
      await run('sync', [])
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
        // The trash of the folders it removed whole is deleted in the background, which the user does not wait
        // for; it is not left to overlap rm -rf below (which it would slow), and is reported on its own.
        const t2 = performance.now()
        await trashDeleted()
        trashMs.push(performance.now() - t2)
        return done
      })
      if (!undone.ok) throw new Error(undone.reason)
      // The folders the command made stay behind an undo only when something else is in them: none here.
      await run('sync', [])
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
      result(
        `capture: undo ${CREATED} created files, the trash deleted after it (in the background) vs rm -rf`,
        median(trashMs),
        median(rmMs),
        'ms',
      ),
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
