import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ToolContext } from '../tool'
import { bashTool } from './bash'
import { MAX_MODEL_BYTES } from './rolling-buffer'
import { makeToolContext } from '../test-fixtures/tool-context'
import { bashCommand, loadCorpus, type BashCase } from '../../test-fixtures/corpus'

let workspace: string
let outputDir: string

beforeEach(async () => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-bash-')))
  workspace = join(base, 'project')
  outputDir = join(base, 'session')
  await mkdir(workspace)
  await mkdir(outputDir)
})

afterEach(async () => {
  await rm(join(workspace, '..'), { recursive: true, force: true })
})

function context(overrides: Partial<ToolContext> = {}): ToolContext & { progress: string[] } {
  const progress: string[] = []
  return {
    ...makeToolContext(workspace, {
      outputDir,
      callId: 'toolu_01',
      onProgress: (chunk) => progress.push(chunk),
      ...overrides,
    }),
    progress,
  }
}

async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2)[0]
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

/**
 * A node program with a child and a grandchild that all ignore SIGTERM. It records every pid and prints
 * "ready" once all four are recorded.
 */
const STUBBORN_JS = `
const { spawn } = require('node:child_process')
const { appendFileSync, readFileSync } = require('node:fs')
process.on('SIGTERM', () => {})
spawn('sh', ['-c', "trap '' TERM; sleep 1000 & echo $! >> pids; echo $$ >> pids; wait"], { stdio: 'ignore' })
const lone = spawn('sh', ['-c', "trap '' TERM; exec sleep 1000"], { stdio: 'ignore' })
appendFileSync('pids', process.pid + '\\n' + lone.pid + '\\n')
const poll = setInterval(() => {
  if (readFileSync('pids', 'utf8').trim().split('\\n').length < 4) return
  clearInterval(poll)
  console.log('ready')
}, 20)
setInterval(() => {}, 1000)
`

describe('bash', () => {
  it('runs the command in the workspace and saves its output', async () => {
    const ctx = context()
    const result = await bashTool.execute({ command: 'pwd' }, ctx)
    expect(result.isError).toBe(false)
    expect(result.output).toBe(workspace)
    expect(result.title).toBe('pwd')
    const outputPath = join(outputDir, 'toolu_01.log')
    expect(result.metadata).toMatchObject({
      exitCode: 0,
      signal: null,
      timedOut: false,
      aborted: false,
      outputPath,
      totalBytes: workspace.length + 1,
      totalLines: 1,
      truncated: false,
      cwd: workspace,
      timeoutSec: 180,
    })
    expect(result.metadata?.durationMs).toEqual(expect.any(Number))
    expect(await readFile(outputPath, 'utf8')).toBe(`${workspace}\n`)
  })

  it('refuses a command the checker denies, and never runs it', async () => {
    await writeFile(join(workspace, 'keep'), 'data')
    const ctx = context()
    const result = await bashTool.execute({ command: 'rm -rf keep' }, ctx)
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/^Command not run: .*rm/)
    expect(result.metadata).toMatchObject({ denied: true })
    expect(await readFile(join(workspace, 'keep'), 'utf8')).toBe('data')
    const inline = await bashTool.execute(
      { command: `node -e "require('fs').writeFileSync('made', '')"` },
      ctx,
    )
    expect(inline.isError).toBe(true)
    await expect(stat(join(workspace, 'made'))).rejects.toThrow()
    expect(await readdir(outputDir)).toEqual([])
  })

  it('reports a non-zero exit code as an error, with the output', async () => {
    await writeFile(join(workspace, 'fail.js'), "console.error('boom'); process.exit(3)")
    const result = await bashTool.execute({ command: 'node fail.js' }, context())
    expect(result.isError).toBe(true)
    expect(result.output).toBe('boom\n\nExit code 3')
    expect(result.metadata).toMatchObject({ exitCode: 3 })
  })

  it('says when a command printed nothing', async () => {
    const result = await bashTool.execute({ command: 'true' }, context())
    expect(result).toMatchObject({ isError: false, output: '(no output)' })
  })

  it('strips terminal sequences for the model and sends them raw to the live view', async () => {
    await writeFile(
      join(workspace, 'colours.js'),
      String.raw`process.stdout.write('\x1b[31mred\x1b[0m and \x1b]0;title\x07plain\n50%\r100%\n')`,
    )
    const ctx = context()
    const result = await bashTool.execute({ command: 'node colours.js' }, ctx)
    expect(result.output).toBe('red and plain\n100%')
    expect(ctx.progress.join('')).toBe('\x1b[31mred\x1b[0m and \x1b]0;title\x07plain\n50%\r100%\n')
  })

  it('coalesces live output instead of calling back for every write', async () => {
    await writeFile(
      join(workspace, 'slow.js'),
      'let i = 0; const t = setInterval(() => { console.log(`line ${i}`); if (++i === 100) clearInterval(t) }, 5)',
    )
    const ctx = context()
    const result = await bashTool.execute({ command: 'node slow.js' }, ctx)
    expect(result.isError).toBe(false)
    const expected = Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join('')
    expect(ctx.progress.join('')).toBe(expected)
    expect(ctx.progress.length).toBeGreaterThan(1)
    // ~500 ms of output in 50 ms windows.
    expect(ctx.progress.length).toBeLessThan(30)
  })

  it('says when the output was cut, with its size, line count and the saved file', async () => {
    const result = await bashTool.execute({ command: 'seq 1 300000' }, context({ callId: 'call/../x y' }))
    const outputPath = join(outputDir, 'call_.._x_y.log')
    const saved = await readFile(outputPath, 'utf8')
    expect(saved.endsWith('299999\n300000\n')).toBe(true)
    const [note, ...rest] = result.output.split('\n')
    expect(note).toBe(
      `[Output truncated: showing the last 2000 of 300000 lines; the command printed ${(saved.length / 1e6).toFixed(1)} MB in total. Full output: ${outputPath} (read_file reads it, with offset and limit)]`,
    )
    expect(rest).toEqual(Array.from({ length: 2000 }, (_, i) => String(298001 + i)))
    expect(result.metadata).toMatchObject({
      truncated: true,
      totalLines: 300000,
      totalBytes: saved.length,
      shownLines: 2000,
    })
  })

  it('keeps a flood to the byte cap for the model and every byte in the file', async () => {
    const ctx = context()
    const result = await bashTool.execute({ command: 'yes', timeout: 2 }, ctx)
    expect(result.isError).toBe(true)
    const [note, ...rest] = result.output.split('\n')
    expect(note).toMatch(
      /^\[Output truncated: showing the last \d+ of \d+ lines; the command printed [\d.]+ MB in total/,
    )
    const tail = rest.join('\n').split('\n\nTimed out')[0] as string
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(MAX_MODEL_BYTES)
    expect(new Set(tail.split('\n'))).toEqual(new Set(['y']))
    const totalBytes = result.metadata?.totalBytes as number
    expect(totalBytes).toBeGreaterThan(1_000_000)
    expect((await stat(join(outputDir, 'toolu_01.log'))).size).toBe(totalBytes)
    // The live view got a bounded part of it, not megabytes.
    expect(ctx.progress.join('').length).toBeLessThan(4 * 1024 * 1024)
  })

  // Outside the sandbox the process tree is all there is to find what a command started (inside, the PID
  // namespace ends with it too: sandbox.test.ts).
  const outside = { approval: { network: false, outsideSandbox: true } }

  it('kills the command and everything it started at the timeout, and says so', async () => {
    await writeFile(join(workspace, 'stubborn.js'), STUBBORN_JS)
    const result = await bashTool.execute({ command: 'node stubborn.js', timeout: 4 }, context(outside))
    expect(result.isError).toBe(true)
    expect(result.output).toContain('ready')
    expect(result.output).toMatch(
      /Timed out after 4 s: the command was killed together with its whole process group/,
    )
    expect(result.metadata).toMatchObject({
      timedOut: true,
      aborted: false,
      exitCode: null,
      signal: 'SIGKILL',
    })
    const pids = (await readFile(join(workspace, 'pids'), 'utf8')).trim().split('\n').map(Number)
    expect(pids).toHaveLength(4)
    for (const pid of pids) expect(await isAlive(pid), `pid ${pid}`).toBe(false)
  })

  it('takes its default timeout from the context', async () => {
    const result = await bashTool.execute({ command: 'sleep 30' }, context({ bashTimeoutSec: 1 }))
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/Timed out after 1 s/)
    expect(result.metadata).toMatchObject({ timeoutSec: 1, timedOut: true })
  })

  it('stops the command and its children when the run is stopped, and says so', async () => {
    await writeFile(join(workspace, 'stubborn.js'), STUBBORN_JS)
    const controller = new AbortController()
    const ctx = context({
      ...outside,
      signal: controller.signal,
      onProgress: (chunk) => {
        if (chunk.includes('ready')) controller.abort()
      },
    })
    const result = await bashTool.execute({ command: 'node stubborn.js' }, ctx)
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(
      /Stopped by the user: the command was killed together with its whole process group/,
    )
    expect(result.metadata).toMatchObject({ aborted: true, timedOut: false })
    const pids = (await readFile(join(workspace, 'pids'), 'utf8')).trim().split('\n').map(Number)
    for (const pid of pids) expect(await isAlive(pid), `pid ${pid}`).toBe(false)
  })

  it('keeps the API key out of the command environment', async () => {
    const saved = process.env.ANTHROPIC_API_KEY
    process.env.ANTHROPIC_API_KEY = 'sk-ant-do-not-leak'
    try {
      const key = await bashTool.execute({ command: 'printenv ANTHROPIC_API_KEY' }, context())
      expect(key.isError).toBe(true)
      expect(key.output).not.toContain('sk-ant')
      const all = await bashTool.execute({ command: 'printenv' }, context({ callId: 'toolu_02' }))
      expect(all.output).not.toContain('sk-ant-do-not-leak')
      expect(all.output).toContain('TERM=dumb')
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY
      else process.env.ANTHROPIC_API_KEY = saved
    }
  })

  it('uses the description as the title and keeps it in the metadata', async () => {
    const result = await bashTool.execute({ command: 'echo hi', description: 'Say hello' }, context())
    expect(result.title).toBe('Say hello')
    expect(result.metadata).toMatchObject({ description: 'Say hello' })
  })

  it('refuses every hostile command of the corpus sample before running it', async () => {
    const cases = loadCorpus<BashCase>('bash-sample').filter((c) => c.expect === 'deny')
    expect(cases.length).toBeGreaterThan(0)
    const ctx = context()
    for (const c of cases) {
      const command = bashCommand(c)
      const result = await bashTool.execute({ command }, ctx)
      expect(result.isError, JSON.stringify(command)).toBe(true)
      expect(result.output).toMatch(/^Command not run: /)
    }
    // Nothing ran: no output file was ever opened.
    expect(await readdir(outputDir)).toEqual([])
  })

  it('still answers when the output cannot be saved', async () => {
    const result = await bashTool.execute(
      { command: 'seq 1 5000' },
      context({ outputDir: join(outputDir, 'gone') }),
    )
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/^\[Output truncated: .* The full output could not be saved \(ENOENT/)
    expect(result.output.endsWith('\n5000')).toBe(true)
    expect(result.metadata).toMatchObject({ outputPath: null })
  })
})
