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
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        await exited
      }
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
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve)
    child.once('exit', (code) => reject(new Error(`lanes web exited with ${code}: ${stderr}`)))
  })
  return { child, url }
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
