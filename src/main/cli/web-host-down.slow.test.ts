import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { sandboxMissing } from '../tools/bash/test-fixtures/sandbox'

/**
 * `lanes web` as a real process, with a real approved command running, taken down the ways a host goes down:
 * the command (a `sleep` with a duration no other process uses) must not outlive it.
 */

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))
const SLEEP_SECONDS = 291

/** Pids of processes running exactly `sleep SLEEP_SECONDS`. */
async function sleepers(): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')
    if (cmdline === `sleep\0${SLEEP_SECONDS}\0`) found.push(Number(name))
  }
  return found
}

async function until<T>(probe: () => Promise<T | null>, ms: number): Promise<T | null> {
  const end = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value !== null || Date.now() > end) return value
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe.skipIf(process.platform !== 'linux')('a browser-mode host that goes down', () => {
  let base: string
  let model: ScriptedModel
  let host: ChildProcess | null = null

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-host-down-')))
    await mkdir(join(base, 'project'))
    await mkdir(join(base, 'sessions'))
    model = await startScriptedModel({
      scenario: {
        turns: [
          { blocks: [{ tool: 'bash', input: { command: `sleep ${SLEEP_SECONDS}`, description: 'Wait' } }] },
          { blocks: [{ text: 'Done.' }] },
        ],
      },
    })
    await writeFile(join(base, 'sessions', 'settings.json'), JSON.stringify({ baseUrl: model.baseUrl }))
  })
  afterEach(async () => {
    if (host && host.exitCode === null && host.signalCode === null) host.kill('SIGKILL')
    for (const pid of await sleepers()) process.kill(pid, 'SIGKILL')
    await model.close()
    await rm(base, { recursive: true, force: true })
  })

  /** Starts `lanes web`, starts a task over its socket and approves its `sleep`; resolves once it runs. */
  async function hostRunningSleep(): Promise<ChildProcess> {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        // The host as `lanes web` runs it, plus a way for the test to make it throw an error nothing catches.
        [
          `process.stdin.on('data', (d) => { if (String(d).includes('crash')) setTimeout(() => { throw new Error('boom') }) })`,
          `const { main } = await import('./src/main/cli/cli.ts')`,
          // Reading stdin would keep the process alive once `main` has returned.
          `process.exitCode = await main(process.argv.slice(1)); process.stdin.destroy()`,
        ].join('\n'),
        'web',
        '--workspace',
        join(base, 'project'),
        '--sessions-dir',
        join(base, 'sessions'),
      ],
      {
        cwd: repoRoot,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, ANTHROPIC_API_KEY: 'test-key', LANES_NO_KEYCHAIN: '1' },
      },
    )
    host = child
    const url = new URL(
      await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve)
        child.once('exit', (code) => reject(new Error(`lanes web exited with ${code}`)))
      }),
    )
    const ws = new WebSocket(
      `ws://${url.host}/api`,
      ['lanes', `lanes.token.${url.searchParams.get('token')}`],
      {
        headers: { Origin: url.origin },
      },
    )
    await new Promise((resolve, reject) => {
      ws.once('open', resolve)
      ws.once('error', reject)
    })
    let nextId = 1
    const send = (channel: string, input: unknown) =>
      ws.send(JSON.stringify({ id: nextId++, channel, input }))
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as {
        kind: string
        channel?: string
        payload?: { sessionId: string; events: { type: string; callId?: string }[] }
      }
      if (message.kind !== 'event' || message.channel !== 'session:events') return
      for (const event of message.payload!.events) {
        if (event.type === 'approval.requested') {
          send('approval:reply', {
            sessionId: message.payload!.sessionId,
            decisions: [{ callId: event.callId, decision: 'approved' }],
          })
        }
      }
    })
    send('session:start', { task: 'wait a while' })
    const running = await until(async () => ((await sleepers()).length > 0 ? true : null), 20_000)
    expect(running, 'the approved sleep started').toBe(true)
    ws.terminate()
    return child
  }

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`kills the running command when it is stopped with ${signal}`, async () => {
      const child = await hostRunningSleep()
      const exited = new Promise((r) => child.once('exit', r))
      child.kill(signal)
      await exited
      const left = await until(async () => ((await sleepers()).length === 0 ? true : null), 5000)
      expect(left, `a sleep outlived the host (${signal})`).toBe(true)
    }, 60_000)
  }

  // A SIGKILLed host runs no code at all: its commands end because the sandbox they run in dies with its
  // parent (bubblewrap's --die-with-parent, the whole PID namespace with it).
  it.skipIf(sandboxMissing('the SIGKILLed host test') !== null)(
    'kills the running sandboxed command even when it is SIGKILLed',
    async () => {
      const child = await hostRunningSleep()
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGKILL')
      await exited
      const left = await until(async () => ((await sleepers()).length === 0 ? true : null), 5000)
      expect(left, 'a sleep outlived the SIGKILLed host').toBe(true)
    },
    60_000,
  )

  it('kills the running command when an error nothing caught stops it, and exits with 1', async () => {
    const child = await hostRunningSleep()
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    child.stdin!.write('crash\n')
    expect(await exited).toBe(1)
    expect(stderr).toContain('stopping after an unexpected error')
    const left = await until(async () => ((await sleepers()).length === 0 ? true : null), 5000)
    expect(left, 'a sleep outlived the crashed host').toBe(true)
  }, 60_000)
})
