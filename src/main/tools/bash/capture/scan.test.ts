import { chmod, mkdir, mkdtemp, realpath, rm, symlink, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { compareScans, scanWorkspace } from './scan'

const made: string[] = []
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true })
})

describe('the before/after scan (no copy-on-write layer)', () => {
  it('reports what was added, changed, removed and re-moded, as the command left it', async () => {
    const ws = await realpath(await mkdtemp(join(tmpdir(), 'lanes-scan-')))
    made.push(ws)
    await mkdir(join(ws, 'src'))
    await writeFile(join(ws, 'src/a.ts'), 'a\n')
    await writeFile(join(ws, 'gone.txt'), 'g\n')
    await writeFile(join(ws, 'run.sh'), 'echo\n')
    const before = scanWorkspace(ws)
    await writeFile(join(ws, 'src/a.ts'), 'a changed\n')
    await unlink(join(ws, 'gone.txt'))
    await chmod(join(ws, 'run.sh'), 0o755)
    await symlink('src/a.ts', join(ws, 'link'))
    await mkdir(join(ws, 'out'))
    const { counts, paths } = compareScans(before, scanWorkspace(ws), 100)
    expect(counts).toEqual({ added: 2, changed: 1, removed: 1, modeChanged: 1 })
    expect(paths).toEqual(
      expect.arrayContaining([
        { relPath: 'src/a.ts', change: 'changed', kind: 'file' },
        { relPath: 'gone.txt', change: 'removed', kind: 'file' },
        { relPath: 'run.sh', change: 'mode', kind: 'file' },
        { relPath: 'link', change: 'added', kind: 'link' },
        { relPath: 'out', change: 'added', kind: 'dir' },
      ]),
    )
  })
})
