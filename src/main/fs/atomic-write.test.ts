import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import ts from 'typescript'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cleanStrayTempFiles, removeFile, WriteBatch, writeFileAtomic, writeJsonAtomic } from './atomic-write'

const TEMP = /\.lanes-[0-9a-f]{12}\.tmp$/
const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))
const atomicWriteModule = fileURLToPath(new URL('./atomic-write.ts', import.meta.url))
const checkedFolderModule = fileURLToPath(new URL('./checked-folder.ts', import.meta.url))
const quickReadModule = fileURLToPath(new URL('./quick-read.ts', import.meta.url))
const heldFilesModule = fileURLToPath(new URL('./held-files.ts', import.meta.url))

let dir: string

beforeEach(async () => {
  dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'lanes-atomic-')))
})

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true })
})

async function tempFilesIn(folder: string): Promise<string[]> {
  return (await fs.readdir(folder)).filter((name) => TEMP.test(name))
}

describe('writeFileAtomic', () => {
  it('creates a new file with the umask default mode and leaves no temp file', async () => {
    const target = path.join(dir, 'new.txt')
    const result = await writeFileAtomic(target, 'hello\n')
    expect(result).toMatchObject({ ok: true, created: true, size: 6 })
    expect(await fs.readFile(target, 'utf8')).toBe('hello\n')
    const mask = process.umask()
    expect((await fs.stat(target)).mode & 0o777).toBe(0o666 & ~mask)
    expect(await tempFilesIn(dir)).toEqual([])
  })

  it('creates missing parent folders', async () => {
    const target = path.join(dir, 'a', 'b', 'c', 'deep.txt')
    expect((await writeFileAtomic(target, Buffer.from([1, 2, 3]))).ok).toBe(true)
    expect([...(await fs.readFile(target))]).toEqual([1, 2, 3])
  })

  it('keeps the mode of the file it replaces', async () => {
    const script = path.join(dir, 'run.sh')
    await fs.writeFile(script, '#!/bin/sh\n')
    await fs.chmod(script, 0o755)
    const secret = path.join(dir, 'secret.txt')
    await fs.writeFile(secret, 'a')
    await fs.chmod(secret, 0o600)

    expect(await writeFileAtomic(script, '#!/bin/sh\necho hi\n')).toMatchObject({ ok: true, created: false })
    expect(await writeFileAtomic(secret, 'b')).toMatchObject({ ok: true, created: false })
    expect((await fs.stat(script)).mode & 0o7777).toBe(0o755)
    expect((await fs.stat(secret)).mode & 0o7777).toBe(0o600)
    expect(await fs.readFile(script, 'utf8')).toBe('#!/bin/sh\necho hi\n')
  })

  it('reports the mtime the file has on disk afterwards', async () => {
    const target = path.join(dir, 'm.txt')
    const result = await writeFileAtomic(target, 'x')
    if (!result.ok) throw new Error(result.reason)
    expect(result.mtimeMs).toBe((await fs.stat(target)).mtimeMs)
  })

  it('refuses to replace a read-only file and leaves it alone', async () => {
    const target = path.join(dir, 'locked.txt')
    await fs.writeFile(target, 'original')
    await fs.chmod(target, 0o444)
    const result = await writeFileAtomic(target, 'new')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/read-only/)
    expect(await fs.readFile(target, 'utf8')).toBe('original')
    expect(await tempFilesIn(dir)).toEqual([])
  })

  it('refuses to replace a directory', async () => {
    await fs.mkdir(path.join(dir, 'sub'))
    const result = await writeFileAtomic(path.join(dir, 'sub'), 'x')
    expect(result.ok).toBe(false)
    expect((await fs.stat(path.join(dir, 'sub'))).isDirectory()).toBe(true)
  })

  it('reports a failure as a value and removes its temp file', async () => {
    // A parent "folder" that is a file: mkdir fails before anything is written.
    await fs.writeFile(path.join(dir, 'plain'), 'x')
    const result = await writeFileAtomic(path.join(dir, 'plain', 'child.txt'), 'data')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/could not be written/)
    expect(await tempFilesIn(dir)).toEqual([])
  })

  it('does not replace a file that changed after it was planned against, and cleans up', async () => {
    const target = path.join(dir, 'raced.txt')
    await fs.writeFile(target, 'v1')
    const planned = await fs.stat(target)
    await fs.writeFile(target, 'someone else, longer')
    const result = await writeFileAtomic(target, 'ours', {
      expect: { mtimeMs: planned.mtimeMs, size: planned.size },
    })
    expect(result).toMatchObject({ ok: false, conflict: true })
    expect(await fs.readFile(target, 'utf8')).toBe('someone else, longer')
    expect(await tempFilesIn(dir)).toEqual([])
  })

  it('does not create a file that appeared after it was planned as new', async () => {
    const target = path.join(dir, 'appeared.txt')
    await fs.writeFile(target, 'theirs')
    expect(await writeFileAtomic(target, 'ours', { expect: null })).toMatchObject({
      ok: false,
      conflict: true,
    })
    expect(await fs.readFile(target, 'utf8')).toBe('theirs')
  })

  it('keeps temp names short enough for a file name at the length limit', async () => {
    const target = path.join(dir, `${'n'.repeat(250)}.md`)
    expect((await writeFileAtomic(target, 'x')).ok).toBe(true)
    expect(await fs.readFile(target, 'utf8')).toBe('x')
  })
})

/** How many descriptors this process has open (Linux), to check a batch leaves none behind. */
async function openDescriptors(): Promise<number> {
  return (await fs.readdir('/proc/self/fd')).length
}

describe('WriteBatch', () => {
  it('writes three hundred files in two folders, keeps no descriptor after close, and leaves no temp file', async () => {
    // More files than a batch keeps open (256): the rest are closed at once and reopened by sync().
    const folders = [path.join(dir, 'a'), path.join(dir, 'b')]
    for (const folder of folders) await fs.mkdir(folder)
    const targets = Array.from({ length: 300 }, (_, i) => path.join(folders[i % 2] as string, `f${i}.txt`))
    for (const target of targets) await fs.writeFile(target, 'old')
    const before = await openDescriptors()
    const batch = new WriteBatch()
    try {
      const results = await Promise.all(
        targets.map(async (target, i) => {
          const seen = await fs.stat(target)
          return writeFileAtomic(target, `new ${i}`, { batch, expect: seen, seen })
        }),
      )
      expect(results.every((r) => r.ok)).toBe(true)
      await batch.sync()
    } finally {
      await batch.close()
    }
    if (process.platform === 'linux') expect(await openDescriptors()).toBe(before)
    for (const [i, target] of targets.entries()) expect(await fs.readFile(target, 'utf8')).toBe(`new ${i}`)
    for (const folder of folders) expect(await tempFilesIn(folder)).toEqual([])
  })

  it('still refuses a file changed after it was seen, though it does not look at the file again first', async () => {
    const target = path.join(dir, 'seen.txt')
    await fs.writeFile(target, 'v1')
    const seen = await fs.stat(target)
    await fs.writeFile(target, 'changed by someone else')
    const batch = new WriteBatch()
    try {
      expect(await writeFileAtomic(target, 'ours', { batch, expect: seen, seen })).toMatchObject({
        ok: false,
        conflict: true,
      })
    } finally {
      await batch.close()
    }
    expect(await fs.readFile(target, 'utf8')).toBe('changed by someone else')
    expect(await tempFilesIn(dir)).toEqual([])
  })
})

describe('WriteBatch: the files it replaces', () => {
  it.runIf(process.platform === 'linux')(
    'are kept open past their renames until sync, which lets them go, and the old content is never seen again',
    async () => {
      const targets = Array.from({ length: 3 }, (_, i) => path.join(dir, `r${i}.txt`))
      for (const target of targets) await fs.writeFile(target, 'old')
      const before = await openDescriptors()
      const batch = new WriteBatch()
      try {
        for (const target of targets) {
          const seen = await fs.stat(target)
          expect(await writeFileAtomic(target, 'new', { batch, expect: seen, seen })).toMatchObject({
            ok: true,
          })
          expect(await fs.readFile(target, 'utf8')).toBe('new')
        }
        // The folder, and each write's temp file (flushed by sync) and the file it replaced (let go by sync).
        expect(await openDescriptors()).toBe(before + 1 + 2 * targets.length)
        await batch.sync()
        expect(await openDescriptors()).toBe(before + 1 + targets.length)
      } finally {
        await batch.close()
      }
      expect(await openDescriptors()).toBe(before)
    },
  )

  it('a FIFO put in the place of one neither hangs its write nor is replaced', async () => {
    const target = path.join(dir, 'pipe.txt')
    await fs.writeFile(target, 'old')
    const seen = await fs.stat(target)
    await fs.rm(target)
    execFileSync('mkfifo', [target])
    const batch = new WriteBatch()
    try {
      expect(await writeFileAtomic(target, 'ours', { batch, expect: seen, seen })).toMatchObject({
        ok: false,
        conflict: true,
      })
      await batch.sync()
    } finally {
      await batch.close()
    }
    expect((await fs.lstat(target)).isFIFO()).toBe(true)
    expect(await tempFilesIn(dir)).toEqual([])
  })
})

describe('WriteBatch.holdRenamesUntil', () => {
  it('renames nothing in until the gate opens, with the new content already in its temp file', async () => {
    const target = path.join(dir, 'held.txt')
    await fs.writeFile(target, 'old')
    const batch = new WriteBatch()
    let open!: () => void
    batch.holdRenamesUntil(new Promise<void>((resolve) => (open = resolve)))
    try {
      const writing = writeFileAtomic(target, 'new', { batch })
      // The temp file is there, whole; the file is still the old one.
      for (let i = 0; i < 50 && (await tempFilesIn(dir)).length === 0; i++) await delay(10)
      const [temp] = await tempFilesIn(dir)
      expect(await fs.readFile(path.join(dir, temp as string), 'utf8')).toBe('new')
      expect(await fs.readFile(target, 'utf8')).toBe('old')
      open()
      expect(await writing).toMatchObject({ ok: true })
      await batch.sync()
    } finally {
      await batch.close()
    }
    expect(await fs.readFile(target, 'utf8')).toBe('new')
    expect(await tempFilesIn(dir)).toEqual([])
  })

  it('fails the writes and leaves the files and no temp file behind when the gate fails', async () => {
    const target = path.join(dir, 'kept.txt')
    await fs.writeFile(target, 'old')
    const batch = new WriteBatch()
    let fail!: (error: Error) => void
    batch.holdRenamesUntil(new Promise<void>((_, reject) => (fail = reject)))
    try {
      const writing = writeFileAtomic(target, 'new', { batch })
      await delay(20)
      fail(new Error('the journal could not be synced'))
      expect(await writing).toMatchObject({ ok: false, reason: expect.stringContaining('journal') })
      // A write begun after the gate failed fails too: nothing goes in without the journal.
      expect(await writeFileAtomic(target, 'later', { batch })).toMatchObject({ ok: false })
    } finally {
      await batch.close()
    }
    expect(await fs.readFile(target, 'utf8')).toBe('old')
    expect(await tempFilesIn(dir)).toEqual([])
  })
})

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

describe('removeFile', () => {
  it('removes a file, and answers done for one already gone without making its folder again', async () => {
    const target = path.join(dir, 'gone.txt')
    await fs.writeFile(target, 'x')
    expect(await removeFile(target)).toEqual({ ok: true })
    await expect(fs.stat(target)).rejects.toThrow()
    expect(await removeFile(target)).toEqual({ ok: true })
    expect(await removeFile(path.join(dir, 'no-folder', 'f.txt'))).toEqual({ ok: true })
    await expect(fs.stat(path.join(dir, 'no-folder'))).rejects.toThrow()
  })

  it.skipIf(process.platform === 'win32')(
    'does not follow a folder swapped for a link to remove a file elsewhere',
    async () => {
      const folder = path.join(dir, 'workspace', 'sub')
      const outside = path.join(dir, 'outside')
      await fs.mkdir(folder, { recursive: true })
      await fs.mkdir(outside)
      await fs.writeFile(path.join(outside, 'keep.txt'), 'precious')
      await fs.rename(folder, `${folder}.moved`)
      await fs.symlink(outside, folder)
      const removed = await removeFile(path.join(folder, 'keep.txt'))
      expect(removed.ok).toBe(false)
      expect(await fs.readFile(path.join(outside, 'keep.txt'), 'utf8')).toBe('precious')
    },
  )
})

describe('cleanStrayTempFiles', () => {
  it('removes only our own temp files older than a minute', async () => {
    const old = path.join(dir, '.app.ts.lanes-0123456789ab.tmp')
    const fresh = path.join(dir, '.app.ts.lanes-ba9876543210.tmp')
    const notOurs = path.join(dir, '.app.ts.swp')
    const lookalike = path.join(dir, 'app.lanes-0123456789ab.tmp.bak')
    for (const file of [old, fresh, notOurs, lookalike]) await fs.writeFile(file, 'x')
    const twoMinutesAgo = new Date(Date.now() - 120_000)
    for (const file of [old, notOurs, lookalike]) await fs.utimes(file, twoMinutesAgo, twoMinutesAgo)

    expect(await cleanStrayTempFiles(dir)).toBe(1)
    const left = (await fs.readdir(dir)).sort()
    expect(left).toEqual(['.app.ts.lanes-ba9876543210.tmp', '.app.ts.swp', 'app.lanes-0123456789ab.tmp.bak'])
  })

  it('answers 0 for a folder that does not exist', async () => {
    expect(await cleanStrayTempFiles(path.join(dir, 'missing'))).toBe(0)
  })
})

// A child process replaces files of 1 KB to 10 MB in a loop with the real module and is SIGKILLed at a random
// instant. Loading it through tsx costs ~0.4 s of CPU per process (tsx's loader), far too much for 200+
// kills on two shared cores; so the first run of each lane loads atomic-write.ts through tsx, and the others
// load the same source transpiled once by TypeScript (what tsx does on the fly): the code under test is
// the real file either way, never a copy.
const CRASH_FILES: Array<[string, number]> = [
  ['tiny.txt', 1024],
  ['small.bin', 64 * 1024],
  ['medium.bin', 1024 * 1024],
  ['large.bin', 10 * 1024 * 1024],
]
const VERSIONS_PER_FILE = 3
const LANES = 4
const KILLS = 200

/**
 * Version `v` of a file: its own size and byte pattern, so a torn mix of two versions (or a short one) has
 * a hash of neither. Cheap to build (a fill), so a child starts writing at once. Its source is also the
 * child's: it is injected there with `toString()`.
 */
function versionContent(name: string, size: number, v: number): Buffer {
  return Buffer.alloc(Math.round(size * (0.6 + 0.3 * v)), `${name}@${v}|`)
}

const CHILD_SCRIPT = `
import { join } from 'node:path'

const [lane, moduleUrl] = process.argv.slice(2)
const { writeFileAtomic } = await import(moduleUrl)
const versionContent = ${versionContent.toString()}
const files = ${JSON.stringify(CRASH_FILES)}
const cache = new Map()
process.stdout.write('ready\\n')
for (let i = 0; ; i++) {
  const [name, size] = files[i % files.length]
  const v = (i * 7 + 3) % ${VERSIONS_PER_FILE}
  const key = name + v
  if (!cache.has(key)) cache.set(key, versionContent(name, size, v))
  const result = await writeFileAtomic(join(lane, name), cache.get(key))
  if (!result.ok) {
    process.stderr.write(result.reason + '\\n')
    process.exit(2)
  }
  process.stdout.write('w')
}
`

function sha(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}

async function runUntilKilled(args: string[]): Promise<number> {
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  )
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (stdout.includes('ready\n')) resolve()
    })
    void exited.then(() => reject(new Error(`child exited before it was ready: ${stderr}`)))
  })
  // Random instants across a few writes, the largest being a 10 MB write + fsync.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 120))
  child.kill('SIGKILL')
  const end = await exited
  if (end !== 'SIGKILL') throw new Error(`child ended with ${String(end)} instead of being killed: ${stderr}`)
  return (stdout.split('ready\n')[1] ?? '').length
}

describe('writeFileAtomic under SIGKILL', () => {
  it('leaves every file wholly old or wholly new, and stray temp files are cleaned', async () => {
    const known = new Map<string, Set<string>>()
    for (const [name, size] of CRASH_FILES) {
      const hashes = new Set<string>()
      for (let v = 0; v < VERSIONS_PER_FILE; v++) hashes.add(sha(versionContent(name, size, v)))
      known.set(name, hashes)
    }
    const script = path.join(dir, 'child.mjs')
    await fs.writeFile(script, CHILD_SCRIPT)
    // The module and the ones it checks its folders and sizes with, compiled side by side (imported as .mjs).
    const compiledModule = path.join(dir, 'atomic-write.mjs')
    for (const module of [atomicWriteModule, checkedFolderModule, quickReadModule, heldFilesModule]) {
      const compiled = ts
        .transpileModule(await fs.readFile(module, 'utf8'), {
          compilerOptions: {
            module: ts.ModuleKind.ESNext,
            target: ts.ScriptTarget.ES2022,
            verbatimModuleSyntax: true,
          },
          fileName: module,
        })
        .outputText.replaceAll("from './checked-folder'", "from './checked-folder.mjs'")
        .replaceAll("from './quick-read'", "from './quick-read.mjs'")
        .replaceAll("from './held-files'", "from './held-files.mjs'")
      // Only node: built-ins (and each other) may be imported, or the compiled copies would not run on their own.
      const imports = [...compiled.matchAll(/from '([^']+)'/g)].map((m) => m[1] as string)
      const own = new Set(['./checked-folder.mjs', './quick-read.mjs', './held-files.mjs'])
      expect(imports.every((m) => m.startsWith('node:') || own.has(m))).toBe(true)
      await fs.writeFile(path.join(dir, `${path.basename(module, '.ts')}.mjs`), compiled)
    }

    const lanes: string[] = []
    for (let l = 0; l < LANES; l++) {
      const lane = path.join(dir, `lane-${l}`)
      await fs.mkdir(lane)
      for (const [name, size] of CRASH_FILES)
        await fs.writeFile(path.join(lane, name), versionContent(name, size, 0))
      lanes.push(lane)
    }

    let kills = 0
    let writes = 0
    let midWriteKills = 0
    // Checked after every kill (a later write would hide a torn file); only files replaced since the last
    // check (inode numbers are reused, so with their times and size) are hashed again.
    const checked = new Map<string, string>()
    const checkLane = async (lane: string): Promise<void> => {
      for (const [name] of CRASH_FILES) {
        const file = path.join(lane, name)
        const st = await fs.stat(file)
        const version = `${st.ino}:${st.mtimeMs}:${st.ctimeMs}:${st.size}`
        if (checked.get(file) === version) continue
        const content = await fs.readFile(file)
        expect(known.get(name)?.has(sha(content)), `${name} holds a torn or unknown version`).toBe(true)
        checked.set(file, version)
      }
    }
    await Promise.all(
      lanes.map(async (lane) => {
        let strays = 0
        let viaTsx = true
        while (kills < KILLS) {
          kills++
          writes += await runUntilKilled(
            viaTsx
              ? ['--import', 'tsx', script, lane, pathToFileURL(atomicWriteModule).href]
              : [script, lane, pathToFileURL(compiledModule).href],
          )
          viaTsx = false
          await checkLane(lane)
          const now = (await tempFilesIn(lane)).length
          if (now > strays) midWriteKills++
          strays = now
        }
      }),
    )
    expect(kills).toBeGreaterThanOrEqual(KILLS)
    // The children must really have been replacing files, and some kills must have landed mid-write (a temp
    // file left behind), or the test proves nothing.
    expect(writes).toBeGreaterThan(0)
    expect(midWriteKills).toBeGreaterThan(0)

    const twoMinutesAgo = new Date(Date.now() - 120_000)
    for (const lane of lanes) {
      const strays = await tempFilesIn(lane)
      for (const name of strays) await fs.utimes(path.join(lane, name), twoMinutesAgo, twoMinutesAgo)
      expect(await cleanStrayTempFiles(lane)).toBe(strays.length)
      expect(await tempFilesIn(lane)).toEqual([])
      expect((await fs.readdir(lane)).sort()).toEqual(CRASH_FILES.map(([name]) => name).sort())
      await checkLane(lane)
    }
    // ~15-25 s on two idle cores (node's own start-up dominates); the margin is for a machine shared with
    // other test runs.
  }, 180_000)
})

/**
 * A second process swaps a checked folder for a symbolic link to a folder outside, over and over, while
 * writes go to the folder: every write must land in the real folder or be refused, never outside. A write that
 * finds the folder gone for an instant makes it again (writes make their folders): the swapper sets that one
 * aside as `<folder>.made-<n>`, with what was written in it, and goes on swapping.
 */
const SWAPPER = `
const fs = require('node:fs')
const [folder, outside, stopFile] = process.argv.slice(1)
const moved = folder + '.moved'
const until = Date.now() + 20000
let swaps = 0
let made = 0
const restore = () => {
  let entry = null
  try { entry = fs.lstatSync(folder) } catch {}
  if (entry && entry.isSymbolicLink()) fs.unlinkSync(folder)
  else if (entry) fs.renameSync(folder, folder + '.made-' + ++made)
  fs.renameSync(moved, folder)
}
process.stdout.write('go\\n')
while (Date.now() < until && !fs.existsSync(stopFile)) {
  try {
    fs.renameSync(folder, moved)
    fs.symlinkSync(outside, folder)
    fs.unlinkSync(folder)
    fs.renameSync(moved, folder)
    swaps++
  } catch {
    try { if (fs.existsSync(moved)) restore() } catch {}
  }
}
console.log(swaps)
`

describe('writeFileAtomic under a racing folder swap', () => {
  it('never writes outside the checked folder', async () => {
    const folder = path.join(dir, 'workspace', 'sub')
    const outside = path.join(dir, 'outside')
    const stopFile = path.join(dir, 'stop')
    await fs.mkdir(folder, { recursive: true })
    await fs.mkdir(outside)
    const swapper = spawn(process.execPath, ['-e', SWAPPER, folder, outside, stopFile], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let swaps = ''
    const started = new Promise<void>((resolve) =>
      swapper.stdout.on('data', (chunk: Buffer) => {
        swaps += chunk.toString()
        if (swaps.startsWith('go\n')) resolve()
      }),
    )
    const exited = new Promise((resolve) => swapper.on('exit', resolve))
    await started
    let written = 0
    let refused = 0
    try {
      for (let i = 0; i < 200; i++) {
        const result = await writeFileAtomic(path.join(folder, `f${i}.txt`), `content ${i}\n`)
        if (result.ok) written++
        else refused++
      }
    } finally {
      await fs.writeFile(stopFile, '')
      await exited
    }
    expect(Number(swaps.slice(3))).toBeGreaterThan(10)
    expect(await fs.readdir(outside)).toEqual([])
    // Every write that reported success is in the real folder (under its name or its temporary one), or in a
    // folder a write made again while the real one was away for an instant.
    const parent = path.dirname(folder)
    const folders = (await fs.readdir(parent)).filter((name) => name.startsWith(path.basename(folder)))
    const inFolder = (
      await Promise.all(folders.map((name) => fs.readdir(path.join(parent, name)).catch(() => [])))
    )
      .flat()
      .filter((name) => !TEMP.test(name))
    expect(inFolder.length).toBe(written)
    expect(written + refused).toBe(200)
  }, 60_000)
})

describe('writeJsonAtomic', () => {
  it('writes the value as indented JSON, a new file with the mode asked for, an existing one keeping its own', async () => {
    const file = path.join(dir, 'nested', 'settings.json')
    await writeJsonAtomic(file, { a: 1, list: ['x'] }, { mode: 0o600 })
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual({ a: 1, list: ['x'] })
    expect(await fs.readFile(file, 'utf8')).toContain('\n  "a": 1')
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600)
    await fs.chmod(file, 0o640)
    await writeJsonAtomic(file, { a: 2 }, { mode: 0o600 })
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual({ a: 2 })
    expect((await fs.stat(file)).mode & 0o777).toBe(0o640)
    expect(await tempFilesIn(path.dirname(file))).toEqual([])
  })

  it('throws, naming the file, when it cannot write, and leaves the old content whole', async () => {
    const file = path.join(dir, 'rules.json')
    await writeJsonAtomic(file, { keep: true })
    await fs.chmod(file, 0o444)
    await expect(writeJsonAtomic(file, { keep: false })).rejects.toThrow(`${file} is read-only`)
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual({ keep: true })
    const underAFile = path.join(file, 'inside.json')
    await expect(writeJsonAtomic(underAFile, {})).rejects.toThrow(underAFile)
  })
})
