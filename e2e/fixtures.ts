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
  const child = spawn(
    process.execPath,
    [
      lanesBin,
      'web',
      ...(opts.openWorkspace === false ? [] : ['--workspace', workspace]),
      '--port',
      '0',
      '--sessions-dir',
      sessionsDir,
    ],
    // Never the user's keychain from a test run: keys go to the temporary data folder's file.
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LANES_NO_KEYCHAIN: '1', ...(opts.homeIsBase ? { HOME: base } : {}), ...env },
    },
  )
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    lines.once('line', resolve)
    child.once('exit', (code) => reject(new Error(`lanes web exited with ${code}: ${stderr}`)))
  })
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
