import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runInPty } from './pty-runner'
import { MAX_MODEL_BYTES, RollingBuffer } from './rolling-buffer'

// Kept apart from the other runner tests so that this long one runs alongside them.

let dir: string

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lanes-flood-'))
})

afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('runInPty with RollingBuffer', () => {
  it(
    'streams a 1 GB flood to the file with bounded memory, every byte intact',
    { timeout: 180_000 },
    async () => {
      const line = 'The quick brown fox jumps over the lazy dog, 0123456789 ABCDEFG' // 63 characters
      const total = 1_000_000_000
      const path = join(dir, 'flood.log')
      const buffer = new RollingBuffer({ filePath: path })
      const baseline = process.memoryUsage().rss
      let peak = baseline
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50)
      const result = await runInPty({
        command: `yes '${line}' | head -c ${total}`,
        cwd: dir,
        timeoutMs: 170_000,
        onData: (chunk) => buffer.write(chunk),
      })
      const summary = await buffer.close()
      clearInterval(sampler)
      expect(result.exitCode).toBe(0)
      expect(peak - baseline).toBeLessThan(64 * 1024 * 1024)

      expect(summary.totalBytes).toBe(total)
      expect(summary.totalLines).toBe(total / 64)
      expect(summary.truncated).toBe(true)
      expect(Buffer.byteLength(summary.text)).toBeLessThanOrEqual(MAX_MODEL_BYTES)
      expect(new Set(summary.text.split('\n'))).toEqual(new Set([line]))

      // The file against the known stream: `yes` repeats the line, `head` cuts it at `total` bytes.
      const expected = createHash('sha256')
      const block = Buffer.from(`${line}\n`.repeat(16384))
      let left = total
      for (; left >= block.length; left -= block.length) expected.update(block)
      expected.update(block.subarray(0, left))
      const actual = createHash('sha256')
      for await (const piece of createReadStream(path, { highWaterMark: 1024 * 1024 }))
        actual.update(piece as Buffer)
      expect(actual.digest('hex')).toBe(expected.digest('hex'))
    },
  )
})
