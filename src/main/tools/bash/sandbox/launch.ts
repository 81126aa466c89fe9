import { mkdtempSync, realpathSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { delimiter, isAbsolute, join, sep } from 'node:path'
import { bwrapArgs, STATUS_FD } from './bwrap'
import { workspaceSecrets } from '../../../secrets/workspace-secrets'
import type { Masks } from './masks'
import { SANDBOX_HOME, SANDBOX_TMP, sandboxEnv, type SandboxSpec } from './policy'
import { seatbeltProfile } from './seatbelt'
import { sandboxSupport, type SandboxSupport } from './support'

export { findProgram, probeSandbox, sandboxSupport, type SandboxSupport } from './support'

/** How to start one command: `program ...args bash -c <command>`, in `env`, then `cleanup()`. */
export interface SandboxLaunch {
  program: string
  args: string[]
  env: Record<string, string>
  /** The descriptor on which the sandbox reports the command's start and exit, if it does. */
  statusFd: number | null
  /** Marks the last report on it (bubblewrap's exit code). */
  statusEnd?: string
  /**
   * bubblewrap's PID namespace ends with it: when it exits, every process of the command is gone (its
   * namespace's init dies with bubblewrap, and the kernel kills the rest). Seatbelt has no such namespace.
   */
  endsTree: boolean
  cleanup(): Promise<void>
  /**
   * Secret or protected paths that exist now and did not when the command started, relative to the
   * workspace. The sandbox pins the protected paths that exist; one the command creates (a new `.envrc`, a
   * first `.vscode/tasks.json`) it cannot stop without leaving empty files behind, so it is reported.
   */
  createdSensitive(): Promise<string[]>
}

/**
 * The launch of one command in the sandbox, or the reason it cannot be had (no sandbox on this machine, a
 * workspace too large to check). Never a launch without the sandbox: the caller reports the reason.
 */
export function prepareSandbox(
  spec: SandboxSpec,
  base: NodeJS.ProcessEnv = process.env,
): SandboxLaunch | { error: string } {
  const found = sandboxSupport()
  if (!found.available) return { error: found.reason }
  // The workspace's one record of its secrets: walked in the background since the session opened it, so this is
  // a revalidation (a `stat` per folder), and it knows every other name of a secret file (hard links).
  const secrets = workspaceSecrets(spec.workspace)
  let masks: Masks
  try {
    masks = secrets.masks()
  } catch (err) {
    return maskFailure(err)
  }
  return launchWith(spec, base, found, masks)
}

/**
 * As `prepareSandbox`, for a command about to start: the masks come from the workspace's watched index, which
 * reads again only the folders that changed since (MaskIndex.fresh) instead of a `stat` per folder.
 */
export async function prepareCommandSandbox(
  spec: SandboxSpec,
  base: NodeJS.ProcessEnv = process.env,
): Promise<SandboxLaunch | { error: string }> {
  const found = sandboxSupport()
  if (!found.available) return { error: found.reason }
  let masks: Masks
  try {
    masks = await workspaceSecrets(spec.workspace).freshMasks()
  } catch (err) {
    return maskFailure(err)
  }
  return launchWith(spec, base, found, masks)
}

function maskFailure(err: unknown): { error: string } {
  return { error: `the sandbox could not check the workspace for secret files: ${message(err)}` }
}

function launchWith(
  spec: SandboxSpec,
  base: NodeJS.ProcessEnv,
  found: SandboxSupport & { available: true },
  masks: Masks,
): SandboxLaunch | { error: string } {
  const secrets = workspaceSecrets(spec.workspace)
  const path = base.PATH ?? ''
  const before = new Set([...masks.secrets, ...masks.protected].map((p) => p.path))
  const createdSensitive = async (): Promise<string[]> => {
    try {
      const now = await secrets.freshMasks()
      return [...now.secrets, ...now.protected]
        .map((p) => p.path)
        .filter((p) => !before.has(p))
        .map((p) => p.slice(spec.workspace.length + 1))
    } catch {
      return []
    }
  }
  if (found.kind === 'bubblewrap') {
    return {
      program: found.program,
      args: [...bwrapArgs(spec, masks, { path, home: homedir() }), '--'],
      env: sandboxEnv(base, { home: SANDBOX_HOME, tmp: SANDBOX_TMP }),
      statusFd: spec.statusReport === false ? null : STATUS_FD,
      ...(spec.statusReport === false ? {} : { statusEnd: '"exit-code"' }),
      endsTree: true,
      cleanup: async () => {},
      createdSensitive,
    }
  }
  let tmp: string
  try {
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'lanes-sandbox-')))
  } catch (err) {
    return { error: `the sandbox's private temp folder could not be made: ${message(err)}` }
  }
  const pathFolders = path
    .split(delimiter)
    .filter((dir) => isAbsolute(dir) && !(homedir() + sep).startsWith(dir.endsWith(sep) ? dir : dir + sep))
  return {
    program: found.program,
    args: ['-p', seatbeltProfile(spec, masks, { tmp, pathFolders })],
    env: sandboxEnv(base, { home: tmp, tmp }),
    statusFd: null,
    endsTree: false,
    cleanup: () => rm(tmp, { recursive: true, force: true }),
    createdSensitive,
  }
}

/**
 * bubblewrap reports the command's exit on its status descriptor; a launcher that ended on its own without
 * that report never started the command (a mount it could not make, namespaces refused), and what it printed
 * (its last lines of `output`) says why. A run that was stopped or timed out is not a start failure.
 */
export function sandboxStartFailure(
  launch: SandboxLaunch,
  run: { pid: number | null; exitCode: number | null; timedOut: boolean; aborted: boolean; status?: string },
  output: string,
): string | null {
  if (launch.statusFd === null || run.pid === null || run.timedOut || run.aborted) return null
  if (run.status !== undefined && /"exit-code"\s*:/.test(run.status)) return null
  const said = output.trim().split('\n').slice(-3).join(' ').slice(0, 500)
  return said || `${launch.program} exited with ${run.exitCode ?? 'no status'}`
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
