import { mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  commandEnv,
  LineEndingRestorer,
  runInPty,
  STOP_KILL_GRACE_MS,
  TIMEOUT_KILL_GRACE_MS,
  type PtyRunOptions,
  type PtyRunResult,
} from './pty-runner'

let dir: string

beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'lanes-pty-')))
})

afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function run(
  command: string,
  options: Partial<PtyRunOptions> = {},
): Promise<PtyRunResult & { output: Buffer; text: string }> {
  const chunks: Buffer[] = []
  const result = await runInPty({
    command,
    cwd: dir,
    timeoutMs: 10_000,
    onData: (chunk) => void chunks.push(chunk),
    ...options,
  })
  const output = Buffer.concat(chunks)
  return { ...result, output, text: output.toString('utf8') }
}

interface ProcStat {
  pid: number
  state: string
  pgid: number
  sid: number
}

async function procStat(pid: number): Promise<ProcStat | null> {
  try {
    const line = await readFile(`/proc/${pid}/stat`, 'utf8')
    const fields = line.slice(line.lastIndexOf(')') + 2).split(' ')
    return { pid, state: fields[0] ?? '', pgid: Number(fields[2]), sid: Number(fields[3]) }
  } catch {
    return null
  }
}

async function isAlive(pid: number): Promise<boolean> {
  const stat = await procStat(pid)
  return stat !== null && stat.state !== 'Z' && stat.state !== 'X'
}

/** Live processes whose process group or session is `id` (what `ps -g` would list). */
async function liveMembers(id: number): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number)
  const stats = await Promise.all(pids.map(procStat))
  return stats
    .filter((s): s is ProcStat => s !== null && s.state !== 'Z' && (s.pgid === id || s.sid === id))
    .map((s) => s.pid)
}

/**
 * A command whose every process ignores SIGTERM: a background child, a subshell with its own child
 * (grandchild), one moved to another process group (job control), and one that left the session (setsid).
 */
const STUBBORN_SCRIPT = `
trap '' TERM
sleep 1000 &
echo $! >> pids
( sleep 1000 & echo $! >> pids; sleep 1000 ) &
echo $! >> pids
set -m
sleep 1000 &
echo $! >> pids
set +m
setsid sleep 1000 &
echo $! >> pids
echo $$ >> pids
echo ready
wait
`

async function recordedPids(): Promise<number[]> {
  return (await readFile(join(dir, 'pids'), 'utf8')).trim().split('\n').map(Number)
}

describe('runInPty', () => {
  it('runs bash -c in the given folder and reports the exit code', async () => {
    const result = await run('pwd; exit 3')
    expect(result.text).toBe(`${dir}\n`)
    expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, aborted: false })
    expect(result.durationMs).toBeGreaterThan(0)
  })

  it('merges stdout and stderr in the order they were written', async () => {
    expect((await run('echo out; echo err >&2; echo out2')).text).toBe('out\nerr\nout2\n')
  })

  it('gives back exactly the bytes the command wrote, with the terminal newline translation undone', async () => {
    const bytes = Buffer.alloc(256 * 4)
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256
    await writeFile(join(dir, 'all-bytes'), Buffer.concat([bytes, Buffer.from('a\r\nb\rc\r\r\n\r')]))
    const result = await run('cat all-bytes')
    expect(result.output).toEqual(await readFile(join(dir, 'all-bytes')))
  })

  it('adds nothing of its own to the output', async () => {
    expect((await run('true')).output.length).toBe(0)
  })

  it('loses no output at the end of a fast command', async () => {
    for (let i = 0; i < 3; i++) {
      const result = await run('head -c 5000000 /dev/zero')
      expect(result.output.length).toBe(5_000_000)
      expect(result).toMatchObject({ exitCode: 0, signal: null })
    }
  })

  it('reports a clean exit for programs that close their own output before exiting', async () => {
    // coreutils flush and close stdout at exit; the hang-up that follows must not kill them first.
    for (let i = 0; i < 12; i++) {
      expect(await run('exec sleep 0.01')).toMatchObject({ exitCode: 0, signal: null })
    }
  })

  it('reports a death by signal with the signal name', async () => {
    expect(await run('kill -TERM $$')).toMatchObject({ exitCode: null, signal: 'SIGTERM' })
  })

  it('starts the command as the leader of its own session and process group', async () => {
    const result = await run('ps -o pid=,pgid=,sid= -p $$; sh -c "ps -o pgid=,sid= -p \\$\\$"')
    const [leader, child] = result.text.trim().split('\n')
    expect(leader?.trim().split(/\s+/).map(Number)).toEqual([result.pid, result.pid, result.pid])
    expect(child?.trim().split(/\s+/).map(Number)).toEqual([result.pid, result.pid])
  })

  it('gives the command a terminal for output but no input to wait for', async () => {
    expect((await run('test -t 1 && test -t 2')).exitCode).toBe(0)
    expect((await run('test -t 0')).exitCode).toBe(1)
    const reader = await run('cat; read -r line; echo "read: $?"', { timeoutMs: 5000 })
    expect(reader).toMatchObject({ timedOut: false, exitCode: 0 })
    expect(reader.text).toBe('read: 1\n')
    // A program that asks /dev/tty directly (as ssh and sudo do) gets end of file too.
    const tty = await run('head -c 1 /dev/tty; echo "tty: $?"', { timeoutMs: 5000 })
    expect(tty).toMatchObject({ timedOut: false, exitCode: 0 })
    expect(tty.text).toBe('tty: 0\n')
  })

  it('hands the command its terminal only as its output (and fd 9), no other descriptor of it', async () => {
    // The shell's own descriptors, by number and target: the terminal's slave is /dev/pts/N.
    const result = await run('cd /proc/$$/fd && for f in *; do echo "$f $(readlink "$f")"; done')
    const slaves = result.text
      .trim()
      .split('\n')
      .filter((line) => / \/dev\/pts\/\d+$/.test(line))
      .map((line) => Number(line.split(' ')[0]))
    expect(slaves.sort((a, b) => a - b)).toEqual([1, 2, 9])
  })

  it('keeps secrets out of the environment and sets non-interactive defaults', async () => {
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      ANTHROPIC_API_KEY: 'sk-ant-secret',
      ANTHROPIC_AUTH_TOKEN: 'auth-secret',
      OPENAI_API_KEY: 'sk-openai',
      GITHUB_TOKEN: 'ghp_secret',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      DB_PASSWORD: 'hunter2',
      FORCE_COLOR: '3',
      MY_SETTING: 'kept',
      TOKENIZERS_PARALLELISM: 'false',
    }
    const result = await run('env', { env })
    const vars = Object.fromEntries(
      result.text
        .trim()
        .split('\n')
        .map((l) => [l.split('=')[0], l.slice(l.indexOf('=') + 1)]),
    )
    expect(result.text).not.toMatch(/secret|sk-|hunter2/)
    expect(vars).toMatchObject({
      MY_SETTING: 'kept',
      TOKENIZERS_PARALLELISM: 'false',
      TERM: 'dumb',
      PAGER: 'cat',
      GIT_PAGER: 'cat',
      CI: '1',
      GIT_TERMINAL_PROMPT: '0',
      NO_COLOR: '1',
    })
    expect(vars.FORCE_COLOR).toBeUndefined()
  })

  it('removes the API key from the inherited environment', async () => {
    const saved = process.env.ANTHROPIC_API_KEY
    process.env.ANTHROPIC_API_KEY = 'sk-ant-from-the-app'
    try {
      const result = await run('env')
      expect(result.text).not.toContain('sk-ant-from-the-app')
      expect(result.text).toContain(`PATH=${process.env.PATH}`)
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY
      else process.env.ANTHROPIC_API_KEY = saved
    }
  })

  it('kills the whole tree at the timeout, SIGTERM first and SIGKILL after the grace', async () => {
    await writeFile(join(dir, 'stubborn.sh'), STUBBORN_SCRIPT)
    const result = await run('bash stubborn.sh', { timeoutMs: 2500 })
    expect(result.text).toContain('ready')
    expect(result.timedOut).toBe(true)
    expect(result.aborted).toBe(false)
    expect(result.durationMs).toBeGreaterThanOrEqual(2500 + TIMEOUT_KILL_GRACE_MS - 100)
    expect(result.durationMs).toBeLessThan(2500 + TIMEOUT_KILL_GRACE_MS + 4000)
    const pids = await recordedPids()
    expect(pids).toHaveLength(6)
    for (const pid of pids) expect(await isAlive(pid), `pid ${pid}`).toBe(false)
    expect(await liveMembers(result.pid as number)).toEqual([])
  })

  it('ends a command that obeys SIGTERM without waiting out the grace', async () => {
    const result = await run('sleep 1000', { timeoutMs: 300 })
    expect(result.timedOut).toBe(true)
    expect(result.durationMs).toBeLessThan(300 + TIMEOUT_KILL_GRACE_MS)
    expect(result.signal).toBe('SIGTERM')
  })

  it('stops the whole tree when the signal aborts, and says it was stopped', async () => {
    await writeFile(join(dir, 'stubborn.sh'), STUBBORN_SCRIPT)
    const controller = new AbortController()
    const result = await run('bash stubborn.sh', {
      signal: controller.signal,
      timeoutMs: 60_000,
      onData: (chunk) => {
        if (chunk.toString().includes('ready')) controller.abort()
      },
    })
    expect(result).toMatchObject({ aborted: true, timedOut: false })
    expect(result.durationMs).toBeLessThan(STOP_KILL_GRACE_MS + 4000)
    for (const pid of await recordedPids()) expect(await isAlive(pid), `pid ${pid}`).toBe(false)
    expect(await liveMembers(result.pid as number)).toEqual([])
  })

  it('does not start a command whose signal is already aborted', async () => {
    const result = await run('touch started', { signal: AbortSignal.abort() })
    expect(result).toMatchObject({ aborted: true, pid: null })
    await expect(readFile(join(dir, 'started'))).rejects.toThrow()
  })

  it('ends what the command left running in its group when it exits', async () => {
    const result = await run("trap '' HUP; sleep 1000 & echo $!")
    expect(result.exitCode).toBe(0)
    const leftover = Number(result.text.trim())
    expect(await isAlive(leftover)).toBe(false)
  })

  it('returns an error, not an exception, when the folder does not exist', async () => {
    const result = await run('true', { cwd: join(dir, 'missing') })
    expect(result.pid).toBeNull()
    expect(result.error).toMatch(/missing/)
  })

  it('pauses the command while the consumer is behind, and loses nothing', async () => {
    let inFlight = false
    let overlaps = 0
    let received = 0
    const result = await runInPty({
      command: 'head -c 400000 /dev/zero',
      cwd: dir,
      timeoutMs: 30_000,
      onData: async (chunk) => {
        if (inFlight) overlaps++
        inFlight = true
        received += chunk.length
        await delay(2)
        inFlight = false
      },
    })
    expect(result.exitCode).toBe(0)
    expect(received).toBe(400_000)
    // Only the last few KiB, drained at once after the command closed the terminal, may overlap.
    expect(overlaps).toBeLessThanOrEqual(3)
  })
})

describe('commandEnv', () => {
  it('removes credentials by name and keeps everything else', () => {
    const env = commandEnv({
      ANTHROPIC_API_KEY: 'x',
      ANTHROPIC_AUTH_TOKEN: 'x',
      CLAUDE_CODE_OAUTH_TOKEN: 'x',
      HF_TOKEN: 'x',
      npm_config__authToken: 'x',
      AZURE_CLIENT_SECRET: 'x',
      GPG_PASSPHRASE: 'x',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1234',
      SSH_AUTH_SOCK: '/tmp/agent',
      PASSWORD_STORE_DIR: '/p',
      EMPTY: undefined,
    })
    expect(Object.keys(env)).not.toEqual(
      expect.arrayContaining([
        'ANTHROPIC_API_KEY',
        'ANTHROPIC_AUTH_TOKEN',
        'HF_TOKEN',
        'AZURE_CLIENT_SECRET',
      ]),
    )
    for (const name of ['CLAUDE_CODE_OAUTH_TOKEN', 'npm_config__authToken', 'GPG_PASSPHRASE', 'EMPTY']) {
      expect(env[name]).toBeUndefined()
    }
    expect(env).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1234',
      SSH_AUTH_SOCK: '/tmp/agent',
      PASSWORD_STORE_DIR: '/p',
    })
  })
})

describe('LineEndingRestorer', () => {
  it('undoes the terminal CR LF whatever the chunk boundaries', () => {
    const terminal = Buffer.from('a\r\n\r\r\nb\rc\r\r\n\r\n\r')
    const program = Buffer.from('a\n\r\nb\rc\r\n\n\r')
    for (let size = 1; size <= terminal.length; size++) {
      const restorer = new LineEndingRestorer()
      const out: Buffer[] = []
      for (let i = 0; i < terminal.length; i += size) out.push(restorer.push(terminal.subarray(i, i + size)))
      out.push(restorer.flush())
      expect(Buffer.concat(out), `chunks of ${size}`).toEqual(program)
    }
  })
})
