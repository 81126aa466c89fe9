import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path'
import { prepareSandbox, sandboxSupport } from '../tools/bash/sandbox/launch'
import { sandboxEnv, SANDBOX_HOME, SANDBOX_TMP, type SandboxMode } from '../tools/bash/sandbox/policy'
import type { McpServerConfig } from './config'

/**
 * How a stdio server is started: inside the OS sandbox of DESIGN 2.3 (bubblewrap, Seatbelt) with the
 * permissions it was trusted with. Inside, it reads the system, the PATH folders and its own install folder
 * (the package or script its command names); the workspace as its permissions say; never the rest of HOME,
 * which is an empty private folder. Where this machine has no sandbox it runs as a terminal would run it, and
 * `sandboxed: false` with `note` says so (the trust prompt shows it).
 */

export interface ServerLaunch {
  command: string
  args: string[]
  env: Record<string, string>
  cwd: string
  sandboxed: boolean
  /** Why it runs without a sandbox. */
  note?: string
  /** Folders it may read besides the system and the workspace. */
  readable: string[]
}

type StdioConfig = Extract<McpServerConfig, { kind: 'stdio' }>

const MODES: Record<McpServerConfig['permissions']['workspace'], SandboxMode> = {
  none: 'no-workspace',
  'read-only': 'read-only',
  'read-write': 'workspace-write',
}

export function serverLaunch(server: StdioConfig, workspace: string): ServerLaunch | { error: string } {
  const readable = installFolders(server, workspace)
  const support = sandboxSupport()
  const cwd = workspace
  if (!support.available) {
    // The SDK's own inheritance (HOME, PATH, USER, SHELL, TERM, LOGNAME), never the app's keys.
    const env: Record<string, string> = {}
    for (const name of ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG']) {
      const value = process.env[name]
      if (value !== undefined) env[name] = value
    }
    return {
      command: server.command,
      args: server.args,
      env: { ...env, ...server.env },
      cwd,
      sandboxed: false,
      note: `It runs without a sandbox, with your permissions: ${support.reason.replace(/, so every command asks first/, '')}`,
      readable,
    }
  }
  const launch = prepareSandbox({
    mode: MODES[server.permissions.workspace],
    workspace,
    network: server.permissions.network,
    readable,
    statusReport: false,
  })
  if ('error' in launch) return { error: `its sandbox could not be prepared: ${launch.error}` }
  const inside = server.permissions.workspace === 'none' ? SANDBOX_HOME : cwd
  const env = { ...sandboxEnv(process.env, { home: SANDBOX_HOME, tmp: SANDBOX_TMP }), ...server.env }
  if (launch.args[0] === '-p') {
    // Seatbelt: no mount namespace; HOME and TMPDIR point at the launch's private folder.
    Object.assign(env, { HOME: launch.env.HOME, TMPDIR: launch.env.TMPDIR }, server.env)
    return {
      command: launch.program,
      args: [...launch.args, server.command, ...server.args],
      env,
      cwd: server.permissions.workspace === 'none' ? (launch.env.HOME ?? cwd) : cwd,
      sandboxed: true,
      readable,
    }
  }
  // bubblewrap: the server starts in its folder inside; the launcher itself may start anywhere.
  const args = [...launch.args]
  const chdir = args.indexOf('--chdir')
  if (chdir >= 0) args[chdir + 1] = inside
  return {
    command: launch.program,
    args: [...args, server.command, ...server.args],
    env,
    cwd,
    sandboxed: true,
    readable,
  }
}

/**
 * The folders a server's own files live in: for each of its command and arguments that names an existing
 * file, the `node_modules` folder that holds it (a package needs its dependencies beside it), else the nearest
 * folder above it with a package.json, else its own folder. Never HOME or a folder above it, never the
 * workspace (its permissions decide that), never the system folders (always readable).
 */
export function installFolders(server: StdioConfig, workspace: string): string[] {
  const home = homedir()
  const out = new Set<string>()
  const candidates = [
    commandPath(server.command, workspace),
    ...server.args.map((a) => argPath(a, workspace)),
  ]
  for (const file of candidates) {
    if (file === null) continue
    const folder = installFolderOf(file)
    if (folder === null) continue
    const holdsHome = home === folder || home.startsWith(folder === sep ? folder : folder + sep)
    const isWorkspace = folder === workspace || workspace.startsWith(folder + sep)
    if (!holdsHome && !isWorkspace && folder !== dirname(folder)) out.add(folder)
  }
  return [...out]
}

function installFolderOf(file: string): string | null {
  const parts = file.split(sep)
  const nm = parts.indexOf('node_modules')
  if (nm > 0) return parts.slice(0, nm + 1).join(sep)
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
  }
  return dirname(file)
}

function commandPath(command: string, workspace: string): string | null {
  if (command.includes('/')) return argPath(command, workspace)
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue
    const candidate = join(dir, command)
    try {
      accessSync(candidate, constants.X_OK)
      return realpathSync(candidate)
    } catch {
      // not in this folder
    }
  }
  return null
}

function argPath(arg: string, workspace: string): string | null {
  if (arg.startsWith('-') || arg === '') return null
  const path = resolve(workspace, arg)
  try {
    const real = realpathSync(path)
    return statSync(real).isFile() ? real : null
  } catch {
    return null
  }
}
