import { execFileSync } from 'node:child_process'
import { existsSync, promises as fs, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { GIT_WORKSPACE_RULES, isProtectedPath } from './sensitive-paths'
import { isInside, resolveInWorkspace } from './workspace'
import type { WorkspaceOp, WorkspaceResolution } from './workspace'
import {
  applyCorpusSetup,
  casePath,
  fillCorpus,
  loadPathCases,
  makeCorpusLayout,
  type CorpusLayout as Layout,
} from './test-fixtures/path-corpus'
import { drawPieces, seededInts } from '../test-fixtures/seeded'

async function makeLayout(): Promise<Layout> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'lanes-ws-')))
  return makeCorpusLayout(base, {
    rootFiles: { 'src/index.ts': 'export {}\n', 'README.md': '# ws\n' },
    secrets: { outside: 'outside secret\n', evil: 'evil secret\n' },
  })
}

/** Every entry under `dir` with its size and mtime, without following links: proves nothing was touched. */
async function treeState(dir: string): Promise<string[]> {
  const lines: string[] = []
  const visit = async (current: string): Promise<void> => {
    for (const entry of await fs.readdir(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name)
      const stats = await fs.lstat(full)
      lines.push(`${full} ${stats.size} ${stats.mtimeMs} ${stats.nlink}`)
      if (entry.isDirectory()) await visit(full)
    }
  }
  await visit(dir)
  return lines.sort()
}

/** The nearest existing ancestor of `abs`, real-pathed: where a write would really land. */
async function realAncestor(abs: string): Promise<string> {
  let current = abs
  for (;;) {
    try {
      return await fs.realpath(current)
    } catch {
      const parent = path.dirname(current)
      if (parent === current) return current
      current = parent
    }
  }
}

/** The escape check behind every `inside` verdict: the returned path really lies in the real root. */
async function expectReallyInside(layout: Layout, result: WorkspaceResolution): Promise<void> {
  if (!result.ok) throw new Error(`expected ok, got: ${result.reason}`)
  const rootReal = await fs.realpath(layout.root)
  expect(isInside(rootReal, result.path)).toBe(true)
  expect(path.isAbsolute(result.path)).toBe(true)
  // Long paths cannot be real-pathed; their lexical containment above is what counts.
  if (result.path.length < 4000) expect(isInside(rootReal, await realAncestor(result.path))).toBe(true)
}

let layout: Layout
beforeEach(async () => {
  layout = await makeLayout()
})
afterEach(async () => {
  await fs.rm(layout.base, { recursive: true, force: true })
})

async function check(input: string, op: WorkspaceOp = 'read'): Promise<WorkspaceResolution> {
  return resolveInWorkspace(layout.configuredRoot, input, op)
}

async function expectOutside(input: string, op: WorkspaceOp = 'read'): Promise<string> {
  const before = await treeState(layout.base)
  const result = await check(fillCorpus(input, layout), op)
  expect(result, `${JSON.stringify(input)} (${op}) must be refused`).toMatchObject({ ok: false })
  expect(await treeState(layout.base)).toEqual(before)
  return result.ok ? '' : result.reason
}

async function expectInside(input: string, op: WorkspaceOp = 'read'): Promise<string> {
  const result = await check(fillCorpus(input, layout), op)
  expect(result, `${JSON.stringify(input)} (${op}) must be accepted`).toMatchObject({ ok: true })
  await expectReallyInside(layout, result)
  return result.ok ? result.path : ''
}

describe('resolveInWorkspace: the hostile path sample', () => {
  const cases = loadPathCases()
  for (const [index, c] of cases.entries()) {
    const shown = c.path ?? `<built ${c.category} path>`
    it(`#${index} ${c.category}: ${JSON.stringify(shown).slice(0, 60)} is ${c.expect} (${c.why.slice(0, 60)})`, async () => {
      await applyCorpusSetup(layout, c.setup_ops)
      const input = casePath(c, layout)
      for (const op of c.op ? [c.op] : (['read', 'write'] as const)) {
        if (c.expect === 'outside') {
          const reason = await expectOutside(input, op)
          expect(reason.length).toBeGreaterThan(10)
          // The secret itself is never modified (content and timestamps), whatever the verdict path.
          expect(readFileSync(path.join(layout.out, 'secret.txt'), 'utf8')).toBe('outside secret\n')
        } else {
          const result = await check(input, op)
          await expectReallyInside(layout, result)
          expect(result.ok && result.protected).toBe(c.protected ?? false)
        }
      }
    })
  }
})

describe('resolveInWorkspace: ".." and look-alikes', () => {
  it('accepts ".." that stays inside and returns the normalized real path', async () => {
    expect(await expectInside('a/b/../../README.md')).toBe(path.join(layout.root, 'README.md'))
    expect(await expectInside('src/./../src//index.ts')).toBe(path.join(layout.root, 'src', 'index.ts'))
  })

  it('refuses ".." that climbs above the root, even to come back in', async () => {
    for (const input of [
      '..',
      '../x',
      'a/../../x',
      './../x',
      'src/../../ws/README.md',
      '../<ROOTNAME>/README.md',
    ])
      expect(await expectOutside(input)).toContain('..')
    await expectOutside('../<ROOTNAME>-evil/secret.txt')
    await expectOutside('<ROOT>/../outside/secret.txt', 'write')
  })

  it('accepts names that only start or end with dots', async () => {
    for (const input of ['..foo', 'foo..', '...', 'a/..b/c', '.../x', 'src/..hidden/x.ts'])
      await expectInside(input)
  })

  it('accepts the root itself', async () => {
    expect(await expectInside('.')).toBe(layout.root)
    expect(await expectInside('<ROOT>')).toBe(layout.root)
    expect(await expectInside('<ROOT>/')).toBe(layout.root)
  })
})

describe('resolveInWorkspace: absolute and foreign path forms', () => {
  it('accepts absolute paths inside the root and refuses the ones elsewhere', async () => {
    await expectInside('<ROOT>//src/./index.ts')
    for (const input of ['/etc/passwd', '/', '<OUT>/secret.txt', '<ROOT>-evil/secret.txt', '<BASE>', '/tmp'])
      await expectOutside(input, 'write')
  })

  it('judges only the part below the root, whatever characters the root name holds', async () => {
    const odd = path.join(layout.base, 'プロ（新）$HOME%20~')
    await fs.mkdir(odd)
    await fs.writeFile(path.join(odd, 'x.ts'), '')
    expect(await resolveInWorkspace(odd, path.join(odd, 'x.ts'), 'write')).toMatchObject({
      ok: true,
      path: path.join(odd, 'x.ts'),
    })
    expect(await resolveInWorkspace(odd, 'x.ts', 'read')).toMatchObject({ ok: true })
    expect(
      await resolveInWorkspace(odd, path.join(odd, '..', 'outside', 'secret.txt'), 'read'),
    ).toMatchObject({ ok: false })
  })

  it('refuses every leading tilde form', async () => {
    for (const input of ['~', '~/.ssh/id_rsa', '~root/.bashrc', '~+/x', '~-/x', '~\\x'])
      expect(await expectOutside(input)).toContain('~')
    await expectInside('a/~/b')
  })

  it('refuses environment variable references but keeps $param route files working', async () => {
    for (const input of [
      '$HOME/.ssh/id_rsa',
      '${HOME}/x',
      'src/${X}/y',
      '%USERPROFILE%\\x',
      'src/$HOME/x',
      '$foo/x',
    ])
      await expectOutside(input, 'write')
    await expectInside('app/routes/$postId.tsx', 'write')
    await expectInside('price$.txt')
  })

  it('refuses drive letters, UNC, device and URL forms', async () => {
    for (const input of [
      'C:\\Windows\\win.ini',
      'c:/x',
      'C:x',
      '\\\\server\\share\\x',
      '//server/share/x',
      '\\\\?\\C:\\x',
      '//?/C:/x',
      '\\\\.\\PhysicalDrive0',
      '/\\server\\x',
      'file:///etc/passwd',
      'file:/etc/passwd',
      'FILE:secret',
      'https://example.com/x',
      'CON',
      'src/nul',
    ])
      await expectOutside(input, 'write')
    expect(existsSync(path.join(layout.root, 'file:'))).toBe(false)
  })

  it('refuses control and invisible characters', async () => {
    for (const input of [
      'a\u0000b',
      'src\n/etc',
      'a\tb',
      'a\rb',
      'a\u001bb',
      'a\u007fb',
      'a\u0085b',
      'a\u202eb.ts',
      'a\u200bb',
      'a\u2028b',
      'a\ud800b',
    ])
      expect(await expectOutside(input, 'write')).toMatch(/character|surrogate/)
    await expectInside('emoji-\u{1F468}\u200d\u{1F469}.txt')
    await expectInside('caf\u00e9 \u4e2d\u6587.txt')
  })

  it('treats backslashes as separators when checking traversal, and as literal characters otherwise', async () => {
    expect(await expectInside('src\\index.ts')).toBe(path.join(layout.root, 'src\\index.ts'))
    await expectInside('a\\..\\b')
    for (const input of ['..\\..\\etc\\passwd', 'src\\..\\..\\x', '\\etc\\passwd', 'src/..\\..\\x'])
      await expectOutside(input)
  })

  it('refuses traversal hidden by percent-encoding or Unicode compatibility forms', async () => {
    for (const input of [
      '%2e%2e/x',
      '%2E%2E%2Fx',
      '..%2fx',
      '%252e%252e/x',
      '%2fetc%2fpasswd',
      '..%5c..%5cx',
      'a%00b',
      '\uff0e\uff0e/x',
      '\uff0fetc\uff0fpasswd',
      '\u2025/x',
    ])
      await expectOutside(input, 'write')
    await expectInside('100%.txt')
    await expectInside('a%20b.txt')
    await expectInside('src/%2e%2e/x')
  })

  it('answers empty or non-string input with a reason instead of throwing', async () => {
    expect(await check('')).toMatchObject({ ok: false })
    expect(await resolveInWorkspace(layout.root, undefined as unknown as string, 'read')).toMatchObject({
      ok: false,
    })
    expect(await resolveInWorkspace(path.join(layout.base, 'missing'), 'x', 'read')).toMatchObject({
      ok: false,
    })
  })
})

describe('resolveInWorkspace: symbolic links', () => {
  it('follows links that stay inside and returns the real target', async () => {
    await applyCorpusSetup(layout, [
      { op: 'symlink', link: 'rel', target: 'src' },
      { op: 'symlink', link: 'abs', target: '<ROOT>/src' },
      { op: 'symlink', link: 'chain1', target: 'chain2' },
      { op: 'symlink', link: 'chain2', target: 'rel' },
      { op: 'symlink', link: 'deep/up', target: '../src/index.ts' },
    ])
    const real = path.join(layout.root, 'src', 'index.ts')
    for (const input of ['rel/index.ts', 'abs/index.ts', 'chain1/index.ts', 'deep/up'])
      expect(await expectInside(input)).toBe(real)
    expect(await expectInside('rel/new-file.ts', 'write')).toBe(path.join(layout.root, 'src', 'new-file.ts'))
  })

  it('refuses links that lead outside, directly, through a parent folder or along a chain', async () => {
    await applyCorpusSetup(layout, [
      { op: 'symlink', link: 'out-file', target: '<OUT>/secret.txt' },
      { op: 'symlink', link: 'out-dir', target: '<OUT>' },
      { op: 'symlink', link: 'rel-out', target: '../outside' },
      { op: 'symlink', link: 'sib', target: '<ROOT>-evil' },
      { op: 'symlink', link: 'etc', target: '/etc' },
      { op: 'symlink', link: 'hop1', target: 'hop2' },
      { op: 'symlink', link: 'hop2', target: 'out-dir' },
      { op: 'symlink', link: 'nested/dir/link', target: '../../../outside/secret.txt' },
    ])
    for (const input of [
      'out-file',
      'out-dir/secret.txt',
      'rel-out/secret.txt',
      'sib/secret.txt',
      'etc/passwd',
      'hop1/secret.txt',
      'nested/dir/link',
      'out-dir/new.txt',
    ])
      for (const op of ['read', 'write'] as const)
        expect(await expectOutside(input, op)).toContain('symbolic link')
  })

  it('judges ".." after a link by the link target, as the kernel does', async () => {
    await applyCorpusSetup(layout, [{ op: 'symlink', link: 'self', target: '.' }])
    await expectInside('self/src/index.ts')
    await expectOutside('self/../outside/secret.txt')
    await expectOutside('self/../<ROOTNAME>/README.md')
  })

  it('refuses dangling links that point outside, so a write cannot create a file there', async () => {
    await applyCorpusSetup(layout, [
      { op: 'symlink', link: 'dangling-out', target: '<OUT>/created-by-write.txt' },
      { op: 'symlink', link: 'dangling-abs', target: '/nonexistent-lanes-dir/x' },
      { op: 'symlink', link: 'dangling-in', target: 'src/not-yet.ts' },
    ])
    for (const op of ['read', 'write'] as const) {
      await expectOutside('dangling-out', op)
      await expectOutside('dangling-abs', op)
      expect(await expectInside('dangling-in', op)).toBe(path.join(layout.root, 'src', 'not-yet.ts'))
    }
    expect(existsSync(path.join(layout.out, 'created-by-write.txt'))).toBe(false)
  })

  it('reports symlink loops clearly', async () => {
    await applyCorpusSetup(layout, [
      { op: 'symlink', link: 'loop-a', target: 'loop-b' },
      { op: 'symlink', link: 'loop-b', target: 'loop-a' },
      { op: 'symlink', link: 'me', target: 'me' },
    ])
    for (const input of ['loop-a', 'loop-b/x', 'me'])
      expect(await expectOutside(input, 'write')).toContain('symbolic links')
  })

  it('accepts the real path and the configured path when the root itself is a symlink', async () => {
    await applyCorpusSetup(layout, [{ op: 'rootlink', link: '<BASE>/root-link' }])
    const real = path.join(layout.root, 'src', 'index.ts')
    expect(await expectInside('<ROOT>/src/index.ts')).toBe(real)
    expect(await expectInside('<BASE>/root-link/src/index.ts')).toBe(real)
    expect(await expectInside('src/index.ts')).toBe(real)
    await expectOutside('<BASE>/root-link/../outside/secret.txt')
  })
})

describe('resolveInWorkspace: hard links and special files', () => {
  it('refuses to write a file hard-linked to a file outside, but reads it', async () => {
    await applyCorpusSetup(layout, [{ op: 'hardlink', link: 'linked.txt', target: '<OUT>/secret.txt' }])
    expect(await expectOutside('linked.txt', 'write')).toContain('hard link')
    await expectInside('linked.txt', 'read')
    expect(readFileSync(path.join(layout.out, 'secret.txt'), 'utf8')).toBe('outside secret\n')
  })

  it('refuses a write through a symlink to a hard-linked file, and accepts ordinary files', async () => {
    await applyCorpusSetup(layout, [
      { op: 'hardlink', link: 'src/twin.ts', target: 'src/index.ts' },
      { op: 'symlink', link: 'to-twin', target: 'src/twin.ts' },
    ])
    await expectOutside('to-twin', 'write')
    await fs.writeFile(path.join(layout.root, 'plain.txt'), 'x')
    await expectInside('plain.txt', 'write')
  })

  it('refuses FIFOs, which would block a reader forever', async () => {
    execFileSync('mkfifo', [path.join(layout.root, 'pipe')])
    expect(await expectOutside('pipe')).toContain('FIFO')
  })
})

describe('resolveInWorkspace: long paths', () => {
  it('accepts a path longer than PATH_MAX that is lexically inside, without throwing', async () => {
    const long = 'abcdefgh/'.repeat(600) + 'x'
    expect(await expectInside(long, 'write')).toBe(path.join(layout.root, long))
    await expectInside('n'.repeat(300) + '/file.txt', 'write')
    await expectInside('src/' + 'y'.repeat(5000))
  })

  it('still refuses a long path that escapes at its end or through a link at its start', async () => {
    await applyCorpusSetup(layout, [{ op: 'symlink', link: 'escape', target: '/etc' }])
    await expectOutside('a/'.repeat(3000) + '../'.repeat(3001) + 'x')
    await expectOutside('escape/' + 'a/'.repeat(3000) + 'x', 'write')
  })

  it('stays fast on a megabyte of repeated segments', async () => {
    const started = Date.now()
    await expectInside('src/../'.repeat(150_000) + 'README.md')
    expect(Date.now() - started).toBeLessThan(5_000)
  })
})

describe('resolveInWorkspace: protected paths', () => {
  it('flags VCS internals, secrets, editor, CI and shell config for approval', async () => {
    for (const input of [
      '.git/config',
      '.git/hooks/pre-commit',
      'packages/app/.git/HEAD',
      '.GIT/config',
      '.env',
      '.env.local',
      'config/.env.production',
      '.envrc',
      '.vscode/settings.json',
      '.idea/workspace.xml',
      '.github/workflows/ci.yml',
      '.bashrc',
      '.zshrc',
      '.profile',
      '.npmrc',
      '.gitconfig',
      '.ssh/authorized_keys',
      '.claude/settings.json',
      'certs/server.key',
    ])
      for (const op of ['read', 'write'] as const) {
        const result = await check(input, op)
        expect(result, input).toMatchObject({ ok: true, protected: true })
      }
  })

  it('does not flag ordinary files that merely look similar', async () => {
    for (const input of [
      'src/env.ts',
      '.gitignore',
      '.environment/x',
      'git/config',
      'docs/github.md',
      'README.md',
    ])
      expect(await check(input, 'write'), input).toMatchObject({ ok: true, protected: false })
  })

  it('flags a link whose target is protected, and a protected name whose target is not', async () => {
    await fs.mkdir(path.join(layout.root, '.git'))
    await fs.writeFile(path.join(layout.root, '.git', 'config'), '[core]\n')
    await fs.writeFile(path.join(layout.root, 'env.txt'), 'A=1\n')
    await applyCorpusSetup(layout, [
      { op: 'symlink', link: 'cfg', target: '.git/config' },
      { op: 'symlink', link: '.env', target: 'env.txt' },
    ])
    expect(await check('cfg', 'write')).toMatchObject({ ok: true, protected: true })
    expect(await check('.env', 'write')).toMatchObject({
      ok: true,
      protected: true,
      path: path.join(layout.root, 'env.txt'),
    })
    expect(await check('.git/../README.md', 'write')).toMatchObject({ ok: true, protected: false })
  })

  it('matches protected names segment by segment', () => {
    expect(isProtectedPath('a/.git', GIT_WORKSPACE_RULES)).toBe(true)
    expect(isProtectedPath('a/.gitx/y', GIT_WORKSPACE_RULES)).toBe(false)
    expect(isProtectedPath('.', GIT_WORKSPACE_RULES)).toBe(false)
  })
})

describe('resolveInWorkspace: never escapes on hostile input', () => {
  it('returns a verdict for thousands of generated paths, and every accepted one is really inside', async () => {
    await applyCorpusSetup(layout, [
      { op: 'symlink', link: 'out', target: '<OUT>' },
      { op: 'symlink', link: 'in', target: 'src' },
      { op: 'symlink', link: 'self', target: '.' },
    ])
    const pieces = [
      '..',
      '.',
      'src',
      'in',
      'out',
      'self',
      'x',
      '~',
      '$HOME',
      '%2e',
      '\\',
      '/',
      '//',
      'C:',
      '\u0000',
      'ws',
      'outside',
      '\uff0e',
    ]
    const next = seededInts(42)
    for (let i = 0; i < 1500; i++) {
      const parts = drawPieces(next, pieces, 6)
      const input = parts.join(next() % 3 === 0 ? '\\' : '/')
      const result = await check(input, next() % 2 === 0 ? 'read' : 'write')
      if (result.ok) await expectReallyInside(layout, result)
      else expect(result.reason).toBeTruthy()
    }
  })
})
