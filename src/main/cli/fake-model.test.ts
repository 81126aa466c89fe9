import Anthropic from '@anthropic-ai/sdk'
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'
import { runFakeModelCli } from './fake-model'
import { useTempDir } from '../test-fixtures/temp-dir'

const dir = useTempDir('lanes-fake-model-', 'all')
const ask = { model: 'claude-test', max_tokens: 1024, messages: [{ role: 'user' as const, content: 'go' }] }

describe('lanes fake-model', () => {
  async function cli(argv: string[]): Promise<{ code: number; stderr: string }> {
    let stderr = ''
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr += String(chunk)
      return true
    })
    try {
      return { code: await runFakeModelCli(argv), stderr }
    } finally {
      spy.mockRestore()
    }
  }

  it('fails with exit code 1 and a clear message for a missing file, bad JSON or a bad scenario', async () => {
    const missing = await cli(['--scenario', join(dir(), 'nope.json')])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/cannot read the scenario file .*nope\.json: no such file/)

    const badJson = join(dir(), 'bad.json')
    await writeFile(badJson, '{"turns": [}')
    const bad = await cli(['--scenario', badJson])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/bad\.json is not valid JSON/)

    const invalid = join(dir(), 'invalid.json')
    await writeFile(invalid, '{"turns": [{"blocks": [{"tool": "x", "input": {}, "rawInput": "{}"}]}]}')
    const wrong = await cli(['--scenario', invalid])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toMatch(/turns\[0\]\.blocks\[0\]/)
  })

  it('fails with exit code 1 when the port is in use', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    const file = join(dir(), 'ok.json')
    await writeFile(file, '{"turns": []}')
    try {
      const busy = await cli(['--scenario', file, '--port', String(port)])
      expect(busy.code).toBe(1)
      expect(busy.stderr).toMatch(/already in use/)
    } finally {
      blocker.close()
    }
  })

  it('exits 2 on a usage error', async () => {
    expect((await cli([])).code).toBe(2)
    expect((await cli(['--scenario', 'x', '--port', 'eighty'])).code).toBe(2)
    expect((await cli(['--scenario', 'x', '--bogus'])).code).toBe(2)
  })

  it('prints the base URL first, serves the scenario, records, and stops cleanly on SIGTERM', async () => {
    const scenario = join(dir(), 'serve.json')
    const record = join(dir(), 'serve.jsonl')
    await writeFile(
      scenario,
      JSON.stringify({ turns: [{ blocks: [{ text: 'from the CLI' }], stop: 'end_turn' }] }),
    )
    const entry = fileURLToPath(new URL('./fake-model.ts', import.meta.url))
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { runFakeModelCli } from ${JSON.stringify(entry)}; process.exitCode = await runFakeModelCli(process.argv.slice(1))`,
        '--',
        '--scenario',
        scenario,
        '--record',
        record,
      ],
      { cwd: fileURLToPath(new URL('../../../', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] },
    )
    try {
      const firstLine = await new Promise<string>((resolve, reject) => {
        let out = ''
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          const newline = out.indexOf('\n')
          if (newline >= 0) resolve(out.slice(0, newline))
        })
        child.once('exit', (code) => reject(new Error(`exited ${code} before printing the URL`)))
      })
      expect(firstLine).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const client = new Anthropic({ apiKey: 'x', baseURL: firstLine, maxRetries: 0 })
      const message = await client.messages.stream(ask).finalMessage()
      expect(message.content[0]).toMatchObject({ text: 'from the CLI' })
      expect(JSON.parse((await readFile(record, 'utf8')).trim())).toEqual({ ...ask, stream: true })
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  })
})
