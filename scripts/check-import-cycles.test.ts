import { spawnSync } from 'node:child_process'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const script = fileURLToPath(new URL('./check-import-cycles.js', import.meta.url))

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lanes-cycles-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function tree(files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true })
    await writeFile(join(dir, name), text)
  }
}

function check(): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' })
  return { status: run.status, output: run.stdout + run.stderr }
}

describe('check-import-cycles', () => {
  it('fails on a cycle through a type-only import or a re-export, naming its files', async () => {
    await tree({
      'a.ts': "import type { B } from './b'\nexport type A = B[]\n",
      'b.ts': "export * from './lib/c.js'\nexport type B = string\n",
      'lib/c.ts': "import { x } from '../a'\nexport const y = x\n",
      'lone.tsx': "import { y } from './lib'\nexport const z = y\n",
      'lib/index.ts': 'export const y = 1\n',
    })
    const { status, output } = check()
    expect(status).toBe(1)
    expect(output).toContain('1 import cycle(s)')
    expect(output).toMatch(/a\.ts -> .*b\.ts -> .*lib\/c\.ts -> .*a\.ts/)
    expect(output).not.toContain('lone.tsx')
  })

  it('passes a tree without cycles, where a dynamic import() back does not count', async () => {
    await tree({
      'a.ts': "import { b } from './b'\nexport const a = b\n",
      'b.ts': "export const b = 1\nexport const later = () => import('./a')\n",
    })
    const { status, output } = check()
    expect(output).toContain('No import cycles among 2 modules.')
    expect(status).toBe(0)
  })

  it('finds the cycle of a module that imports itself', async () => {
    await tree({ 'self.ts': "import './self'\nexport {}\n" })
    expect(check().status).toBe(1)
  })
})
