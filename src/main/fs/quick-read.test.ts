import { closeSync, fstatSync, statSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BLOCKING_MAX_BYTES, readFileQuick, readFileSeen, type SeenRead } from './quick-read'
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

  it('leaves a small file open when asked, its descriptor reading the same file', async () => {
    const small = join(dir(), 'open.txt')
    await writeFile(small, 'kept open\n')
    const read = readFileSeen(small, { keepOpen: true })
    expect(read).not.toBeInstanceOf(Promise)
    const { content, st, fd } = read as SeenRead
    expect(content.toString()).toBe('kept open\n')
    expect(st?.size).toBe(10n)
    expect(fd).toBeTypeOf('number')
    expect(fstatSync(fd as number).ino).toBe(statSync(small).ino)
    closeSync(fd as number)
    expect((readFileSeen(small) as SeenRead).fd).toBeUndefined()
  })

  it('throws ENOENT for a file that is not there', () => {
    expect(() => readFileQuick(join(dir(), 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }))
  })
})
