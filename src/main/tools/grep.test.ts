import { execFileSync } from 'node:child_process'
import { existsSync, promises as fs } from 'node:fs'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { grepTool } from './grep'
import { globToRegExp } from './grep/gitignore'
import { translateRegex } from './grep/rust-regex'
import { EXACT_VALUES } from './grep/secret-lens'
import type { ToolResult } from './tool'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, removeWorkspaces } from './test-fixtures/workspace'
import { itHoldsForEachPathCase } from './test-fixtures/path-corpus'

const makeGrepWorkspace = (files: Record<string, string | Buffer>): Promise<string> =>
  makeWorkspace('lanes-grep-', files)

function grep(workspace: string, input: Record<string, unknown>, signal?: AbortSignal): Promise<ToolResult> {
  return grepTool.execute(grepTool.input.parse(input), makeToolContext(workspace, signal ? { signal } : {}))
}

function outputLines(result: ToolResult): string[] {
  return result.output.split('\n\n')[0]?.split('\n') ?? []
}

afterAll(removeWorkspaces)

/** A folder nested deeper than PATH_MAX: reading it fails with ENAMETOOLONG even for root. */
function makeTooDeepFolder(parent: string): void {
  const segment = 'd'.repeat(200)
  execFileSync('bash', [
    '-c',
    `cd "$1" && for i in $(seq 30); do mkdir ${segment} && cd ${segment}; done && echo needle > deep.txt`,
    '_',
    parent,
  ])
}

/** Children of this process whose command name is `rg`, from /proc (Linux). */
async function ripgrepChildren(): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8')
      const match = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat)
      if (match?.[1] === 'rg' && Number(match[2]) === process.pid) pids.push(Number(entry))
    } catch {
      // The process ended while we looked.
    }
  }
  return pids
}

// Both engines must give the same answers for the same question: the suite runs once with ripgrep and once
// with the built-in search (no binary), except for what only one of them does.
describe.each([
  { engine: 'ripgrep', rgPath: undefined },
  { engine: 'builtin', rgPath: '/nonexistent/rg' },
])('grep ($engine)', ({ engine, rgPath }) => {
  const saved = process.env.LANES_RG_PATH
  beforeEach(() => {
    if (rgPath === undefined) delete process.env.LANES_RG_PATH
    else process.env.LANES_RG_PATH = rgPath
  })
  afterEach(() => {
    if (saved === undefined) delete process.env.LANES_RG_PATH
    else process.env.LANES_RG_PATH = saved
  })

  it('returns matching lines as path:line:text with paths relative to the workspace root', async () => {
    const ws = await makeGrepWorkspace({
      'src/a.ts': 'const x = 1\nexport function needle() {}\n',
      'src/deep/b.ts': 'needle()\nother\nneedle again\n',
      'README.md': 'no match here\n',
    })
    const result = await grep(ws, { pattern: 'needle', path: 'src' })
    expect(result.isError).toBe(false)
    expect(outputLines(result)).toEqual([
      'src/a.ts:2:export function needle() {}',
      'src/deep/b.ts:1:needle()',
      'src/deep/b.ts:3:needle again',
    ])
    expect(result.metadata).toMatchObject({ engine, matches: 3, files: 2, truncated: false })
    expect(result.title).toBe('Search "needle" in src')
  })

  it('reports the engine it used, and warns when the built-in search stands in for ripgrep', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'needle\n' })
    const result = await grep(ws, { pattern: 'needle' })
    expect(result.metadata?.engine).toBe(engine)
    if (engine === 'builtin')
      expect(String(result.metadata?.warning)).toMatch(/ripgrep is not available.*built-in search/)
    else expect(result.metadata?.warning).toBeUndefined()
  })

  it('searches a single file given as path', async () => {
    const ws = await makeGrepWorkspace({ 'src/a.ts': 'one\nneedle\n', 'src/b.ts': 'needle\n' })
    const result = await grep(ws, { pattern: 'needle', path: 'src/a.ts' })
    expect(outputLines(result)).toEqual(['src/a.ts:2:needle'])
  })

  it('says so plainly when nothing matches, without an error', async () => {
    const ws = await makeGrepWorkspace({ 'a.ts': 'hello\n' })
    const result = await grep(ws, { pattern: 'absent', include: '*.ts' })
    expect(result.isError).toBe(false)
    expect(result.output).toBe('No matches for "absent" (files matching *.ts).')
    expect(result.metadata).toMatchObject({ matches: 0, files: 0, truncated: false })
  })

  it('respects .gitignore at the root and in subfolders, also outside a git repository', async () => {
    const ws = await makeGrepWorkspace({
      '.gitignore': 'dist/\n*.log\n!keep.log\n',
      'dist/bundle.js': 'needle\n',
      'debug.log': 'needle\n',
      'keep.log': 'needle\n',
      'src/.gitignore': '/generated.ts\n',
      'src/generated.ts': 'needle\n',
      'src/real.ts': 'needle\n',
      'src/sub/generated.ts': 'needle\n',
      'src/debug.log': 'needle\n',
    })
    const result = await grep(ws, { pattern: 'needle' })
    expect(outputLines(result)).toEqual([
      'keep.log:1:needle',
      'src/real.ts:1:needle',
      'src/sub/generated.ts:1:needle',
    ])
    // The root's .gitignore still applies below a subfolder the search starts in.
    expect(outputLines(await grep(ws, { pattern: 'needle', path: 'src' }))).toEqual([
      'src/real.ts:1:needle',
      'src/sub/generated.ts:1:needle',
    ])
  })

  it('searches an ignored folder when it is named explicitly, still applying the rules inside it', async () => {
    const ws = await makeGrepWorkspace({
      '.gitignore': 'dist/\n*.log\n',
      'dist/bundle.js': 'needle\n',
      'dist/build.log': 'needle\n',
    })
    expect(outputLines(await grep(ws, { pattern: 'needle', path: 'dist' }))).toEqual([
      'dist/bundle.js:1:needle',
    ])
  })

  it('searches hidden files but never .git internals', async () => {
    const ws = await makeGrepWorkspace({
      '.github/workflows/ci.yml': 'run: needle\n',
      '.eslintrc.json': '{"needle": true}\n',
      '.git/config': 'needle\n',
      '.git/objects/ab/cd': 'needle\n',
    })
    const result = await grep(ws, { pattern: 'needle' })
    expect(outputLines(result)).toEqual([
      '.eslintrc.json:1:{"needle": true}',
      '.github/workflows/ci.yml:1:run: needle',
    ])
  })

  it('leaves no trace of credential files: no line, no count, no note', async () => {
    const ws = await makeGrepWorkspace({
      '.env': 'API_TOKEN=needle-secret\n',
      'config/.env.production': 'needle\n',
      'certs/server.key': 'needle\n',
      '.env.example': 'API_TOKEN=needle-placeholder\n',
      'src/a.ts': 'process.env.needle\n',
    })
    const result = await grep(ws, { pattern: 'needle' })
    expect(result.output).not.toContain('needle-secret')
    expect(outputLines(result)).toEqual([
      '.env.example:1:API_TOKEN=needle-placeholder',
      'src/a.ts:1:process.env.needle',
    ])
    expect(result.output).not.toMatch(/withheld|credential|not shown/)
    expect(result.metadata).toMatchObject({ matches: 2, files: 2 })
    expect(result.metadata).not.toHaveProperty('withheld')
  })

  it('gives byte-identical results for a right and a wrong guess at a secret (the regex oracle)', async () => {
    const ws = await makeGrepWorkspace({
      '.env': 'API_TOKEN=sk-4f9a8b7c6d5e\n',
      'deploy/.env.production': 'API_TOKEN=sk-4f9a8b7c6d5e\n',
      'src/a.ts': 'const t = process.env.API_TOKEN\n',
    })
    for (const where of [undefined, '.env', 'deploy']) {
      const right = await grep(ws, { pattern: '^API_TOKEN=sk-4f9a', ...(where ? { path: where } : {}) })
      const wrong = await grep(ws, { pattern: '^API_TOKEN=sk-0000', ...(where ? { path: where } : {}) })
      const strip = (r: typeof right): unknown => ({
        output: r.output.replace(/sk-4f9a|sk-0000/g, 'GUESS'),
        isError: r.isError,
        metadata: r.metadata,
      })
      expect(strip(right), where).toEqual(strip(wrong))
    }
  })

  it('filters files with the include glob', async () => {
    const ws = await makeGrepWorkspace({
      'src/a.ts': 'needle\n',
      'src/b.tsx': 'needle\n',
      'src/c.js': 'needle\n',
      'lib/d.ts': 'needle\n',
    })
    const byName = await grep(ws, { pattern: 'needle', include: '*.{ts,tsx}' })
    expect(outputLines(byName)).toEqual(['lib/d.ts:1:needle', 'src/a.ts:1:needle', 'src/b.tsx:1:needle'])
    const byPath = await grep(ws, { pattern: 'needle', include: 'src/**/*.ts' })
    expect(outputLines(byPath)).toEqual(['src/a.ts:1:needle'])
  })

  it('matches regardless of case only when case_insensitive is set', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'Needle\nNEEDLE\nneedle\nnope\n' })
    expect(outputLines(await grep(ws, { pattern: 'needle' }))).toEqual(['a.txt:3:needle'])
    expect(outputLines(await grep(ws, { pattern: 'needle', case_insensitive: true }))).toEqual([
      'a.txt:1:Needle',
      'a.txt:2:NEEDLE',
      'a.txt:3:needle',
    ])
  })

  it('treats a pattern starting with a dash as a pattern, not an option', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'use --files here\n' })
    expect(outputLines(await grep(ws, { pattern: '--files' }))).toEqual(['a.txt:1:use --files here'])
  })

  it('supports look-around and backreferences', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'foobar\nfoobaz\nabab\nabcd\n' })
    expect(outputLines(await grep(ws, { pattern: 'foo(?=baz)' }))).toEqual(['a.txt:2:foobaz'])
    expect(outputLines(await grep(ws, { pattern: '(ab)\\1' }))).toEqual(['a.txt:3:abab'])
  })

  it('matches `$` at the end of CRLF lines and shows them without the carriage return', async () => {
    const ws = await makeGrepWorkspace({ 'win.txt': 'first needle\r\nsecond\r\n' })
    expect(outputLines(await grep(ws, { pattern: 'needle$' }))).toEqual(['win.txt:1:first needle'])
  })

  it('keeps file names containing colons intact', async () => {
    const ws = await makeGrepWorkspace({ 'a:1:b.txt': 'x:needle:y\n' })
    expect(outputLines(await grep(ws, { pattern: 'needle' }))).toEqual(['a:1:b.txt:1:x:needle:y'])
  })

  it('skips binary files', async () => {
    const ws = await makeGrepWorkspace({
      'image.bin': Buffer.from('needle\u0000\u0001\u0002needle'),
      'a.txt': 'needle\n',
    })
    expect(outputLines(await grep(ws, { pattern: 'needle' }))).toEqual(['a.txt:1:needle'])
  })

  it('does not show the content of a binary file named as path, and says why', async () => {
    const ws = await makeGrepWorkspace({ 'assets/image.bin': Buffer.from('needle\u0000\u0001needle\n') })
    const result = await grep(ws, { pattern: 'needle', path: 'assets/image.bin' })
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(
      /^No matches for "needle" in assets\/image\.bin\.\n\n\[assets\/image\.bin: binary file/,
    )
  })

  it('judges a line that repeats a secret value by its redacted text: a guess of the value finds nothing', async () => {
    const secret = 'Rep3at-S3cret-Value-81f2'
    const ws = await makeGrepWorkspace({
      '.env': `API_TOKEN=${secret}\n`,
      'settings.py': `API_TOKEN = "${secret}"\nTIMEOUT = 30\n`,
      'other.py': `TOKEN_COPY = "${secret}"  # api_token\n`,
      'long.js': `var a = "${'x'.repeat(480)}${secret}";\n`,
    })
    const results = async (guess: string, caseInsensitive = false): Promise<string[]> => {
      const out: string[] = []
      for (const pattern of [
        `API_TOKEN = "${guess}`,
        `(${guess}|\\[secret)`,
        `x{480}${guess}`,
        `${guess.toLowerCase()}`,
      ]) {
        const r = await grep(ws, { pattern, case_insensitive: caseInsensitive })
        out.push(r.output.replaceAll(guess, 'GUESS').replaceAll(guess.toLowerCase(), 'GUESS'))
      }
      return out
    }
    for (const ci of [false, true]) {
      const right = await results('Rep3at-S', ci)
      expect(right).toEqual(await results('Wr0ng-Gu', ci))
      expect(right.join('\n')).not.toContain('Rep3at-S3')
    }
    // The redacted lines are what the search sees: found by their marker, counted once each, long ones cut after
    // redaction.
    const marker = await grep(ws, { pattern: '\\[secret from \\.env hidden\\]' })
    expect(outputLines(marker)).toEqual([
      `long.js:1:${`var a = "${'x'.repeat(480)}[secret from .env hidden]`.slice(0, 500)} [... omitted end of long line]`,
      'other.py:1:TOKEN_COPY = "[secret from .env hidden]"  # api_token',
      'settings.py:1:API_TOKEN = "[secret from .env hidden]"',
    ])
    // A line that matches elsewhere is still found, shown redacted by the tool itself.
    expect(outputLines(await grep(ws, { pattern: 'api_token', case_insensitive: true }))).toEqual([
      'other.py:1:TOKEN_COPY = "[secret from .env hidden]"  # api_token',
      'settings.py:1:API_TOKEN = "[secret from .env hidden]"',
    ])
    // A pattern that does not compile is reported as the model wrote it, never with the values beside it.
    const invalid = await grep(ws, { pattern: 'API_TOKEN = (' })
    expect(invalid.isError).toBe(true)
    expect(invalid.output).toMatch(/^Invalid regex/)
    expect(invalid.output).not.toContain(secret)
  })

  it('cuts very long lines with a marker', async () => {
    const ws = await makeGrepWorkspace({ 'min.js': `${'x'.repeat(5000)}needle${'y'.repeat(5000)}\n` })
    const [line] = outputLines(await grep(ws, { pattern: 'needle' }))
    expect(line?.length).toBeLessThan(700)
    expect(line).toMatch(/^min\.js:1:x+ \[\.\.\. omitted end of long line\]$/)
  })

  it('shows at most 200 lines and tells the model how many matched and how to narrow the search', async () => {
    const body = Array.from({ length: 150 }, (_, i) => `needle ${i}`).join('\n') + '\n'
    const ws = await makeGrepWorkspace({ 'a.txt': body, 'b.txt': body, 'c/d.txt': body })
    const result = await grep(ws, { pattern: 'needle' })
    expect(result.isError).toBe(false)
    const [lines, note] = result.output.split('\n\n')
    expect(lines?.split('\n')).toHaveLength(200)
    expect(note).toContain('Showing 200 of 450 matching lines in 3 files')
    expect(note).toMatch(/`path`.*`include`.*pattern/)
    expect(result.metadata).toMatchObject({
      matches: 450,
      files: 3,
      truncated: true,
      countComplete: true,
      shown: 200,
    })
  })

  it('stops counting at 5,000 matching lines instead of reading everything', async () => {
    const ws = await makeGrepWorkspace({ 'huge.txt': 'needle\n'.repeat(200_000) })
    const result = await grep(ws, { pattern: 'needle' })
    expect(result.output).toContain('Showing 200 of more than 5,000 matching lines')
    expect(result.metadata).toMatchObject({ matches: 5000, truncated: true, countComplete: false })
  })

  it('refuses an invalid regex with a readable message naming the problem', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'x\n' })
    const result = await grep(ws, { pattern: 'foo[bar' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^Invalid regex "foo\[bar".*unclosed character class/i)
  })

  it('explains regex errors in terms of the pattern the model wrote', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'x\n' })
    const unbalanced = await grep(ws, { pattern: 'call(' })
    expect(unbalanced.isError).toBe(true)
    expect(unbalanced.output).toMatch(
      /^Invalid regex "call\("(?: for the built-in search)?: .*(unclosed|unterminated)/i,
    )
    expect(unbalanced.output).not.toContain('(?:')
    const newline = await grep(ws, { pattern: 'a\\nb' })
    expect(newline.output).toMatch(/one at a time, so a newline in the pattern never matches/)
  })

  it('refuses paths outside the workspace and reports missing ones', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'x\n' })
    await fs.writeFile(path.join(ws, '..', 'secret.txt'), 'needle\n')
    const escape = await grep(ws, { pattern: 'needle', path: '..' })
    expect(escape.isError).toBe(true)
    expect(escape.output).not.toContain('secret')
    const missing = await grep(ws, { pattern: 'needle', path: 'nope' })
    expect(missing.isError).toBe(true)
    expect(missing.output).toMatch(/does not exist/)
  })

  it('never follows a symlink to a folder outside the workspace', async () => {
    const ws = await makeGrepWorkspace({ 'inside.txt': 'needle inside\n' })
    const outside = path.join(ws, '..', 'outside')
    await fs.mkdir(outside)
    await fs.writeFile(path.join(outside, 'secret.txt'), 'needle outside\n')
    await fs.symlink(outside, path.join(ws, 'link'))
    await fs.symlink(path.join(outside, 'secret.txt'), path.join(ws, 'file-link.txt'))
    const result = await grep(ws, { pattern: 'needle' })
    expect(outputLines(result)).toEqual(['inside.txt:1:needle inside'])
    const through = await grep(ws, { pattern: 'needle', path: 'link' })
    expect(through.isError).toBe(true)
    expect(through.output).not.toContain('needle outside')
  })

  it('returns what it found plus a note when some files cannot be read', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'needle\n' })
    makeTooDeepFolder(ws)
    const result = await grep(ws, { pattern: 'needle' })
    expect(result.isError).toBe(false)
    expect(outputLines(result)).toEqual(['a.txt:1:needle'])
    expect(result.output).toMatch(
      /\[Some files could not be searched:\n {2}d{100,}.*(too long|ENAMETOOLONG)/i,
    )
    expect(result.metadata?.errors).toBeGreaterThan(0)
  })

  it('returns a cancelled result at once when the signal is already aborted', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'needle\n' })
    const controller = new AbortController()
    controller.abort()
    const result = await grep(ws, { pattern: 'needle' }, controller.signal)
    expect(result.isError).toBe(true)
    expect(result.metadata?.cancelled).toBe(true)
  })
})

describe('grep (ripgrep only)', () => {
  it(`with more than ${EXACT_VALUES} secret values, leaves out every line that holds one, whatever the guess`, async () => {
    delete process.env.LANES_RG_PATH
    const values = Array.from({ length: EXACT_VALUES + 10 }, (_, i) => `Many-S3cret-${i}-${'q'.repeat(6)}`)
    const secret = values[7] as string
    const ws = await makeGrepWorkspace({
      '.env': values.map((v, i) => `KEY_${i}=${v}`).join('\n') + '\n',
      'settings.py': `API_TOKEN = "${secret}"\nAPI_HOST = "example.org"\n`,
    })
    const right = await grep(ws, { pattern: `(API_TOKEN = "Many-S3cret-7|\\[secret|API_HOST)` })
    const wrong = await grep(ws, { pattern: `(API_TOKEN = "Wrong-Guess-7|\\[secret|API_HOST)` })
    expect(outputLines(right)).toEqual(['settings.py:2:API_HOST = "example.org"'])
    expect(right.output.replace('Many-S3cret-7', 'GUESS')).toBe(
      wrong.output.replace('Wrong-Guess-7', 'GUESS'),
    )
  })

  // Finds ripgrep's process through /proc.
  it.skipIf(process.platform !== 'linux')('kills ripgrep when the call is aborted', async () => {
    delete process.env.LANES_RG_PATH
    const ws = await makeGrepWorkspace({})
    // A sparse 1 TiB file takes no disk space and keeps ripgrep busy for minutes.
    const handle = await fs.open(path.join(ws, 'sparse.txt'), 'w')
    await handle.truncate(2 ** 40)
    await handle.close()
    const controller = new AbortController()
    const started = performance.now()
    const pending = grep(ws, { pattern: 'needle', path: 'sparse.txt' }, controller.signal)
    let running: number[] = []
    for (let i = 0; i < 100 && running.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      running = await ripgrepChildren()
    }
    expect(running).toHaveLength(1)
    controller.abort()
    const result = await pending
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(result).toMatchObject({
      isError: true,
      output: 'Search cancelled.',
      metadata: { cancelled: true },
    })
    expect(existsSync(`/proc/${running[0]}`)).toBe(false)
  })
})

describe('grep (built-in search)', () => {
  beforeAll(() => {
    process.env.LANES_RG_PATH = '/nonexistent/rg'
  })
  afterAll(() => {
    delete process.env.LANES_RG_PATH
  })

  it('translates ripgrep-only syntax it can express in JavaScript', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'id 42\nfoo bar\nfoobar\nname: value\nΑθήνα\n' })
    expect(outputLines(await grep(ws, { pattern: '[[:digit:]]+' }))).toEqual(['a.txt:1:id 42'])
    expect(outputLines(await grep(ws, { pattern: '\\<foo\\>' }))).toEqual(['a.txt:2:foo bar'])
    expect(outputLines(await grep(ws, { pattern: '(?P<key>name): (?P=key)?value' }))).toEqual([
      'a.txt:4:name: value',
    ])
    expect(outputLines(await grep(ws, { pattern: '(?i)FOOBAR\\z' }))).toEqual(['a.txt:3:foobar'])
    expect(outputLines(await grep(ws, { pattern: '^\\p{Greek}+$' }))).toEqual(['a.txt:5:Αθήνα'])
  })

  it('refuses syntax it cannot translate, saying why', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'x\n' })
    const result = await grep(ws, { pattern: '(?x) a b # comment' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/inline flags .* not supported by the built-in search/)
  })

  it('can be stopped while a catastrophic pattern is backtracking', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': `${'a'.repeat(40)}!\n` })
    const controller = new AbortController()
    const started = performance.now()
    const pending = grep(ws, { pattern: '^(a+)+$' }, controller.signal)
    // The event loop stays free while the worker backtracks: this timer fires on time.
    await new Promise((resolve) => setTimeout(resolve, 300))
    controller.abort()
    const result = await pending
    expect(performance.now() - started).toBeLessThan(3000)
    expect(result.metadata?.cancelled).toBe(true)
  })

  it('skips files over 32 MiB and says so', async () => {
    const ws = await makeGrepWorkspace({ 'a.txt': 'needle\n' })
    const handle = await fs.open(path.join(ws, 'big.txt'), 'w')
    await handle.truncate(33 * 1024 * 1024)
    await handle.close()
    const result = await grep(ws, { pattern: 'needle' })
    expect(outputLines(result)).toEqual(['a.txt:1:needle'])
    expect(result.output).toContain('1 file(s) over 32 MiB were not searched')
  })
})

describe('translateRegex', () => {
  it.each([
    ['foo.*bar', 'foo.*bar', ''],
    ['(?i)abc', 'abc', 'i'],
    ['\\Aabc\\z', '^abc$', ''],
    ['(?P<n>a)(?P=n)', '(?<n>a)\\k<n>', ''],
    ['\\pL+', '\\p{L}+', 'u'],
    ['\\x{1F600}', '\\u{1F600}', 'u'],
    ['[[:alpha:]_]', '[a-zA-Z_]', ''],
    ['\\Qa.b(c\\E+', 'a\\.b\\(c+', ''],
    ['\\Qa-b\\E\\pL', 'a-b\\p{L}', 'u'],
    ['[]a]', '[\\]a]', ''],
  ])('translates %s', (pattern, source, flags) => {
    expect(translateRegex(pattern, false)).toEqual({ ok: true, source, flags })
  })

  it.each([
    ['(?U)a+', /greedy/],
    ['a(?i:b)', /inline flags/],
    ['[a-z&&[^aeiou]]', /nested character classes|set operations/],
    ['[[:^alpha:]]', /POSIX class/],
    ['(', /Unterminated group/],
  ])('refuses %s', (pattern, reason) => {
    const result = translateRegex(pattern, false)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(reason)
  })
})

describe('globToRegExp', () => {
  it.each([
    ['*.ts', ['a.ts', 'src/deep/a.ts'], ['a.tsx', 'a.ts/b.js']],
    ['src/**/*.ts', ['src/a.ts', 'src/x/y/a.ts'], ['lib/src/a.ts', 'src/a.js']],
    ['*.{ts,tsx}', ['a.ts', 'b/c.tsx'], ['a.js']],
    ['/top.txt', ['top.txt'], ['sub/top.txt']],
    ['file?.[ch]', ['file1.c', 'x/fileA.h'], ['file10.c', 'file1.o']],
    ['docs/**', ['docs/a', 'docs/b/c.md'], ['other/docs/a']],
  ])('%s', (glob, matching, other) => {
    const regex = globToRegExp(glob)
    expect(regex).not.toBeNull()
    for (const p of matching) expect(regex?.test(p), p).toBe(true)
    for (const p of other) expect(regex?.test(p), p).toBe(false)
  })

  it('rejects unbalanced globs', () => {
    expect(globToRegExp('a[')).toBeNull()
    expect(globToRegExp('{a,b')).toBeNull()
  })
})

// The shared hostile path samples, as grep's `path`: nothing outside is ever searched.
describe('grep with the shared path corpus', () => {
  itHoldsForEachPathCase(
    {
      rootFiles: { 'src/index.ts': 'needle\n', 'README.md': 'needle\n' },
      secrets: { outside: 'needle TOPSECRET\n', evil: 'needle TOPSECRET\n' },
    },
    async (c, { workspace, input }) => {
      const parsed = grepTool.input.safeParse({ pattern: 'needle', path: input })
      if (!parsed.success) {
        // Refused by the schema (control characters): nothing was searched.
        expect(c.expect).toBe('outside')
        return
      }
      const result = await grepTool.execute(parsed.data, makeToolContext(workspace))
      expect(result.output).not.toContain('TOPSECRET')
      if (c.expect === 'outside') expect(result.isError).toBe(true)
      else if (result.isError) expect(result.output).toMatch(/does not exist|too long|ENAMETOOLONG/i)
    },
  )
})
