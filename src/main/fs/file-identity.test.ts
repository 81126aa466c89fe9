import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { lstatSync } from 'node:fs'
import { chmod, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { useTempDir } from '../test-fixtures/temp-dir'
import { identityOf, stillIdentity, trustedIdentity } from './file-identity'

const dir = useTempDir('lanes-identity-')

describe('a file’s identity', () => {
  it('is not trusted while its times are within the clock’s granularity of the moment it is taken', async () => {
    const file = join(dir(), 'a.txt')
    await writeFile(file, 'one\n')
    const st = lstatSync(file, { bigint: true })
    const written = Number(st.ctimeNs / 1_000_000n)
    // Just written: a change within the same tick would leave every field equal.
    expect(trustedIdentity(st, written)).toBeUndefined()
    expect(trustedIdentity(st, written + 50)).toBeUndefined()
    // Taken well after the last change: any later change gets a later ctime.
    expect(trustedIdentity(st, written + 500)).toBe(identityOf(st))
  })

  it('waits two seconds on a file system that keeps whole seconds', () => {
    const st = { ...lstatSync(dir(), { bigint: true }), mtimeNs: 5_000_000_000n, ctimeNs: 5_000_000_000n }
    expect(trustedIdentity(st, 5_000 + 1_500)).toBeUndefined()
    expect(trustedIdentity(st, 5_000 + 2_500)).toBe(identityOf(st))
  })

  it('changes with any change to the file, even one of the same size with its time set back', async () => {
    const file = join(dir(), 'b.txt')
    await writeFile(file, 'aaaa\n')
    const was = lstatSync(file, { bigint: true })
    const times = lstatSync(file)
    await new Promise((resolve) => setTimeout(resolve, 20))
    await writeFile(file, 'bbbb\n')
    await utimes(file, times.atime, times.mtime)
    const now = lstatSync(file, { bigint: true })
    expect(now.size).toBe(was.size)
    expect(identityOf(now)).not.toBe(identityOf(was))
    const after = identityOf(now)
    await chmod(file, 0o600)
    expect(identityOf(lstatSync(file, { bigint: true }))).not.toBe(after)
  })
})

describe('stillIdentity', () => {
  const sha = (text: string) => createHash('sha256').update(text).digest('hex')

  it('is the identity of a file whose content is still the one expected, once its times are old enough', async () => {
    const file = join(dir(), 'c.txt')
    await writeFile(file, 'what Lanes wrote\n')
    // Just written: not yet.
    expect(stillIdentity(file, sha('what Lanes wrote\n'), 1024)).toBeUndefined()
    await new Promise((resolve) => setTimeout(resolve, 150))
    const st = lstatSync(file, { bigint: true })
    expect(stillIdentity(file, sha('what Lanes wrote\n'), 1024)).toEqual({
      id: identityOf(st),
      mtimeMs: lstatSync(file).mtimeMs,
    })
    // Another content, or a file larger than the caller reads: none.
    expect(stillIdentity(file, sha('something else\n'), 1024)).toBeUndefined()
    expect(stillIdentity(file, sha('what Lanes wrote\n'), 4)).toBeUndefined()
  })

  it('is none for what is not a regular file, without hanging on a FIFO', async () => {
    const fifo = join(dir(), 'pipe')
    execFileSync('mkfifo', [fifo])
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(stillIdentity(fifo, sha(''), 1024)).toBeUndefined()
    expect(stillIdentity(join(dir(), 'absent'), sha(''), 1024)).toBeUndefined()
  })
})
