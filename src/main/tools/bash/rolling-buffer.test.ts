import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { stripAnsi } from './ansi'
import { collapseLine } from '../../../shared/ansi'
import { MAX_MODEL_BYTES, MAX_MODEL_LINES, RollingBuffer } from './rolling-buffer'

let dir: string

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lanes-rolling-'))
})

afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** Feeds `data` in pieces of `size` bytes, honouring backpressure as the runner does. */
async function feed(buffer: RollingBuffer, data: Buffer, size = 4095): Promise<void> {
  for (let i = 0; i < data.length; i += size) await buffer.write(data.subarray(i, i + size))
}

function lines(from: number, to: number): string {
  let out = ''
  for (let i = from; i <= to; i++) out += `line ${i}\n`
  return out
}

describe('RollingBuffer', () => {
  it('gives small output whole and saves every byte to the file', async () => {
    const path = join(dir, 'call.log')
    const buffer = new RollingBuffer({ filePath: path })
    const data = Buffer.from('first\nsecond\nno newline at the end')
    await feed(buffer, data, 5)
    const summary = await buffer.close()
    expect(summary).toMatchObject({
      text: 'first\nsecond\nno newline at the end',
      totalBytes: data.length,
      totalLines: 3,
      shownLines: 3,
      truncated: false,
      outputPath: path,
    })
    expect(await readFile(path)).toEqual(data)
  })

  it('counts lines with and without a final newline, and empty output as none', async () => {
    const count = async (text: string): Promise<number> => {
      const buffer = new RollingBuffer({ filePath: join(dir, `${text.length}.log`) })
      await buffer.write(Buffer.from(text))
      return (await buffer.close()).totalLines
    }
    expect(await count('')).toBe(0)
    expect(await count('\n')).toBe(1)
    expect(await count('a\nb\n')).toBe(2)
    expect(await count('a\nb')).toBe(2)
  })

  it(`keeps only the last ${MAX_MODEL_LINES} lines`, async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log') })
    await feed(buffer, Buffer.from(lines(1, 5000)))
    const summary = await buffer.close()
    expect(summary.totalLines).toBe(5000)
    expect(summary.shownLines).toBe(MAX_MODEL_LINES)
    expect(summary.truncated).toBe(true)
    expect(summary.text).toBe(lines(3001, 5000).slice(0, -1))
  })

  it(`keeps at most ${MAX_MODEL_BYTES} bytes, starting at a line boundary`, async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log') })
    const line = (i: number): string => `${String(i).padStart(6, '0')} ${'x'.repeat(93)}\n`
    let data = ''
    for (let i = 1; i <= 1000; i++) data += line(i)
    await feed(buffer, Buffer.from(data))
    const summary = await buffer.close()
    expect(Buffer.byteLength(summary.text)).toBeLessThanOrEqual(MAX_MODEL_BYTES)
    // 101 bytes a line: 297 lines are 29 996 bytes, 298 would be 30 097.
    expect(summary.shownLines).toBe(297)
    expect(summary.text.startsWith(line(704))).toBe(true)
    expect(summary.text.endsWith(line(1000).trimEnd())).toBe(true)
  })

  it('keeps the end of a single line longer than the cap, marked as cut', async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log') })
    await feed(buffer, Buffer.from('head\n' + 'a'.repeat(1_000_000) + 'THE END'))
    const summary = await buffer.close()
    expect(summary.text.startsWith('…aaa')).toBe(true)
    expect(summary.text.endsWith('THE END')).toBe(true)
    expect(Buffer.byteLength(summary.text)).toBeLessThanOrEqual(MAX_MODEL_BYTES)
    expect(summary.truncated).toBe(true)
    expect(summary.totalLines).toBe(2)
  })

  it('never cuts a multi-byte character when cutting a long line', async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log'), maxBytes: 1000 })
    await feed(buffer, Buffer.from('é😀'.repeat(100_000)), 4095)
    const { text } = await buffer.close()
    expect(text).not.toContain('\ufffd')
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(1000)
    expect(text.endsWith('é😀')).toBe(true)
  })

  it('shows what a terminal leaves of progress bars, CRLF lines and overstrike', async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log') })
    await feed(
      buffer,
      Buffer.from(
        'downloading 10%\rdownloading 55%\rdownloading 100%\nwindows line\r\nb\bbo\bol\bld\bd\nend\r',
      ),
      7,
    )
    expect((await buffer.close()).text).toBe('downloading 100%\nwindows line\nbold\nend')
  })

  it('collapses a progress bar that redraws one line for megabytes', async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log') })
    await buffer.write(Buffer.from('before\n'))
    let frames = ''
    for (let i = 0; i <= 100_000; i++) frames += `\r\u001b[2K[${'#'.repeat(i % 40)}] ${i}`
    await feed(buffer, Buffer.from(frames + '\nafter\n'))
    const summary = await buffer.close()
    expect(summary.text).toBe(`before\n[${'#'.repeat(100_000 % 40)}] 100000\nafter`)
    expect(summary.truncated).toBe(false)
  })

  it('strips terminal sequences for the model but saves them in the file', async () => {
    const path = join(dir, 'call.log')
    const buffer = new RollingBuffer({ filePath: path })
    const raw = '\u001b[31mred\u001b[0m \u001b]0;title\u0007text\n'
    await feed(buffer, Buffer.from(raw), 3)
    expect((await buffer.close()).text).toBe('red text')
    expect(await readFile(path, 'utf8')).toBe(raw)
  })

  it('decodes characters split across chunks and keeps invalid bytes in the file', async () => {
    const path = join(dir, 'call.log')
    const buffer = new RollingBuffer({ filePath: path })
    const data = Buffer.concat([
      Buffer.from('héllo wörld 😀 '),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(' ok'),
    ])
    await feed(buffer, data, 1)
    expect((await buffer.close()).text).toBe('héllo wörld 😀 \ufffd\ufffd ok')
    expect(await readFile(path)).toEqual(data)
  })

  it('gives the same tail whatever the chunk sizes', async () => {
    const parts: string[] = []
    for (let i = 0; i < 3000; i++) {
      parts.push(
        i % 7 === 0 ? `\u001b[1m${i}\u001b[0m progress\r${i} done` : `line ${i} ${'z'.repeat(i % 50)}`,
      )
    }
    const data = Buffer.from(parts.join('\n') + '\n' + 'tail without newline')
    const tails: string[] = []
    for (const size of [1, 13, 4095, 65536, data.length]) {
      const buffer = new RollingBuffer({ filePath: join(dir, `${size}.log`) })
      await feed(buffer, data, size)
      tails.push((await buffer.close()).text)
    }
    expect(new Set(tails).size).toBe(1)
    expect(tails[0]?.endsWith(`line 2999 ${'z'.repeat(2999 % 50)}\ntail without newline`)).toBe(true)
  })

  it('skips old output without reading it and still shows exactly the last lines', async () => {
    // Multi-byte characters, escapes and progress frames everywhere, so block boundaries fall inside them.
    const parts: string[] = []
    for (let i = 0; parts.length < 60_000; i++) {
      parts.push(
        i % 5 === 0
          ? `\u001b[3${i % 8}m${i}\u001b[0m é😀 ${'ß'.repeat(i % 37)}\r${i} overwritten`
          : `${i} ${'€'.repeat(i % 23)}\u001b]0;t${i}\u0007 done`,
      )
    }
    const text = parts.join('\n') + '\nlast line without newline'
    const expected = (maxLines: number): string =>
      stripAnsi(text).split('\n').slice(-maxLines).map(collapseLine).join('\n')
    for (const maxLines of [3, 50, 2000]) {
      const buffer = new RollingBuffer({
        filePath: join(dir, `${maxLines}.log`),
        maxLines,
        maxBytes: 10_000_000,
      })
      await feed(buffer, Buffer.from(text), 4093)
      const summary = await buffer.close()
      expect(summary.text).toBe(expected(maxLines))
      expect(summary.totalLines).toBe(60_001)
      expect(summary.truncated).toBe(true)
    }
  })

  it('keeps the tail when the file cannot be written, and says why', async () => {
    const buffer = new RollingBuffer({ filePath: join(dir, 'missing-folder', 'call.log') })
    await feed(buffer, Buffer.from(lines(1, 10)))
    const summary = await buffer.close()
    expect(summary.outputPath).toBeNull()
    expect(summary.saveError).toMatch(/ENOENT/)
    expect(summary.text).toBe(lines(1, 10).trimEnd())
  })

  it('asks the producer to wait while the file is behind, and lets it go on after', async () => {
    const path = join(dir, 'call.log')
    const buffer = new RollingBuffer({ filePath: path })
    const block = Buffer.alloc(256 * 1024, 'b')
    let waits = 0
    for (let i = 0; i < 64; i++) {
      const wait = buffer.write(block)
      if (wait) {
        waits++
        await wait
      }
    }
    const summary = await buffer.close()
    expect(waits).toBeGreaterThan(0)
    expect(summary.totalBytes).toBe(64 * block.length)
    expect((await readFile(path)).length).toBe(64 * block.length)
  })

  it('keeps memory bounded over 200 MB of output', async () => {
    // Live memory, not garbage waiting for a collection: collect before each measure.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const retained = (): number => {
      gc()
      const usage = process.memoryUsage()
      return usage.heapUsed + usage.external
    }
    const buffer = new RollingBuffer({ filePath: join(dir, 'call.log') })
    const block = Buffer.from(lines(1, 60_000)) // ~700 KB
    const before = retained()
    let peak = 0
    let written = 0
    for (let i = 0; written < 200_000_000; i++) {
      await feed(buffer, block, 4095)
      written += block.length
      if (i % 25 === 0) peak = Math.max(peak, retained() - before)
    }
    const summary = await buffer.close()
    expect(summary.totalBytes).toBe(written)
    expect(summary.shownLines).toBe(MAX_MODEL_LINES)
    // The unparsed queue (4 MiB at most), the file stream's queue (1 MiB) and the tail, plus what the
    // allocator has not handed back yet; keeping the output would be 200 MB.
    expect(peak).toBeLessThan(32 * 1024 * 1024)
  })
})

describe('collapseLine', () => {
  it('keeps the last non-empty frame after carriage returns', () => {
    expect(collapseLine('a\rb\rc')).toBe('c')
    expect(collapseLine('done\r')).toBe('done')
    expect(collapseLine('\r\r')).toBe('')
    expect(collapseLine('plain')).toBe('plain')
  })

  it('applies backspaces, including at the start of a line', () => {
    expect(collapseLine('\bab\bc')).toBe('ac')
    expect(collapseLine('_\bu_\bn')).toBe('un')
  })
})
