import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BLOCKING_MAX_BYTES, readFileQuick, TimeSlices } from './file-io'
import { useTempDir } from '../test-fixtures/temp-dir'

const dir = useTempDir('lanes-file-io-')

describe('readFileQuick', () => {
  it('reads a small file at once and a large one through the thread pool, both whole', async () => {
    const small = join(dir(), 'small.txt')
    const large = join(dir(), 'large.bin')
    await writeFile(small, 'a'.repeat(BLOCKING_MAX_BYTES))
    await writeFile(large, Buffer.alloc(BLOCKING_MAX_BYTES + 1, 7))
    const quick = readFileQuick(small)
    expect(quick).toBeInstanceOf(Buffer)
    expect((quick as Buffer).toString()).toBe('a'.repeat(BLOCKING_MAX_BYTES))
    const slow = readFileQuick(large)
    expect(slow).toBeInstanceOf(Promise)
    expect((await slow).equals(Buffer.alloc(BLOCKING_MAX_BYTES + 1, 7))).toBe(true)
  })

  it('throws ENOENT for a file that is not there', () => {
    expect(() => readFileQuick(join(dir(), 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }))
  })
})

describe('TimeSlices', () => {
  it('gives the event loop back once a slice has run its budget, and not before', async () => {
    const slices = new TimeSlices(5)
    let served = 0
    // Work waiting for the event loop (as an IPC message or a timer would be).
    setImmediate(() => served++)
    // Well within the slice: no yield, so the waiting work has not run.
    await slices.tick()
    expect(served).toBe(0)
    // Blocking work past the budget: the next tick lets the waiting work run before going on.
    const end = performance.now() + 6
    while (performance.now() < end) {
      // busy, as blocking reads would be
    }
    await slices.tick()
    expect(served).toBe(1)
  })
})
