import { test as base } from '@playwright/test'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const repoRoot = fileURLToPath(new URL('..', import.meta.url))
export const lanesBin = join(repoRoot, 'bin', 'lanes.js')

export interface WebApp {
  /** URL with the token, as `lanes web` printed it. */
  url: string
  origin: string
  token: string
  workspace: string
  sessionsDir: string
  process: ChildProcess
}

/** Starts `lanes web` on a free port with a fresh temporary workspace; stops it and cleans up after. */
export async function startWebApp(
  files: Record<string, string> = {},
  env: NodeJS.ProcessEnv = {},
  /**
   * `openWorkspace: false` starts `lanes web` without --workspace (the page then starts with the folder
   * browser); `homeIsBase` makes the temporary folder that holds the workspace the user's home.
   */
  opts: { openWorkspace?: boolean; homeIsBase?: boolean } = {},
): Promise<{ app: WebApp; stop(): Promise<void> }> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-e2e-')))
  const workspace = join(base, 'demo-project')
  const sessionsDir = join(base, 'sessions')
  await mkdir(workspace, { recursive: true })
  for (const [name, content] of Object.entries(files)) {
    await mkdir(join(workspace, name, '..'), { recursive: true })
    await writeFile(join(workspace, name), content)
  }
  const { child, url } = await spawnLanesWeb(
    opts.openWorkspace === false ? null : workspace,
    sessionsDir,
    // Never the user's keychain from a test run: keys go to the temporary data folder's file.
    { LANES_NO_KEYCHAIN: '1', ...(opts.homeIsBase ? { HOME: base } : {}), ...env },
  )
  const parsed = new URL(url)
  const app: WebApp = {
    url,
    origin: parsed.origin,
    token: parsed.searchParams.get('token') ?? '',
    workspace,
    sessionsDir,
    process: child,
  }
  return {
    app,
    async stop() {
      await endChild(child, 'lanes web')
      await rm(base, { recursive: true, force: true })
    },
  }
}

/**
 * Starts `lanes web` on `workspace` (null: none, the page starts with the folder browser) and `sessionsDir`, with
 * `env` over this process's environment; resolves with the URL it prints once it listens.
 */
export async function spawnLanesWeb(
  workspace: string | null,
  sessionsDir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      lanesBin,
      'web',
      ...(workspace === null ? [] : ['--workspace', workspace]),
      '--port',
      '0',
      '--sessions-dir',
      sessionsDir,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  )
  const url = await firstLine(child, 'lanes web')
  return { child, url }
}

/** Bounds on waiting for a child process of a spec: a hang fails with its name and its stderr, not a bare timeout. */
const START_MS = 30_000
const EXIT_MS = 15_000

const stderrOf = new WeakMap<ChildProcess, { text: string }>()

function stderrTail(child: ChildProcess): string {
  const text = stderrOf.get(child)?.text ?? ''
  return text.length > 4000 ? `…${text.slice(-4000)}` : text
}

/**
 * The first line `child` (started with piped stdout and stderr) prints: where it serves. Rejects if it exits first
 * or prints nothing within START_MS; in both cases with what it wrote to stderr.
 */
export async function firstLine(child: ChildProcess, what: string): Promise<string> {
  const kept = { text: '' }
  stderrOf.set(child, kept)
  child.stderr?.on('data', (d: Buffer) => (kept.text += d.toString()))
  let timer: NodeJS.Timeout | undefined
  try {
    return await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve)
      child.once('exit', (code, signal) =>
        reject(new Error(`${what} exited (${signal ?? code}) before it served: ${stderrTail(child)}`)),
      )
      timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(
          new Error(`${what} printed nothing within ${START_MS / 1000} s of its start: ${stderrTail(child)}`),
        )
      }, START_MS)
    })
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Ends `child` with SIGTERM, as a user's Ctrl+C would, and waits for it to exit. One still running after EXIT_MS
 * is killed and the call fails, naming it and quoting its stderr: a process that does not end when told is a bug.
 */
export async function endChild(child: ChildProcess, what: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  let timer: NodeJS.Timeout | undefined
  const late = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), EXIT_MS))),
  ])
  clearTimeout(timer)
  if (!late) return
  child.kill('SIGKILL')
  await exited
  throw new Error(`${what} did not exit within ${EXIT_MS / 1000} s of SIGTERM: ${stderrTail(child)}`)
}

export const test = base.extend<{ web: WebApp }>({
  web: async ({}, use) => {
    const { app, stop } = await startWebApp({
      'README.md': '# Demo project\n',
      'src/index.ts': 'export const x = 1\n',
    })
    await use(app)
    await stop()
  },
})

export { expect } from '@playwright/test'
