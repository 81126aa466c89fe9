import { createHash } from 'node:crypto'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FileSnapshot } from './snapshots'
import { checkConflict, hashFile, SnapshotStore } from './snapshots'

let dir: string

beforeEach(async () => {
  dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'lanes-snap-')))
})

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true })
})

const sha = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex')

/** a.txt holding `content`, read once: its snapshot is in a fresh store. */
async function readA(content: string): Promise<{ file: string; store: SnapshotStore }> {
  const file = path.join(dir, 'a.txt')
  await fs.writeFile(file, content)
  const store = new SnapshotStore()
  store.record(await snapshotOf(file))
  return { file, store }
}

async function snapshotOf(file: string): Promise<FileSnapshot> {
  return { path: file, mtimeMs: (await fs.stat(file)).mtimeMs, hash: sha(await fs.readFile(file)) }
}

/** Moves the mtime by a whole second, as a later save would, whatever the clock granularity. */
async function bumpMtime(file: string): Promise<void> {
  const later = new Date((await fs.stat(file)).mtimeMs + 1000)
  await fs.utimes(file, later, later)
}

describe('SnapshotStore', () => {
  it('records, replaces and reports every recorded snapshot through onRecord', () => {
    const seen: FileSnapshot[] = []
    const store = new SnapshotStore({ onRecord: (s) => seen.push(s) })
    store.record({ path: '/a', mtimeMs: 1, hash: 'h1' })
    store.record({ path: '/a', mtimeMs: 2, hash: 'h2' })
    store.record({ path: '/b', mtimeMs: 3, hash: 'h3' })
    expect(store.get('/a')).toEqual({ path: '/a', mtimeMs: 2, hash: 'h2' })
    expect(store.all()).toHaveLength(2)
    expect(seen.map((s) => s.hash)).toEqual(['h1', 'h2', 'h3'])
  })

  it('restores snapshots from a session log without reporting them again', () => {
    const seen: FileSnapshot[] = []
    const store = new SnapshotStore({ onRecord: (s) => seen.push(s) })
    store.restore([
      { path: '/a', mtimeMs: 1, hash: 'h1' },
      { path: '/b', mtimeMs: 2, hash: 'h2' },
    ])
    expect(store.get('/b')?.hash).toBe('h2')
    expect(store.all()).toHaveLength(2)
    expect(seen).toEqual([])
  })

  it('records an expected snapshot when it resolves, and settled() waits for it', async () => {
    const store = new SnapshotStore()
    let resolve!: (s: FileSnapshot | null) => void
    store.expect('/big', new Promise((r) => (resolve = r)))
    expect(store.get('/big')).toBeUndefined()
    resolve({ path: '/big', mtimeMs: 5, hash: 'hb' })
    await store.settled('/big')
    expect(store.get('/big')?.hash).toBe('hb')
  })

  it('lets a newer record win over an expected snapshot still being computed', async () => {
    const store = new SnapshotStore()
    let resolve!: (s: FileSnapshot | null) => void
    store.expect('/f', new Promise((r) => (resolve = r)))
    store.record({ path: '/f', mtimeMs: 9, hash: 'written' })
    resolve({ path: '/f', mtimeMs: 1, hash: 'stale read' })
    await store.settled('/f')
    await new Promise((r) => setTimeout(r, 0))
    expect(store.get('/f')?.hash).toBe('written')
  })

  it('survives an expected snapshot that fails', async () => {
    const store = new SnapshotStore()
    store.expect('/f', Promise.reject(new Error('disk gone')))
    await store.settled('/f')
    expect(store.get('/f')).toBeUndefined()
  })
})

describe('hashFile', () => {
  it('streams the SHA-256 of a file larger than its chunk', async () => {
    const file = path.join(dir, 'big.bin')
    const data = Buffer.alloc(3 * 1024 * 1024 + 17, 'lanes')
    await fs.writeFile(file, data)
    expect(await hashFile(file)).toBe(sha(data))
  })

  it('hashes an empty file', async () => {
    const file = path.join(dir, 'empty')
    await fs.writeFile(file, '')
    expect(await hashFile(file)).toBe(sha(''))
  })
})

describe('checkConflict', () => {
  it('lets a new file be written without a read', async () => {
    expect(await checkConflict(new SnapshotStore(), path.join(dir, 'new.txt'))).toEqual({ ok: true })
  })

  it('refuses to overwrite a file that was never read in the session', async () => {
    const file = path.join(dir, 'a.txt')
    await fs.writeFile(file, 'a')
    const result = await checkConflict(new SnapshotStore(), file, { displayPath: 'a.txt' })
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/a\.txt .*not been read.*read_file/)
  })

  it('accepts an unchanged file', async () => {
    const { file, store } = await readA('a')
    expect(await checkConflict(store, file)).toEqual({ ok: true })
  })

  it('refuses a file whose content changed since it was read', async () => {
    const { file, store } = await readA('a')
    await fs.writeFile(file, 'changed by the user')
    await bumpMtime(file)
    const result = await checkConflict(store, file, { displayPath: 'a.txt' })
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/changed on disk since you last read it.*read_file/)
  })

  it('treats a touch as no conflict and refreshes the snapshot to the new mtime', async () => {
    const file = path.join(dir, 'a.txt')
    await fs.writeFile(file, 'same')
    const seen: FileSnapshot[] = []
    const store = new SnapshotStore({ onRecord: (s) => seen.push(s) })
    store.record(await snapshotOf(file))
    await bumpMtime(file)
    expect(await checkConflict(store, file)).toEqual({ ok: true })
    expect(store.get(file)?.mtimeMs).toBe((await fs.stat(file)).mtimeMs)
    expect(seen).toHaveLength(2)
  })

  it('treats a same-content rewrite as no conflict', async () => {
    const { file, store } = await readA('same')
    await fs.writeFile(file, 'same')
    await bumpMtime(file)
    expect(await checkConflict(store, file)).toEqual({ ok: true })
  })

  it('refuses a change that kept the mtime when the caller knows the current hash', async () => {
    const file = path.join(dir, 'a.txt')
    await fs.writeFile(file, 'one')
    const store = new SnapshotStore()
    const before = await snapshotOf(file)
    store.record(before)
    const result = await checkConflict(store, file, {
      observed: { mtimeMs: before.mtimeMs, hash: sha('two') },
    })
    expect(result.ok).toBe(false)
  })

  it('waits for a snapshot still being hashed before judging', async () => {
    const file = path.join(dir, 'a.txt')
    await fs.writeFile(file, 'a')
    const store = new SnapshotStore()
    const snap = await snapshotOf(file)
    store.expect(file, new Promise((r) => setTimeout(() => r(snap), 30)))
    expect(await checkConflict(store, file)).toEqual({ ok: true })
  })
})
