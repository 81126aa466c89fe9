import { fstatSync, openSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { HeldFiles } from './held-files'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lanes-held-'))
  await writeFile(join(dir, 'f'), 'x')
})
afterEach(() => rm(dir, { recursive: true, force: true }))

const isOpen = (fd: number): boolean => {
  try {
    fstatSync(fd)
    return true
  } catch {
    return false
  }
}

it('holds up to its limit, closes the one past it at once, and closes every held file on release', async () => {
  const held = new HeldFiles(2)
  const fds = [0, 1, 2].map(() => openSync(join(dir, 'f'), 'r'))
  for (const fd of fds) held.hold(fd)
  expect(fds.map(isOpen)).toEqual([true, true, false])
  expect(held.hasRoom).toBe(false)
  await held.release()
  expect(fds.map(isOpen)).toEqual([false, false, false])
  expect(held.hasRoom).toBe(true)
  // Released twice: nothing left to close.
  await held.release()
})
