import { promises as fs } from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readFileTool } from './read-file'
import type { ToolContext } from './tool'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, putFile, removeWorkspaces, sha } from './test-fixtures/workspace'

let base: string
let root: string
let ctx: ToolContext

beforeEach(async () => {
  root = await makeWorkspace('lanes-read-')
  base = path.dirname(root)
  await fs.mkdir(path.join(base, 'out'))
  ctx = makeToolContext(root, { outputDir: path.join(base, 'out') })
})

afterEach(removeWorkspaces)

const put = (rel: string, content: string | Buffer): Promise<string> => putFile(root, rel, content)

function numbered(from: number, texts: string[]): string {
  return texts.map((t, i) => `${String(from + i).padStart(6)}|${t}`).join('\n')
}

const read = (input: { path: string; offset?: number; limit?: number }) => readFileTool.execute(input, ctx)

describe('read_file', () => {
  it("reads a command's saved full output in the session folder, and nothing else outside the workspace", async () => {
    const out = ctx.outputDir
    await fs.mkdir(path.join(out, 'sub'))
    const log = path.join(out, 'call-9.log')
    await fs.writeFile(log, Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join('\n'))
    const result = await read({ path: log, offset: 4999, limit: 5 })
    expect(result.isError).toBe(false)
    expect(result.output).toContain(numbered(4999, ['line 4999', 'line 5000']))
    expect(result.title).toBe(`Read ${log}, lines 4999-5000`)

    await fs.writeFile(path.join(base, 'secret.txt'), 'OUTSIDE-CONTENT')
    await fs.writeFile(path.join(out, 'sub', 'x.log'), 'OUTSIDE-CONTENT')
    await fs.symlink(path.join(base, 'secret.txt'), path.join(out, 'link.log'))
    for (const outside of [
      path.join(base, 'secret.txt'),
      path.join(out, '..', 'secret.txt'),
      path.join(out, 'sub', 'x.log'),
      'call-9.log',
    ]) {
      const refused = await read({ path: outside })
      expect(refused.isError, outside).toBe(true)
      expect(refused.output).not.toContain('OUTSIDE-CONTENT')
    }
    // A link in the folder is not followed.
    const link = await read({ path: path.join(out, 'link.log') })
    expect(link.isError).toBe(true)
    expect(link.output).not.toContain('OUTSIDE-CONTENT')
  })

  it('prefixes each line with its number and records a snapshot of the file', async () => {
    const file = await put('src/app.ts', 'const a = 1\nconst b = 2\n')
    const result = await read({ path: 'src/app.ts' })
    expect(result.isError).toBe(false)
    expect(result.output).toBe('     1|const a = 1\n     2|const b = 2')
    expect(result.title).toBe('Read src/app.ts, lines 1-2')
    expect(result.metadata).toMatchObject({ totalLines: 2, startLine: 1, endLine: 2, more: false })
    expect(ctx.snapshots.get(file)).toEqual({
      path: file,
      mtimeMs: (await fs.stat(file)).mtimeMs,
      hash: sha('const a = 1\nconst b = 2\n'),
    })
  })

  it('reads a line range and says how to read on', async () => {
    await put('list.txt', Array.from({ length: 50 }, (_, i) => `item ${i + 1}\n`).join(''))
    const result = await read({ path: 'list.txt', offset: 11, limit: 5 })
    expect(result.output.split('\n\n')[0]).toBe(
      numbered(11, ['item 11', 'item 12', 'item 13', 'item 14', 'item 15']),
    )
    expect(result.output).toMatch(/35 more lines follow \(50 in total\).*offset=16/)
    expect(result.metadata).toMatchObject({ totalLines: 50, startLine: 11, endLine: 15, more: true })
    expect(result.title).toBe('Read list.txt, lines 11-15')
  })

  it('says when a range reaches the end of the file', async () => {
    await put('short.txt', 'a\nb\nc\n')
    const result = await read({ path: 'short.txt', offset: 2 })
    expect(result.output).toBe(`${numbered(2, ['b', 'c'])}\n\n[Showing lines 2-3 of 3: end of file.]`)
    expect(result.metadata).toMatchObject({ more: false, totalLines: 3 })
  })

  it('returns 2000 lines by default', async () => {
    await put('long.txt', Array.from({ length: 2500 }, (_, i) => `${i + 1}\n`).join(''))
    const result = await read({ path: 'long.txt' })
    expect(result.metadata).toMatchObject({ startLine: 1, endLine: 2000, totalLines: 2500, more: true })
    expect(result.output).toContain('  2000|2000')
    expect(result.output).not.toContain('  2001|')
    expect(result.output).toMatch(/offset=2001/)
  })

  it('counts a last line without a newline', async () => {
    await put('nonl.txt', 'one\ntwo')
    const result = await read({ path: 'nonl.txt' })
    expect(result.output).toBe(numbered(1, ['one', 'two']))
    expect(result.metadata).toMatchObject({ totalLines: 2 })
  })

  it('cuts long lines at 2000 characters with a marker giving their length', async () => {
    await put('min.js', `short\n${'x'.repeat(58231)}\n${'é'.repeat(3000)}\n`)
    const result = await read({ path: 'min.js' })
    const lines = result.output.split('\n')
    expect(lines[0]).toBe('     1|short')
    expect(lines[1]).toBe(`     2|${'x'.repeat(2000)}… [line truncated: 58231 chars]`)
    expect(lines[2]).toBe(`     3|${'é'.repeat(2000)}… [line truncated: 3000 chars]`)
    expect(result.metadata).toMatchObject({ truncatedLines: 2, totalLines: 3 })
  })

  it('gives the size of a huge single line in bytes', async () => {
    await put('dump.json', `[${'1,'.repeat(1_500_000)}1]\n`)
    const result = await read({ path: 'dump.json' })
    expect(result.output).toBe(`     1|[${'1,'.repeat(999)}1… [line truncated: 3000003 bytes]`)
  })

  it('never cuts a line inside a surrogate pair', async () => {
    await put('emoji.txt', '😀'.repeat(2500))
    const shown = (await read({ path: 'emoji.txt' })).output
    expect(shown).toBe(`     1|${'😀'.repeat(2000)}… [line truncated: 2500 chars]`)
  })

  it('shows CRLF lines without their CR and drops a UTF-8 BOM', async () => {
    await put('win.txt', '\uFEFFfirst\r\nsecond\r\n')
    const result = await read({ path: 'win.txt' })
    expect(result.output).toBe(numbered(1, ['first', 'second']))
  })

  it('reports an empty file', async () => {
    const file = await put('empty.txt', '')
    const result = await read({ path: 'empty.txt' })
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/empty/)
    expect(result.metadata).toMatchObject({ totalLines: 0 })
    expect(ctx.snapshots.get(file)?.hash).toBe(sha(''))
  })

  it('refuses an offset past the end and gives the line count', async () => {
    await put('three.txt', 'a\nb\nc\n')
    const result = await read({ path: 'three.txt', offset: 10 })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/offset 10 is past the end of three\.txt, which has 3 lines/)
  })

  it('refuses a binary file with NUL bytes', async () => {
    const file = await put(
      'img.png',
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    )
    const result = await read({ path: 'img.png' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/img\.png is a binary file/)
    // Its size and type are told, and it counts as seen: write_file may replace it with base64 bytes (reviewed as
    // binary), as it may a text file that was read.
    expect(result.output).toContain('It is 12 bytes (PNG image)')
    expect(ctx.snapshots.get(file)).toBeDefined()
  })

  it('refuses bytes that are mostly invalid UTF-8, and UTF-16 text', async () => {
    const noise = Buffer.alloc(4096)
    for (let i = 0; i < noise.length; i++) noise[i] = 0x80 + ((i * 37) % 0x7f)
    await put('noise.bin', noise)
    expect((await read({ path: 'noise.bin' })).output).toMatch(/does not look like UTF-8 text/)
    await put('utf16.txt', Buffer.from('\uFEFFhello', 'utf16le'))
    expect((await read({ path: 'utf16.txt' })).output).toMatch(/UTF-16/)
  })

  it('still reads text with a few bytes of another encoding, showing them as U+FFFD', async () => {
    await put(
      'latin1.txt',
      Buffer.concat([Buffer.from('caf'), Buffer.from([0xe9]), Buffer.from(' au lait, merci\n')]),
    )
    const result = await read({ path: 'latin1.txt' })
    expect(result.isError).toBe(false)
    expect(result.output).toBe('     1|caf\uFFFD au lait, merci')
  })

  it('refuses a directory with a hint to use glob', async () => {
    await fs.mkdir(path.join(root, 'src'))
    const result = await read({ path: 'src' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/src is a directory.*glob/)
  })

  it('names a missing file, suggests glob and a near name next to it', async () => {
    await put('src/App.tsx', 'x')
    const result = await read({ path: 'src/app.ts' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/File not found: src\/app\.ts\./)
    expect(result.output).toMatch(/Did you mean src\/App\.tsx\?/)
    expect(result.output).toMatch(/glob/)
  })

  it('refuses paths outside the workspace without reading them', async () => {
    await fs.writeFile(path.join(base, 'secret.txt'), 'top secret')
    await fs.symlink(path.join(base, 'secret.txt'), path.join(root, 'link.txt'))
    for (const p of ['../secret.txt', path.join(base, 'secret.txt'), 'link.txt']) {
      const result = await read({ path: p })
      expect(result.isError, p).toBe(true)
      expect(result.output).not.toContain('top secret')
    }
    expect(ctx.snapshots.all()).toEqual([])
  })

  it('reads through a symlink that stays inside and keys the snapshot by the real path', async () => {
    const real = await put('real.txt', 'inside\n')
    await fs.symlink(real, path.join(root, 'alias.txt'))
    const result = await read({ path: 'alias.txt' })
    expect(result.output).toBe('     1|inside')
    expect(ctx.snapshots.get(real)).toBeDefined()
  })

  it('refuses a harmless name that links to a secret, and names the real path (which asks the user)', async () => {
    await put('.env', 'TOKEN=hunter2\n')
    await put('.ssh/config', 'Host x\n')
    await fs.symlink(path.join(root, '.env'), path.join(root, 'notes.txt'))
    await fs.symlink(path.join(root, '.ssh'), path.join(root, 'hosts'))
    for (const [p, real] of [
      ['notes.txt', '.env'],
      ['./sub/../notes.txt', '.env'],
      ['hosts/config', '.ssh/config'],
    ] as const) {
      const result = await read({ path: p })
      expect(result.isError, p).toBe(true)
      expect(result.output).not.toContain('hunter2')
      expect(result.output).toContain(`Use its real path, "${real}"`)
    }
    expect(ctx.snapshots.all()).toEqual([])
    // By its own name (the approval policy asks for it) it is read.
    expect((await read({ path: '.env' })).output).toContain('hunter2')
    // A secret-looking name for a harmless file is read too (the policy asked on the name).
    await put('plain.txt', 'plain\n')
    await fs.symlink(path.join(root, 'plain.txt'), path.join(root, '.env.example'))
    expect((await read({ path: '.env.example' })).isError).toBe(false)
  })

  it('stops at the output budget on a line boundary and says how to read on', async () => {
    await put('wide.txt', Array.from({ length: 2000 }, (_, i) => `${i}:${'w'.repeat(1000)}\n`).join(''))
    const result = await read({ path: 'wide.txt' })
    const body = result.output.split('\n\n')[0] as string
    expect(body.length).toBeLessThanOrEqual(256 * 1024)
    const endLine = result.metadata?.endLine as number
    expect(endLine).toBeGreaterThan(200)
    expect(endLine).toBeLessThan(2000)
    expect(result.metadata).toMatchObject({ outputCapped: true, more: true })
    expect(result.output).toMatch(new RegExp(`Output stopped at 256 KiB.*offset=${endLine + 1}`))
  })
})

describe('read_file on a file too large for one pass', () => {
  // Over the 8 MiB one-pass size: served straight away, hashed and indexed in the background.
  const LINES = 200_000
  const lineText = (i: number): string => `line ${i} ${'abcdefghij'.repeat(i % 9)}`
  let file: string
  let content: string

  beforeEach(async () => {
    content = Array.from({ length: LINES }, (_, i) => lineText(i + 1) + '\n').join('')
    expect(content.length).toBeGreaterThan(8 * 1024 * 1024)
    file = await put('big.log', content)
  })

  it('serves the first lines, then records the snapshot and the exact line count once indexed', async () => {
    const first = await read({ path: 'big.log', limit: 3 })
    expect(first.output.split('\n\n')[0]).toBe(numbered(1, [lineText(1), lineText(2), lineText(3)]))
    expect(first.metadata?.more).toBe(true)
    expect([null, LINES]).toContain(first.metadata?.totalLines)

    await ctx.snapshots.settled(file)
    expect(ctx.snapshots.get(file)).toEqual({
      path: file,
      mtimeMs: (await fs.stat(file)).mtimeMs,
      hash: sha(content),
    })

    const again = await read({ path: 'big.log', limit: 3 })
    expect(again.metadata?.totalLines).toBe(LINES)
    expect(again.output).toMatch(/199997 more lines follow \(200000 in total\)/)
  })

  it('reads any range exactly, from the line index and without it', async () => {
    const check = async (offset: number, limit: number): Promise<void> => {
      const result = await read({ path: 'big.log', offset, limit })
      const expected = Array.from({ length: Math.min(limit, LINES - offset + 1) }, (_, i) =>
        lineText(offset + i),
      )
      expect(result.output.split('\n\n')[0], `offset ${offset}`).toBe(numbered(offset, expected))
    }
    // Before the index exists: scanned from the start.
    await check(150_001, 4)
    await read({ path: 'big.log', limit: 1 })
    await ctx.snapshots.settled(file)
    for (const offset of [1, 1023, 1024, 1025, 2049, 77_777, 131_072, 199_999]) await check(offset, 5)
    const tail = await read({ path: 'big.log', offset: LINES - 199, limit: 200 })
    expect(tail.output).toMatch(/\[Showing lines 199801-200000 of 200000: end of file\.\]$/)
    expect(tail.metadata).toMatchObject({ totalLines: LINES, more: false })
  })

  it('serves the new content after the file changes', async () => {
    await read({ path: 'big.log', limit: 1 })
    await ctx.snapshots.settled(file)
    const changed = content.replace('line 100000 ', 'LINE 100000 ')
    await fs.writeFile(file, changed)
    const later = new Date(Date.now() + 5000)
    await fs.utimes(file, later, later)
    const result = await read({ path: 'big.log', offset: 100_000, limit: 1 })
    expect(result.output.split('\n\n')[0]).toBe(
      numbered(100_000, [lineText(100_000).replace('line', 'LINE')]),
    )
    await ctx.snapshots.settled(file)
    expect(ctx.snapshots.get(file)?.hash).toBe(sha(changed))
  })

  it('stops a long scan when the run is stopped', async () => {
    const controller = new AbortController()
    controller.abort()
    const result = await readFileTool.execute(
      { path: 'big.log', offset: 190_000, limit: 1 },
      { ...ctx, signal: controller.signal },
    )
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/Cancelled/)
  })
})
