import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'

/**
 * A real temp folder for a test file, the one place its making and removal are written: fresh before each
 * test (`each`) or once for the file (`all`), removed after. Call it before the file's other hooks: vitest
 * runs after-hooks in reverse, so the file's own cleanup (closing writers, servers) runs before the removal.
 * The returned function gives the folder's real path (what tools receive) inside a test or hook.
 */
export function useTempDir(prefix: string, scope: 'each' | 'all' = 'each'): () => string {
  let dir: string | undefined
  ;(scope === 'each' ? beforeEach : beforeAll)(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), prefix)))
  })
  ;(scope === 'each' ? afterEach : afterAll)(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true })
    dir = undefined
  })
  return () => {
    if (dir === undefined) throw new Error(`useTempDir('${prefix}') is read outside a test or hook`)
    return dir
  }
}

/** Folders a test makes elsewhere (a recorded session's), removed after each test: push them on the list. */
export function removedAfterEach(): string[] {
  const folders: string[] = []
  afterEach(async () => {
    for (const dir of folders.splice(0)) await rm(dir, { recursive: true, force: true })
  })
  return folders
}
