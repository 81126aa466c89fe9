import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, fdatasync, openSync, renameSync, writeSync } from 'node:fs'
import { mkdir, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { openSessionWriter } from '../src/main/session/log'
import { changeKeeper, preimagesDir, PreimageStore, sha256 } from '../src/main/session/preimages'
import { applyRewind, planRewind } from '../src/main/session/rewind'
import { withRewindSession } from '../src/main/session/rewind-session'
import { recordSession } from '../src/main/session/test-fixtures/recorded-session'
import { writeFileAtomic } from '../src/main/fs/atomic-write'
import { median, result, sized, type Benchmark, type BenchResult } from './harness'

/**
 * Undo and rewind (issue 14), each figure against its baseline in the same run:
 * - the store's cost per write of a 1 MB file (keeping the content before and after, logging the pre-image)
 *   against the atomic write itself;
 * - the store's size after 1000 small edits of a 1 MB file against the file's size;
 * - a rewind of 100 changed files (log read, plan, journal, writes, fsyncs) against the durable floor for the same
 *   files (a temp file, a rename, an fdatasync of each side by side and one of their folder, as direct system
 *   calls): the gated figure (issue 20). For information also against `cp` putting the originals back over the
 *   changed files (no journal, no plan, nothing made durable), cp + sync, cp into an empty folder, and the floor
 *   without its fsyncs.
 */

const MB = 1024 * 1024

/** A 1 MB text (lines of random hex) and `count` versions of it, each one small edit of the one before. */
function versionsOf(count: number): Buffer[] {
  const lines: string[] = []
  let size = 0
  while (size < MB) {
    const line = randomBytes(32).toString('hex') + '\n'
    lines.push(line)
    size += line.length
  }
  let current = Buffer.from(lines.join('')).subarray(0, MB)
  const out = [current]
  for (let i = 0; i < count; i++) {
    const at = (i * 7919 * 65) % (current.length - 100)
    current = Buffer.concat([current.subarray(0, at), Buffer.from(`edit ${i};`), current.subarray(at + 12)])
    out.push(current)
  }
  return out
}

async function perWrite(): Promise<BenchResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'lanes-bench-rewind-'))
  try {
    const writer = await openSessionWriter(dir, 'bench-store', { create: true })
    let store: Promise<PreimageStore> | undefined
    const keeper = changeKeeper(
      () => (store ??= PreimageStore.open(preimagesDir(writer.outputDir))),
      'c1',
      (draft) => writer.append(draft),
    )
    const file = join(dir, 'big.txt')
    const plain = join(dir, 'plain.txt')
    const versions = versionsOf(sized(61, 6))
    await writeFile(file, versions[0] as Buffer)
    await writeFile(plain, versions[0] as Buffer)
    const writeOnly: number[] = []
    const withStore: number[] = []
    const storeOnly: number[] = []
    for (let i = 1; i < versions.length; i++) {
      const previous = versions[i - 1] as Buffer
      const next = versions[i] as Buffer
      // Side by side: the write alone, then the write as write_file makes it with the store.
      let t0 = performance.now()
      await writeFileAtomic(plain, next)
      writeOnly.push(performance.now() - t0)

      // write_file hashes the file it read for its conflict check and what it wrote for its snapshot, store or
      // not; the store takes both hashes from it.
      const previousHash = sha256(previous)
      t0 = performance.now()
      await keeper.before({ path: file, relPath: 'big.txt', content: previous, hash: previousHash })
      const t1 = performance.now()
      await writeFileAtomic(file, next)
      const t2 = performance.now()
      const hash = sha256(next)
      const t3 = performance.now()
      await keeper.after({ path: file, content: next, hash })
      const t4 = performance.now()
      withStore.push(t1 - t0 + (t2 - t1) + (t4 - t3))
      storeOnly.push(t1 - t0 + (t4 - t3))
    }
    await (await store)?.close()
    await writer.close()
    const write = median(writeOnly)
    return [
      result('rewind: write 1 MB with the pre-image store (median)', median(withStore), write, 'ms', {
        maxRatio: 1.3,
        text: 'ratio <= 1.3 (vs the atomic write alone)',
      }),
      result('rewind: pre-image store alone per 1 MB write (median)', median(storeOnly), write, 'ms'),
    ]
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const EDITS = sized(1000, 20)

async function diskUse(): Promise<BenchResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'lanes-bench-rewind-'))
  try {
    const store = await PreimageStore.open(dir)
    const versions = versionsOf(EDITS)
    // As write_file keeps them: each edit's content before (the previous one's after) and after.
    for (let i = 1; i < versions.length; i++) {
      await store.put('big.txt', versions[i - 1] as Buffer)
      await store.put('big.txt', versions[i] as Buffer)
    }
    await store.flush()
    const info = await stat(store.file)
    // What it takes on disk (allocated blocks), not only its length.
    const used = Math.max(info.size, info.blocks * 512)
    // Reading back the newest content replays the longest chain there is.
    const t0 = performance.now()
    const last = await store.get(sha256(versions.at(-1) as Buffer))
    const readMs = performance.now() - t0
    await store.close()
    if (!last.equals(versions.at(-1) as Buffer)) throw new Error('the store returned a wrong content')
    return [
      result(`rewind: store size after ${EDITS} edits of a 1 MB file`, used / MB, 1, 'MB', {
        maxRatio: 5,
        text: 'ratio < 5 (vs the file size)',
      }),
      result(`rewind: read back the ${EDITS}th version of the 1 MB file`, readMs, 1, 'ms'),
    ]
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const FILES = sized(100, 10)
const FILE_BYTES = 32 * 1024

let gc: (() => void) | undefined
/** A full garbage collection now (the flag is set at run time: the bench runs under plain tsx). */
function collectGarbage(): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc')
    gc = runInNewContext('gc') as () => void
  }
  gc()
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(command, args, { stdio: 'ignore' })
    p.once('error', reject)
    p.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))))
  })
}

async function rewind100(): Promise<BenchResult[]> {
  const rounds = sized(9, 1)
  const ms = { rewind: [] as number[], open: [] as number[], plan: [] as number[], apply: [] as number[] }
  const cpMs: number[] = []
  const cpSyncMs: number[] = []
  const cpNewMs: number[] = []
  const floorMs: number[] = []
  const floorSyncMs: number[] = []
  const cleanup: string[] = []
  try {
    for (let round = 0; round < rounds; round++) {
      const s = await recordSession()
      cleanup.push(s.sessionsDir, s.workspace)
      const originals = join(s.sessionsDir, 'originals')
      await mkdir(originals)
      // Each file is created by a write_file call, then changed by an edit_file call; the first edit is the
      // point to go back to.
      for (let i = 0; i < FILES; i++) {
        const content = randomBytes(FILE_BYTES / 2).toString('hex')
        await writeFile(join(originals, `f${i}.txt`), content)
        await s.call(1, `w${i}`, 'write_file', { path: `f${i}.txt`, content })
      }
      for (let i = 0; i < FILES; i++) {
        const path = `f${i}.txt`
        const head = (await readFile(join(s.workspace, path), 'utf8')).slice(0, 16)
        await s.call(2, `c${i}`, 'edit_file', { path, old_string: head, new_string: `changed ${i}` })
      }
      await s.close()

      // cp's side of the comparison starts from the same state: the changed files, on disk (as the tools left
      // them, synced), which it puts back by copying the originals over them.
      const names = Array.from({ length: FILES }, (_, i) => `f${i}.txt`)
      /** A folder holding the changed files as the tools left them, synced. */
      const copyOfChanged = async (name: string): Promise<string> => {
        const dir = join(s.sessionsDir, name)
        await mkdir(dir)
        await run('cp', ['-f', ...names.map((n) => join(s.workspace, n)), dir])
        await run(
          'sync',
          names.map((n) => join(dir, n)),
        )
        return dir
      }
      const changed = await copyOfChanged('changed')
      const fresh = join(s.sessionsDir, 'fresh')
      await mkdir(fresh)
      // The same state once more, for the file system's own cost of replacing files the crash-safe way, and once
      // more for that floor made durable.
      const replaced = await copyOfChanged('replaced')
      const durable = await copyOfChanged('durable')
      const contents = await Promise.all(names.map((n) => readFile(join(originals, n))))

      const cp = async (): Promise<void> => {
        let t0 = performance.now()
        await run('cp', ['-f', ...names.map((n) => join(originals, n)), changed])
        const copied = performance.now() - t0
        cpMs.push(copied)
        t0 = performance.now()
        await run(
          'sync',
          names.map((n) => join(changed, n)),
        )
        cpSyncMs.push(copied + performance.now() - t0)
        t0 = performance.now()
        await run('cp', ['-f', ...names.map((n) => join(originals, n)), fresh])
        cpNewMs.push(performance.now() - t0)
        // The floor of any crash-safe replacement (what an editor's save does): a new temp file, its content,
        // a rename over the old one; by direct system calls, without Lanes, without fsync.
        t0 = performance.now()
        for (const [i, n] of names.entries()) {
          const fd = openSync(join(replaced, `.${n}.tmp`), 'wx')
          writeSync(fd, contents[i] as Buffer)
          closeSync(fd)
          renameSync(join(replaced, `.${n}.tmp`), join(replaced, n))
        }
        floorMs.push(performance.now() - t0)
        // The same made durable as a rewind makes it: each file kept open, then all fsynced side by side, then
        // their folder: the floor of a crash-safe and durable replacement.
        await run('sync', [])
        t0 = performance.now()
        const fds: number[] = []
        for (const [i, n] of names.entries()) {
          const fd = openSync(join(durable, `.${n}.tmp`), 'wx')
          writeSync(fd, contents[i] as Buffer)
          renameSync(join(durable, `.${n}.tmp`), join(durable, n))
          fds.push(fd)
        }
        await Promise.all(fds.map((fd) => new Promise((resolve) => fdatasync(fd, resolve))))
        const folder = await open(durable, 'r')
        await folder.sync()
        await folder.close()
        floorSyncMs.push(performance.now() - t0)
        for (const fd of fds) closeSync(fd)
      }
      const rewind = async (): Promise<void> => {
        const t0 = performance.now()
        let t1 = 0
        let t2 = 0
        const done = await withRewindSession(
          s.sessionsDir,
          s.sessionId,
          async (session) => {
            t1 = performance.now()
            const plan = await planRewind(session.events, session.store, session.workspace, {
              mode: 'rewind',
              callId: 'c0',
              conversation: true,
            })
            t2 = performance.now()
            if (!plan.ok) return plan
            return applyRewind(plan, session.store, session.log)
          },
          { callId: 'c0' },
        )
        const t3 = performance.now()
        if (!done.ok || done.changes.length !== FILES)
          throw new Error(`the rewind did not restore ${FILES} files`)
        ms.rewind.push(t3 - t0)
        ms.open.push(t1 - t0)
        ms.plan.push(t2 - t1)
        ms.apply.push(t3 - t2)
      }
      // Side by side, taking turns at going first, each from a settled disk: whatever the setup or the other
      // side left unwritten is written out first (a whole-system sync), or the first fsync of whichever side
      // makes one would pay for it: a journal commit writes out every file's pending data, not only its own.
      // And from a settled heap, for the same reason: the setup's garbage (200 tool calls recorded in this
      // process) is collected first, or whichever side allocates first pays for collecting it; what a side
      // allocates itself is still collected within its own time. The collection goes before the sync, whose
      // process start gives its sweeping (on V8's helper threads) time to end before the side starts.
      const settled = async (side: () => Promise<void>): Promise<void> => {
        collectGarbage()
        await run('sync', [])
        await side()
      }
      if (round % 2 === 0) {
        await settled(cp)
        await settled(rewind)
      } else {
        await settled(rewind)
        await settled(cp)
      }
    }
  } finally {
    for (const dir of cleanup) await rm(dir, { recursive: true, force: true })
  }
  const rewind = median(ms.rewind)
  const cp = median(cpMs)
  return [
    // The gated figure (issue 20): against the durable floor measured in the same rounds. cp makes nothing
    // durable, so it is no fair anchor; its figure stays for information.
    result(
      `rewind: ${FILES} changed files (32 KB) vs the durable floor (temp file, rename, fdatasync side by side, folder fsync)`,
      rewind,
      median(floorSyncMs),
      'ms',
      {
        maxRatio: 2,
        text: 'ratio <= 2 (vs the durable floor)',
      },
    ),
    result(
      `rewind: ${FILES} changed files (32 KB) vs cp of the originals over them (median)`,
      rewind,
      cp,
      'ms',
    ),
    result(
      `rewind: ${FILES} files, of which opening the session (log tail, store)`,
      median(ms.open),
      cp,
      'ms',
    ),
    result(`rewind: ${FILES} files, of which planning (reading, hashing)`, median(ms.plan), cp, 'ms'),
    result(`rewind: ${FILES} files, of which applying (journal, writes, fsync)`, median(ms.apply), cp, 'ms'),
    result(
      `rewind: ${FILES} changed files vs cp + sync of the copies (median)`,
      rewind,
      median(cpSyncMs),
      'ms',
    ),
    result(
      `rewind: ${FILES} changed files vs cp into an empty folder (median)`,
      rewind,
      median(cpNewMs),
      'ms',
    ),
    result(
      `rewind: the file system's floor, ${FILES} temp-file-and-rename replacements by system calls, vs cp`,
      median(floorMs),
      cp,
      'ms',
    ),
    result(
      `rewind: the floor made durable (the same, then an fsync of each file side by side and of the folder), vs cp`,
      median(floorSyncMs),
      cp,
      'ms',
    ),
    result(
      `rewind: ${FILES} files, applying (journal, writes, fsync) vs the floor without fsync`,
      median(ms.apply),
      median(floorMs),
      'ms',
    ),
  ]
}

export const benchmarks: Benchmark[] = [
  { name: 'rewind-store-per-write', run: perWrite },
  { name: 'rewind-store-disk-use', run: diskUse },
  { name: 'rewind-100-files', run: rewind100 },
]
