import { randomBytes } from 'node:crypto'
import { appendFile, open, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { MAX_DEPTH, PreimageError, PreimageStore, sha256 } from './preimages'
import { useTempDir } from '../test-fixtures/temp-dir'

const dir = useTempDir('lanes-preimages-')

/** `count` versions of one text, each a small change of the one before, at a random place. */
function editsOf(base: Buffer, count: number): Buffer[] {
  const versions = [base]
  let current = base
  for (let i = 0; i < count; i++) {
    const at = Math.floor(Math.random() * (current.length - 40))
    current = Buffer.concat([current.subarray(0, at), Buffer.from(`edit ${i};`), current.subarray(at + 20)])
    versions.push(current)
  }
  return versions
}

describe('PreimageStore', () => {
  it('fsyncs on flush exactly when something was kept since the last fsync', async () => {
    const store = await PreimageStore.open(dir())
    const handle = await open(join(dir(), 'probe'), 'w')
    const proto = Object.getPrototypeOf(handle) as { datasync: () => Promise<void> }
    await handle.close()
    const spy = vi.spyOn(proto, 'datasync')
    try {
      await store.flush() // a pack just opened: never taken as durable
      expect(spy).toHaveBeenCalledTimes(1)
      await store.put('f', Buffer.from('one'))
      await store.flush()
      expect(spy).toHaveBeenCalledTimes(2)
      await store.put('f', Buffer.from('one')) // already kept: nothing appended
      await store.flush()
      expect(spy).toHaveBeenCalledTimes(2)
      await store.put('g', Buffer.from('two'))
      await store.flush()
      expect(spy).toHaveBeenCalledTimes(3)
    } finally {
      spy.mockRestore()
      await store.close()
    }
  })

  it('returns exactly what was kept, by hash, after a reopen too', async () => {
    const store = await PreimageStore.open(dir())
    const a = randomBytes(100_000)
    const b = Buffer.concat([a.subarray(0, 500), Buffer.from('changed'), a.subarray(600)])
    const ha = await store.put('f', a)
    const hb = await store.put('f', b)
    expect(ha).toBe(sha256(a))
    expect((await store.get(hb)).equals(b)).toBe(true)
    await store.close()

    const again = await PreimageStore.open(dir())
    expect((await again.get(ha)).equals(a)).toBe(true)
    expect((await again.get(hb)).equals(b)).toBe(true)
    await again.close()
  })

  it('indexes every record on reopen, small and large, wherever they fall against its read window', async () => {
    const store = await PreimageStore.open(dir())
    // Sizes that put record boundaries at uneven places across several read windows, records smaller and larger
    // than a header's read (after a larger one only the next header is read), and one larger than a window.
    const contents = Array.from({ length: 400 }, (_, i) => randomBytes(1 + ((i * 7919) % 12_000)))
    contents.splice(150, 0, randomBytes(2_500_000))
    const hashes: string[] = []
    for (const [i, content] of contents.entries()) hashes.push(await store.put(`f${i}`, content))
    const size = store.size
    await store.close()

    const again = await PreimageStore.open(dir())
    expect(again.size).toBe(size)
    for (const [i, hash] of hashes.entries()) expect((await again.get(hash)).equals(contents[i]!)).toBe(true)
    await again.close()
  })

  it('keeps a content once, however often it is put', async () => {
    const store = await PreimageStore.open(dir())
    const a = randomBytes(50_000)
    await store.put('f', a)
    const size = store.size
    await store.put('f', a)
    await store.put('g', a)
    expect(store.size).toBe(size)
    await store.close()
  })

  it('keeps many small edits of a large file in a few times its size', async () => {
    const store = await PreimageStore.open(dir())
    const versions = editsOf(randomBytes(256 * 1024), 300)
    const hashes: string[] = []
    for (const v of versions) hashes.push(await store.put('big.txt', v))
    await store.flush()
    const onDisk = (await stat(store.file)).size
    expect(onDisk).toBeLessThan(2 * 256 * 1024)
    // Any version comes back whole, the first (the base) and one deep in the chain alike.
    for (const i of [0, 1, 150, 300])
      expect((await store.get(hashes[i] as string)).equals(versions[i] as Buffer)).toBe(true)
    await store.close()
  })

  it('stores a content whole again after MAX_DEPTH deltas, so reads stay short', async () => {
    const store = await PreimageStore.open(dir())
    const versions = editsOf(randomBytes(4096), MAX_DEPTH + 2)
    for (const v of versions) await store.put('f', v)
    const fulls = (await readFile(store.file, 'latin1'))
      .split('\n')
      .filter((l) => /^\{"hash":"[0-9a-f]+","len":\d+\}$/.test(l))
    expect(fulls.length).toBe(2)
    await store.close()
  })

  it('cuts a record torn by a crash and keeps every record before it', async () => {
    const store = await PreimageStore.open(dir())
    const a = randomBytes(10_000)
    const ha = await store.put('f', a)
    await store.close()
    const file = join(dir(), 'preimages.pack')
    await appendFile(file, '{"hash":"abc","len":500}\nonly a part')

    const again = await PreimageStore.open(dir())
    expect((await again.get(ha)).equals(a)).toBe(true)
    expect(again.has('abc')).toBe(false)
    const b = randomBytes(2000)
    const hb = await again.put('g', b)
    await again.close()
    const third = await PreimageStore.open(dir())
    expect((await third.get(hb)).equals(b)).toBe(true)
    await third.close()
  })

  it('reports a damaged content instead of returning it', async () => {
    const store = await PreimageStore.open(dir())
    const a = Buffer.from('the original text of the file\n'.repeat(100))
    const ha = await store.put('f', a)
    await store.close()
    const file = join(dir(), 'preimages.pack')
    const bytes = await readFile(file)
    const at = bytes.indexOf('original', 100)
    bytes.write('ORIGINAL', at)
    await writeFile(file, bytes)

    const again = await PreimageStore.open(dir())
    const error = await again.get(ha).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PreimageError)
    expect((error as PreimageError).code).toBe('corrupt')
    await again.close()
  })

  it('reports a content it never kept as missing', async () => {
    const store = await PreimageStore.open(dir())
    const error = await store.get(sha256(Buffer.from('never kept'))).catch((e: unknown) => e)
    expect((error as PreimageError).code).toBe('missing')
    await store.close()
  })
})
