import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BLOCKING_MAX_BYTES, readFileQuick } from './quick-read'
import { useTempDir } from '../test-fixtures/temp-dir'

const dir = useTempDir('lanes-quick-read-')

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
