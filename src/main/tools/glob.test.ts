import { execFileSync } from 'node:child_process'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import fastGlob from 'fast-glob'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { braceExpansions, globTool, insideChecker } from './glob'
import { ripgrepFilesArgs } from './glob/walk'
import type { ToolResult } from './tool'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, removeWorkspaces } from './test-fixtures/workspace'
import { itHoldsForEachPathCase } from './test-fixtures/path-corpus'

/** A workspace whose files each hold their own name. */
const makeGlobWorkspace = (names: string[]): Promise<string> =>
  makeWorkspace('lanes-glob-', Object.fromEntries(names.map((name) => [name, name])))

function glob(workspace: string, input: Record<string, unknown>, signal?: AbortSignal): Promise<ToolResult> {
  return globTool.execute(globTool.input.parse(input), makeToolContext(workspace, signal ? { signal } : {}))
}

function listed(result: ToolResult): string[] {
  if (result.isError) return []
  const body = result.output.split('\n\n')[0] ?? ''
  return body.startsWith('No files match') ? [] : body.split('\n')
}

afterAll(removeWorkspaces)

describe('glob', () => {
  it('lists matching files relative to the workspace root, newest first', async () => {
    const ws = await makeGlobWorkspace([
      'src/old.ts',
      'src/new.ts',
      'src/deep/mid.ts',
      'src/readme.md',
      'top.ts',
    ])
    const at = (name: string, seconds: number) => fs.utimes(path.join(ws, name), seconds, seconds)
    await at('src/old.ts', 1_000_000)
    await at('src/deep/mid.ts', 2_000_000)
    await at('src/new.ts', 3_000_000)
    await at('top.ts', 500_000)
    const result = await glob(ws, { pattern: '**/*.ts' })
    expect(result.isError).toBe(false)
    expect(listed(result)).toEqual(['src/new.ts', 'src/deep/mid.ts', 'src/old.ts', 'top.ts'])
    expect(result.metadata).toMatchObject({ count: 4, truncated: false, sort: 'mtime' })
    expect(result.title).toBe('Glob "**/*.ts"')
  })

  it('searches inside `path` but still answers with workspace-relative paths', async () => {
    const ws = await makeGlobWorkspace(['src/a.ts', 'src/x/b.ts', 'lib/c.ts'])
    const result = await glob(ws, { pattern: '**/*.ts', path: 'src' })
    expect(listed(result).sort()).toEqual(['src/a.ts', 'src/x/b.ts'])
  })

  it('supports brace alternatives and single-level stars', async () => {
    const ws = await makeGlobWorkspace(['src/index.ts', 'src/index.js', 'src/index.md', 'src/x/index.ts'])
    expect(listed(await glob(ws, { pattern: 'src/index.{js,ts}' })).sort()).toEqual([
      'src/index.js',
      'src/index.ts',
    ])
    expect(listed(await glob(ws, { pattern: 'src/*.ts' }))).toEqual(['src/index.ts'])
  })

  it('includes dotfiles but skips .git and node_modules unless the pattern names them', async () => {
    const ws = await makeGlobWorkspace([
      '.github/workflows/ci.yml',
      '.eslintrc.js',
      '.git/hooks/pre-commit.js',
      'node_modules/dep/index.js',
      'packages/a/node_modules/dep/index.js',
      'src/a.js',
    ])
    expect(listed(await glob(ws, { pattern: '**/*.js' })).sort()).toEqual(['.eslintrc.js', 'src/a.js'])
    expect(listed(await glob(ws, { pattern: '**/*.yml' }))).toEqual(['.github/workflows/ci.yml'])
    expect(listed(await glob(ws, { pattern: 'node_modules/**/*.js' }))).toEqual(['node_modules/dep/index.js'])
    expect(listed(await glob(ws, { pattern: '**/node_modules/dep/*.js' })).sort()).toEqual([
      'node_modules/dep/index.js',
      'packages/a/node_modules/dep/index.js',
    ])
    expect(listed(await glob(ws, { pattern: '.git/**' }))).toEqual(['.git/hooks/pre-commit.js'])
  })

  it('says so plainly when nothing matches, without an error', async () => {
    const ws = await makeGlobWorkspace(['a.ts'])
    const result = await glob(ws, { pattern: '**/*.rs', path: '.' })
    expect(result).toMatchObject({
      isError: false,
      output: 'No files match "**/*.rs".',
      metadata: { count: 0 },
    })
  })

  it('stops at 1000 files with a note telling the model to narrow the pattern', async () => {
    const names = Array.from({ length: 1100 }, (_, i) => `gen/d${i % 10}/f${String(i).padStart(4, '0')}.txt`)
    const ws = await makeGlobWorkspace(names)
    const result = await glob(ws, { pattern: '**/*.txt' })
    const files = listed(result)
    expect(files).toHaveLength(1000)
    expect(new Set(files).size).toBe(1000)
    expect(files).toEqual([...files].sort())
    expect(files.every((f) => names.includes(f))).toBe(true)
    expect(result.output).toContain(
      '[Showing the first 1000 matching files found, sorted by path; there are more.',
    )
    expect(result.metadata).toMatchObject({ count: 1000, truncated: true, sort: 'path' })
  })

  it('refuses patterns that climb out with ".." or point outside the workspace', async () => {
    const ws = await makeGlobWorkspace(['src/a.ts'])
    await fs.writeFile(path.join(ws, '..', 'secret.txt'), 'x')
    for (const pattern of [
      '../**',
      'src/../../*',
      '{..,src}/*',
      '**/..',
      path.join(ws, '..', '*'),
      '/etc/*',
    ]) {
      const result = await glob(ws, { pattern })
      expect(result.isError, pattern).toBe(true)
      expect(result.output, pattern).not.toContain('secret')
    }
  })

  it('refuses patterns whose braces expand to too many alternatives, without blocking', async () => {
    const ws = await makeGlobWorkspace(['a.ts'])
    for (const pattern of ['{1..10000000}/*', `${'{a,b}'.repeat(17)}/*`]) {
      const started = performance.now()
      const result = await glob(ws, { pattern })
      expect(result.isError, pattern).toBe(true)
      expect(result.output, pattern).toMatch(/expands to .* alternatives \(at most 256\)/)
      expect(performance.now() - started).toBeLessThan(500)
    }
  })

  it('accepts an absolute pattern inside the workspace', async () => {
    const ws = await makeGlobWorkspace(['src/a.ts', 'lib/b.ts'])
    const result = await glob(ws, { pattern: `${ws}/src/**/*.ts` })
    expect(listed(result)).toEqual(['src/a.ts'])
  })

  it('never follows or lists symlinks that lead outside the workspace', async () => {
    const ws = await makeGlobWorkspace(['inside.txt', 'real/inner.txt'])
    const outside = path.join(ws, '..', 'outside')
    await fs.mkdir(outside)
    await fs.writeFile(path.join(outside, 'secret.txt'), 'x')
    await fs.symlink(outside, path.join(ws, 'escape'))
    await fs.symlink(path.join(outside, 'secret.txt'), path.join(ws, 'file-link.txt'))
    await fs.symlink(path.join(ws, 'real'), path.join(ws, 'inner-link'))

    expect(listed(await glob(ws, { pattern: '**/*' })).sort()).toEqual(['inside.txt', 'real/inner.txt'])
    expect(listed(await glob(ws, { pattern: '*/secret.txt' }))).toEqual([])
    for (const pattern of ['escape/**/*', 'escape/secret.txt', 'escape/*.txt']) {
      const result = await glob(ws, { pattern })
      expect(result.isError, pattern).toBe(true)
      expect(result.output, pattern).toMatch(/outside the workspace/)
    }
    const throughPath = await glob(ws, { pattern: '**/*', path: 'escape' })
    expect(throughPath.isError).toBe(true)
    // A link that stays inside may be named as the folder to search.
    expect(listed(await glob(ws, { pattern: '*.txt', path: 'inner-link' }))).toEqual(['real/inner.txt'])
  })

  it('rejects a path that is a file or does not exist', async () => {
    const ws = await makeGlobWorkspace(['a.ts'])
    expect((await glob(ws, { pattern: '*', path: 'a.ts' })).output).toMatch(/is a file, not a folder/)
    expect((await glob(ws, { pattern: '*', path: 'missing' })).output).toMatch(/does not exist/)
    expect((await glob(ws, { pattern: '*', path: '../' })).isError).toBe(true)
  })

  it('reports folders it cannot read and still returns the rest', async () => {
    const ws = await makeGlobWorkspace(['a.txt'])
    // Nested deeper than PATH_MAX: reading it fails with ENAMETOOLONG, even for root.
    const segment = 'd'.repeat(200)
    execFileSync('bash', [
      '-c',
      `cd "$1" && for i in $(seq 30); do mkdir ${segment} && cd ${segment}; done`,
      '_',
      ws,
    ])
    const result = await glob(ws, { pattern: '**/*.txt' })
    expect(result.isError).toBe(false)
    expect(listed(result)).toEqual(['a.txt'])
    expect(result.output).toMatch(/\[Some folders could not be read:\n {2}d+…d+: ENAMETOOLONG/)
    expect(result.metadata?.errors).toBeGreaterThan(0)
  })

  it('stops when the call is aborted', async () => {
    const ws = await makeGlobWorkspace([])
    for (let d = 0; d < 100; d++) {
      const dir = path.join(ws, `d${d}`)
      await fs.mkdir(dir)
      await Promise.all(Array.from({ length: 30 }, (_, f) => fs.writeFile(path.join(dir, `f${f}.txt`), '')))
    }
    const before = new AbortController()
    before.abort()
    expect((await glob(ws, { pattern: '**/*.md' }, before.signal)).metadata).toMatchObject({
      cancelled: true,
    })

    const during = new AbortController()
    const pending = glob(ws, { pattern: '**/*.md' }, during.signal)
    setImmediate(() => during.abort())
    const result = await pending
    expect(result).toMatchObject({ isError: true, output: 'Glob cancelled.', metadata: { cancelled: true } })
  })
})

// The shared hostile path samples, as glob's `path` (and, for glob-specific cases, as the pattern).
describe('glob with the shared path corpus', () => {
  itHoldsForEachPathCase(
    {
      rootFiles: { 'src/index.ts': 'src/index.ts', 'README.md': 'README.md' },
      secrets: { outside: 'x', evil: 'x' },
    },
    async (c, { workspace, input: text }) => {
      const asPath = globTool.input.safeParse({ pattern: '**/*', path: text })
      const attempts = [asPath]
      if (c.tool === 'glob') attempts.push(globTool.input.safeParse({ pattern: text }))
      for (const parsed of attempts) {
        if (!parsed.success) {
          expect(c.expect).toBe('outside')
          continue
        }
        const result = await globTool.execute(parsed.data, makeToolContext(workspace))
        // Whatever is listed really lies inside the workspace.
        for (const entry of listed(result)) {
          expect(entry.startsWith('/') || entry.split('/').includes('..'), entry).toBe(false)
          expect((await fs.realpath(path.join(workspace, entry))).startsWith(`${workspace}/`), entry).toBe(
            true,
          )
        }
        if (c.expect === 'outside') expect(result.isError).toBe(true)
        else if (result.isError)
          expect(result.output).toMatch(/does not exist|is a file|too long|ENAMETOOLONG/i)
      }
    },
  )
})

describe('braceExpansions', () => {
  it.each([
    ['**/*.ts', 1],
    ['*.{ts,tsx}', 2],
    ['{a,b}/{c,d,e}/*', 6],
    ['a{b,c{d,e}}', 3],
    ['{1..10}', 10],
    ['{1..10..2}', 5],
    ['{a..e}', 5],
    ['{x}', 1],
    ['\\{a,b}', 1],
    ['a,b}', 1],
    ['{a,b', 1],
  ])('%s expands to %i', (pattern, count) => {
    expect(braceExpansions(pattern)).toBe(count)
  })
})

describe('insideChecker', () => {
  it('accepts real folders inside, follows links to judge them, refuses the rest', async () => {
    const ws = await makeGlobWorkspace(['a/b/c/file.txt'])
    const outside = path.join(ws, '..', 'outside')
    await fs.mkdir(outside)
    await fs.symlink(outside, path.join(ws, 'a', 'escape'))
    await fs.symlink(path.join(ws, 'a', 'b'), path.join(ws, 'inner'))
    await fs.mkdir(`${ws}-evil`)
    const check = insideChecker(ws)
    expect(await check(ws)).toBe(true)
    expect(await check(path.join(ws, 'a', 'b', 'c'))).toBe(true)
    expect(await check(path.join(ws, 'inner', 'c'))).toBe(true)
    expect(await check(path.join(ws, 'a', 'escape'))).toBe(false)
    expect(await check(path.join(ws, 'a', 'missing'))).toBe(false)
    expect(await check(`${ws}-evil`)).toBe(false)
    expect(await check(path.dirname(ws))).toBe(false)
  })
})

// glob's folders are read by `rg --files` where it can and by fast-glob otherwise (glob/walk.ts); both must give
// the same answer, the one fast-glob gave before ripgrep read the folders.
describe('glob walked by ripgrep and by fast-glob', () => {
  const secret = 'API_KEY=sk-live-do-not-show'
  const names = [
    'README.md',
    'src/a.ts',
    'src/b.js',
    'src/deep/er/c.ts',
    // Ignore files are not applied: glob answers which files exist.
    '.gitignore',
    '.ignore',
    '.rgignore',
    'ignored.txt',
    'build/out.js',
    // Hidden files and folders are listed, secret ones by name only.
    '.hidden/x.ts',
    '.env',
    '.env.local',
    // Skipped unless the pattern names them (a `.git` file, as in a submodule, too).
    '.git/config',
    '.git/hooks/pre-commit.ts',
    'sub/.git',
    'sub/kept.ts',
    'node_modules/dep/index.js',
    'pkg/node_modules/dep/index.js',
    // Names with characters that mean something to a glob, a shell or a line reader.
    'weird/a b.ts',
    'weird/[x].ts',
    'weird/{y}.ts',
    'weird/q?.ts',
    'weird/star*.ts',
    'weird/new\nline.ts',
    'weird/ünïcödé.ts',
    'weird/😀.ts',
    'weird/-dash.ts',
    'weird/#hash.ts',
    'weird/!bang.ts',
    'weird/back\\slash.ts',
    'weird/semi;colon.ts',
    'weird/trailing ',
    'real/inner.ts',
  ]
  const patterns = [
    '**/*',
    '**',
    '*',
    '**/*.ts',
    '**/*.{ts,js}',
    '*.md',
    'src/**',
    'src/*.ts',
    '{src,weird}/**/*.ts',
    '{src/**/*.ts,src/deep/**/*.ts}',
    'weird/*',
    'weird/[x].ts',
    'weird/\\[x\\].ts',
    'weird/*\\?.ts',
    '**/😀.ts',
    '**/?.ts',
    '**/*line*',
    '**/.env*',
    '**/*.TS',
    '@(src|weird)/*.ts',
    '!(src)/*.ts',
    '.git/**',
    '**/.git',
    '**/.git/**',
    'node_modules/**/*.js',
    '**/node_modules/**',
    'link-in/*.ts',
    'link-in/**',
    '**/inner.ts',
    'ignored.txt',
    'build/**',
    'weird/a b.ts',
    '**/-dash.ts',
    '**/a b.ts',
    '**/trailing ',
    './src/*.ts',
    './**/*.ts',
    'src//a.ts',
    'src/',
    'missing/**/*.ts',
    'README.md/*',
  ]
  let ws = ''
  const withRipgrep = (path: string | undefined, run: () => Promise<ToolResult>): Promise<ToolResult> => {
    const saved = process.env.LANES_RG_PATH
    if (path === undefined) delete process.env.LANES_RG_PATH
    else process.env.LANES_RG_PATH = path
    return run().finally(() => {
      if (saved === undefined) delete process.env.LANES_RG_PATH
      else process.env.LANES_RG_PATH = saved
    })
  }
  const both = async (pattern: string): Promise<{ rg: ToolResult; fg: ToolResult }> => ({
    rg: await withRipgrep(undefined, () => glob(ws, { pattern })),
    fg: await withRipgrep('/nonexistent/rg', () => glob(ws, { pattern })),
  })

  beforeAll(async () => {
    ws = await makeWorkspace('lanes-glob-walkers-', Object.fromEntries(names.map((n) => [n, n])))
    await fs.writeFile(path.join(ws, '.env'), secret)
    await fs.writeFile(path.join(ws, '.gitignore'), 'ignored.txt\nbuild/\n')
    await fs.writeFile(path.join(ws, '.ignore'), '*\n')
    await fs.writeFile(path.join(ws, '.rgignore'), '*\n')
    // A name that is not UTF-8, a FIFO, and links: out of the workspace, and to a folder and a file inside.
    await fs.writeFile(
      Buffer.concat([Buffer.from(`${ws}/weird/bad-`), Buffer.from([0xff]), Buffer.from('.ts')]),
      'x',
    )
    execFileSync('mkfifo', [path.join(ws, 'fifo.ts')])
    const outside = path.join(ws, '..', 'walkers-outside')
    await fs.mkdir(outside, { recursive: true })
    await fs.writeFile(path.join(outside, 'secret.ts'), secret)
    await fs.symlink(outside, path.join(ws, 'link-out'))
    await fs.symlink(path.join(outside, 'secret.ts'), path.join(ws, 'file-link.ts'))
    await fs.symlink(path.join(ws, 'real'), path.join(ws, 'link-in'))
    await fs.symlink(path.join(ws, 'real', 'inner.ts'), path.join(ws, 'inner-link.ts'))
    // Nested deeper than PATH_MAX: a folder no walker can read.
    execFileSync('bash', [
      '-c',
      `cd "$1" && for i in $(seq 25); do mkdir ${'e'.repeat(200)} && cd "$_"; done`,
      '_',
      ws,
    ])
  })

  it.each(patterns)('%s: the same answer from either walker', async (pattern) => {
    const { rg, fg } = await both(pattern)
    expect(fg.metadata?.walker).toBe('fast-glob')
    const { walker: rgWalker, ...rgMeta } = rg.metadata ?? {}
    const { walker: _fgWalker, ...fgMeta } = fg.metadata ?? {}
    // A pattern fast-glob answers with a stat (no wildcard) is left to fast-glob.
    expect(rgWalker).toBe(fastGlob.isDynamicPattern(pattern) ? 'ripgrep' : 'fast-glob')
    expect(rg.output).toBe(fg.output)
    expect(rgMeta).toEqual(fgMeta)
    expect(rg.isError).toBe(fg.isError)
    expect(rg.output).not.toContain('sk-live')
  })

  it('lists what ignore files name, hidden files, and names with special characters; never links', async () => {
    const all = listed(await glob(ws, { pattern: '**/*' })).sort()
    const expected = names
      .filter((n) => !n.startsWith('.git/') && n !== 'sub/.git' && !n.includes('node_modules/'))
      // A newline in a name shows as one: the answer is lines of text.
      .flatMap((n) => n.split('\n'))
      .sort()
    expect(all).toEqual(expected)
    expect(listed(await glob(ws, { pattern: 'link-in/*.ts' }))).toEqual(['link-in/inner.ts'])
    const deep = await glob(ws, { pattern: '**/*.md' })
    expect(deep.output).toMatch(/\[Some folders could not be read:\n {2}e+…e+: ENAMETOOLONG/)
    expect(deep.metadata).toMatchObject({ walker: 'ripgrep', errors: 1 })
  })

  it('stops the ripgrep walk at the cap with the same note', async () => {
    const many = Array.from({ length: 1500 }, (_, i) => `many/d${i % 7}/f${i}.log`)
    const capped = await makeGlobWorkspace(many)
    const result = await glob(capped, { pattern: '**/*.log' })
    expect(result.metadata).toMatchObject({ walker: 'ripgrep', count: 1000, truncated: true, sort: 'path' })
    expect(listed(result).every((f) => many.includes(f))).toBe(true)
    expect(result.output).toContain(
      '[Showing the first 1000 matching files found, sorted by path; there are more.',
    )
  })
})

describe("ripgrep's arguments for a glob walk", () => {
  const args = (pattern: string, ignore = ['**/.git/**', '**/node_modules/**']): string[] => {
    const tasks = fastGlob.generateTasks(pattern, { dot: true, ignore })
    return ripgrepFilesArgs(tasks, ignore, [...new Set(tasks.map((t) => t.base))])
  }
  const globs = (a: string[]): string[] => a.flatMap((x, i) => (a[i - 1] === '--glob' ? [x] : []))

  it('narrows the walk to the last segment when it is plain names and stars, and prunes ignored folders last', () => {
    expect(globs(args('**/README.md'))).toEqual(['README.md', '!.git/', '!node_modules/'])
    expect(globs(args('src/**/*.{ts,js}'))).toEqual(['*.ts', '*.js', '!.git/', '!node_modules/'])
    expect(globs(args('.git/**', ['**/node_modules/**']))).toEqual(['!node_modules/'])
  })

  it('lists every file when a last segment could match differently in the two dialects', () => {
    for (const pattern of [
      'src/**',
      '**/?.ts',
      '**/[ab].ts',
      '**/@(a|b).ts',
      '**/name ',
      '**/#x',
      '**/!(a).ts',
    ])
      expect(
        globs(args(pattern)).filter((g) => !g.startsWith('!')),
        pattern,
      ).toEqual([])
  })

  it('reads no deeper than a pattern without ** can match', () => {
    const depth = (pattern: string): string | undefined => {
      const a = args(pattern)
      return a.includes('--max-depth') ? a[a.indexOf('--max-depth') + 1] : undefined
    }
    expect(depth('*')).toBe('1')
    expect(depth('src/*.ts')).toBe('1')
    expect(depth('*/*/x.ts')).toBe('3')
    expect(depth('src/**/x.ts')).toBeUndefined()
    expect(args('src/*.ts').slice(-2)).toEqual(['--', 'src'])
  })
})
