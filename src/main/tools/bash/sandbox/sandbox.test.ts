import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { ToolContext } from '../../tool'
import { bashTool } from '../bash'
import { runInPty } from '../pty-runner'
import { prepareCommandSandbox, prepareSandbox, sandboxStartFailure } from './launch'
import type { SandboxMode } from './policy'
import {
  CANARY,
  CANARY_ENVIRONMENT,
  CANARY_FILES,
  PROBE_MARKER,
  PROBE_SCRIPT,
  PROBES,
  type Probe,
} from './probes.corpus'
import { makeToolContext } from '../../test-fixtures/tool-context'
import { sandboxMissing } from '../test-fixtures/sandbox'

/** The sandbox run for real with bubblewrap (skipped without it, except on CI: see sandboxMissing). */
const missing = sandboxMissing('the sandbox tests')

let base: string
let workspace: string
let outside: string
let fakeHome: string
let outputDir: string
let listener: Server
let port = 0
let connections = 0
const savedEnv = { ...process.env }

beforeAll(async () => {
  listener = createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  port = (listener.address() as { port: number }).port
  // Not under /tmp: the sandbox puts a private tmpfs there, which would hide these folders whatever the
  // rest of it did. Beside the project, they stand for the user's other files.
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  base = await realpath(await mkdtemp(join(cache, 'lanes-sandbox-test-')))
  outside = join(base, 'outside')
  fakeHome = join(base, 'home')
  outputDir = join(base, 'session')
  for (const name of CANARY_ENVIRONMENT) process.env[name] = CANARY.environment
  process.env.HOME = fakeHome
})

afterAll(async () => {
  process.env = savedEnv
  await new Promise((resolve) => listener.close(resolve))
  await rm(base, { recursive: true, force: true })
})

let folderCount = 0

/** A fresh hostile folder: canaries, the probe script, and the repository shape the probe asks for. */
async function hostileFolder(shape: Probe['folder']): Promise<string> {
  workspace = join(base, `project-${++folderCount}`)
  await rm(outside, { recursive: true, force: true })
  for (const dir of [workspace, outside, fakeHome, outputDir, join(workspace, 'src')])
    await mkdir(dir, { recursive: true })
  await writeFile(join(outside, 'secret.txt'), CANARY.outside)
  await writeFile(join(fakeHome, '.lanes-probe-canary'), CANARY.outside)
  for (const [path, value] of CANARY_FILES) {
    await mkdir(dirname(join(workspace, path)), { recursive: true })
    await writeFile(join(workspace, path), `${value}\n`)
  }
  const script = PROBE_SCRIPT.replaceAll('OUTSIDE', outside)
    .replaceAll('REALHOME', fakeHome)
    .replaceAll('PORT', String(port))
  await writeFile(join(workspace, 'hostile.sh'), script)
  await chmod(join(workspace, 'hostile.sh'), 0o755)
  await writeFile(join(workspace, 'src', 'a.txt'), 'one\n')
  await writeFile(
    join(workspace, 'package.json'),
    JSON.stringify({ name: 'hostile', scripts: { probe: 'bash hostile.sh' } }),
  )
  const hostileConfig = [
    '[core]',
    `\tfsmonitor = ${workspace}/hostile.sh`,
    `\tpager = ${workspace}/hostile.sh`,
    '[diff]',
    `\texternal = ${workspace}/hostile.sh`,
    '',
  ].join('\n')
  const git = (...args: string[]): void => {
    execFileSync('git', args, { cwd: workspace, stdio: 'ignore', env: { ...process.env, HOME: fakeHome } })
  }
  if (shape === 'git') {
    git('init', '-q')
    git('-c', 'user.email=a@b', '-c', 'user.name=a', 'add', 'src', 'package.json')
    git('-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-qm', 'first')
    await writeFile(join(workspace, 'src', 'a.txt'), 'two\n')
    await writeFile(join(workspace, '.git', 'config'), hostileConfig, { flag: 'a' })
  }
  if (shape === 'bare') {
    for (const dir of ['objects', 'refs/heads']) await mkdir(join(workspace, dir), { recursive: true })
    await writeFile(join(workspace, 'HEAD'), 'ref: refs/heads/main\n')
    await writeFile(join(workspace, 'config'), `[core]\n\tbare = true\n${hostileConfig}`)
  }
  return workspace
}

/**
 * The probe's command in the sandbox, through the runner, without the validator: the OS is the boundary. Its
 * masks as a command's are made (from the watched index), where changes since the last command must show.
 */
async function runSandboxed(
  command: string,
  mode: SandboxMode,
  timeoutMs = 60_000,
): Promise<{ output: string; timedOut: boolean }> {
  const launch = await prepareCommandSandbox({ mode, workspace, network: false })
  if ('error' in launch) throw new Error(launch.error)
  const chunks: Buffer[] = []
  const run = await runInPty({
    command,
    cwd: workspace,
    timeoutMs,
    onData: (chunk) => void chunks.push(chunk),
    launch,
  })
  await launch.cleanup()
  const output = Buffer.concat(chunks).toString('utf8')
  expect(sandboxStartFailure(launch, run, output), output).toBeNull()
  return { output, timedOut: run.timedOut }
}

const canaryValues = [...new Set(Object.values(CANARY))]

describe.skipIf(missing !== null)('the sandbox against hostile folders and commands', () => {
  beforeEach(() => {
    connections = 0
  })

  for (const mode of ['read-only', 'workspace-write'] as const) {
    for (const probe of PROBES) {
      it(`${mode}: ${probe.name}`, async () => {
        await hostileFolder(probe.folder)
        const gitConfig = probe.folder === 'git' ? await readFile(join(workspace, '.git/config'), 'utf8') : ''
        const { output } = await runSandboxed(probe.command.replaceAll('PORT', String(port)), mode)
        if (probe.mustRun) expect(output).toContain(PROBE_MARKER)
        for (const value of canaryValues) expect(output).not.toContain(value)
        expect(connections, 'connections to the local listener').toBe(0)
        expect(existsSync(join(outside, 'pwned.txt'))).toBe(false)
        expect(existsSync(join(fakeHome, 'pwned.txt'))).toBe(false)
        if (mode === 'read-only') expect(existsSync(join(workspace, 'pwned.txt'))).toBe(false)
        if (probe.folder === 'git') {
          expect(existsSync(join(workspace, '.git/hooks/pre-commit'))).toBe(false)
          expect(await readFile(join(workspace, '.git/config'), 'utf8')).toBe(gitConfig)
        }
        for (const [path, value] of CANARY_FILES)
          expect(await readFile(join(workspace, path), 'utf8')).toBe(`${value}\n`)
      }, 60_000)
    }
  }

  it('lets an approved command write the workspace, and a probe there proves the script ran', async () => {
    await hostileFolder('git')
    const { output } = await runSandboxed('npm run probe', 'workspace-write')
    expect(output).toContain('probe-done')
    expect(await readFile(join(workspace, 'pwned.txt'), 'utf8')).toBe('written\n')
  })

  it('sees a secret file created after the last command (the masks are revalidated)', async () => {
    await hostileFolder('plain')
    await runSandboxed('true', 'read-only')
    await mkdir(join(workspace, 'later', 'deeper'), { recursive: true })
    await writeFile(join(workspace, 'later', 'deeper', '.env.local'), CANARY.env)
    const { output } = await runSandboxed('cat later/deeper/.env.local', 'read-only')
    expect(output).not.toContain(CANARY.env)
  })

  it('masks what a secret-named link points to inside the workspace', async () => {
    await hostileFolder('plain')
    await writeFile(join(workspace, 'values.txt'), CANARY.env)
    execFileSync('ln', ['-s', 'values.txt', join(workspace, '.env.link')])
    const { output } = await runSandboxed('cat values.txt', 'read-only')
    expect(output).not.toContain(CANARY.env)
  })

  it('lets the process exit at once after a sandboxed command (no timer left behind)', async () => {
    await hostileFolder('plain')
    const script = [
      `const { runInPty } = await import(${JSON.stringify(new URL('../pty-runner.ts', import.meta.url).href)})`,
      `const { prepareSandbox } = await import(${JSON.stringify(new URL('./launch.ts', import.meta.url).href)})`,
      `const launch = prepareSandbox({ mode: 'read-only', workspace: ${JSON.stringify(workspace)}, network: false })`,
      `await runInPty({ command: 'true', cwd: ${JSON.stringify(workspace)}, timeoutMs: 10000, onData: () => {}, launch })`,
      `process.stdout.write('done\\n')`,
    ].join('\n')
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let doneAt = 0
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('done')) doneAt = performance.now()
    })
    await new Promise((resolve) => child.on('exit', resolve))
    expect(doneAt).toBeGreaterThan(0)
    // A forgotten one-second fallback timer once held `lanes run` open this long after every command.
    expect(performance.now() - doneAt).toBeLessThan(700)
  }, 30_000)

  it('reports a sandbox that could not start, and never runs the command', async () => {
    await hostileFolder('plain')
    const launch = prepareSandbox({ mode: 'read-only', workspace, network: false })
    if ('error' in launch) throw new Error(launch.error)
    // A mount of a path that does not exist: bubblewrap stops before starting the command.
    launch.args.splice(launch.args.length - 1, 0, '--ro-bind', join(base, 'gone'), '/gone')
    const chunks: Buffer[] = []
    const run = await runInPty({
      command: 'echo ran > ran.txt',
      cwd: workspace,
      timeoutMs: 10_000,
      onData: (chunk) => void chunks.push(chunk),
      launch,
    })
    const failure = sandboxStartFailure(launch, run, Buffer.concat(chunks).toString('utf8'))
    expect(failure).toMatch(/Can't find source path/)
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false)
  })
})

describe.skipIf(missing !== null)('bash in the sandbox', () => {
  const context = (overrides: Partial<ToolContext> = {}): ToolContext =>
    makeToolContext(workspace, {
      outputDir,
      callId: `toolu_${Math.random().toString(36).slice(2)}`,
      ...overrides,
    })
  const approved = { approval: { network: false, outsideSandbox: false } }

  it('runs an auto-run command read-only, and an approved one with the workspace writable', async () => {
    await hostileFolder('git')
    const unasked = await bashTool.execute({ command: 'touch made.txt' }, context())
    expect(unasked.isError).toBe(true)
    expect(unasked.output).toMatch(/Read-only file system/)
    expect(unasked.metadata).toMatchObject({ sandbox: 'read-only', network: false })
    const asked = await bashTool.execute({ command: 'touch made.txt' }, context(approved))
    expect(asked.isError).toBe(false)
    expect(asked.metadata).toMatchObject({ sandbox: 'writable', network: false })
    expect(existsSync(join(workspace, 'made.txt'))).toBe(true)
  })

  it('keeps protected paths read-only for an approved command', async () => {
    await hostileFolder('git')
    const result = await bashTool.execute({ command: 'touch .git/hooks/post-checkout' }, context(approved))
    expect(result.isError).toBe(true)
    expect(existsSync(join(workspace, '.git/hooks/post-checkout'))).toBe(false)
  })

  it('reports the protected files an approved command created', async () => {
    await hostileFolder('git')
    const result = await bashTool.execute({ command: 'touch .envrc2 .npmrc' }, context(approved))
    expect(result.output).toMatch(/created protected files .*: \.npmrc\]/)
    expect(result.metadata).toMatchObject({ createdSensitive: ['.npmrc'] })
  })

  it('gives a command only the allowlisted environment', async () => {
    await hostileFolder('plain')
    const result = await bashTool.execute({ command: 'printenv' }, context())
    for (const name of CANARY_ENVIRONMENT) expect(result.output).not.toContain(`${name}=`)
    expect(result.output).toContain('GIT_CONFIG_NOSYSTEM=1')
    expect(result.output).toMatch(/^HOME=\/tmp\/home$/m)
  })

  it('kills everything a sandboxed command started when it times out (the PID namespace ends with it)', async () => {
    await hostileFolder('plain')
    const marker = `${Date.now() % 100000}.4242`
    await writeFile(
      join(workspace, 'stubborn.sh'),
      `trap '' TERM; (trap '' TERM; setsid sleep ${marker} &) ; sleep ${marker} & echo ready; wait`,
    )
    const result = await runSandboxed('bash stubborn.sh', 'workspace-write', 2000)
    expect(result.output).toContain('ready')
    expect(result.timedOut).toBe(true)
    const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(`sleep ${marker}`))
    expect(left).toEqual([])
  })

  it('runs outside the sandbox only when the approval says so', async () => {
    await hostileFolder('plain')
    const inside = await bashTool.execute({ command: 'printenv HOME' }, context(approved))
    expect(inside.output).toBe('/tmp/home')
    const result = await bashTool.execute(
      { command: 'printenv HOME' },
      context({ approval: { network: false, outsideSandbox: true } }),
    )
    expect(result.metadata).toMatchObject({ sandbox: 'off' })
    expect(result.output).toBe(fakeHome)
  })
})
