import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { NAMESPACES } from './bwrap'

/**
 * Whether this machine has a sandbox (launch.ts starts a command in it). The check runs once (a sandboxed
 * `true`, a few milliseconds): bubblewrap may be missing, or present while the kernel refuses it the user
 * namespaces it needs. The reason is one plain sentence with how to enable it, for Settings and the review.
 */
export type SandboxSupport =
  { available: true; kind: 'bubblewrap' | 'seatbelt'; program: string } | { available: false; reason: string }

export function probeSandbox(platform: NodeJS.Platform, searchPath: string): SandboxSupport {
  if (platform === 'darwin') {
    const program = '/usr/bin/sandbox-exec'
    if (!isExecutable(program))
      return {
        available: false,
        reason: 'Commands cannot run in a sandbox: macOS’s sandbox-exec is missing.',
      }
    return { available: true, kind: 'seatbelt', program }
  }
  if (platform !== 'linux')
    return {
      available: false,
      reason:
        'Commands cannot run in a sandbox on this system yet, so every command asks first (on Windows, run Lanes inside WSL to have one).',
    }
  const program = findProgram('bwrap', searchPath)
  if (!program)
    return {
      available: false,
      reason:
        'Commands cannot run in a sandbox because bubblewrap is not installed, so every command asks first; install it (`sudo apt install bubblewrap`, or your system’s bubblewrap package) and restart Lanes.',
    }
  const probe = spawnSync(
    program,
    [...NAMESPACES, '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'],
    { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'ignore', 'pipe'] },
  )
  if (probe.status !== 0) {
    const why = (probe.stderr || probe.error?.message || `exit ${String(probe.status)}`).trim().slice(0, 300)
    return {
      available: false,
      reason: `Commands cannot run in a sandbox because bubblewrap cannot start here (${why}), so every command asks first; allow unprivileged user namespaces (\`sudo sysctl kernel.unprivileged_userns_clone=1\`, and on Ubuntu 24.04 or later \`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0\`) and restart Lanes.`,
    }
  }
  return { available: true, kind: 'bubblewrap', program }
}

let support: SandboxSupport | null = null

/** This machine's sandbox, checked on first use and remembered. */
export function sandboxSupport(): SandboxSupport {
  support ??= probeSandbox(process.platform, process.env.PATH ?? '')
  return support
}

/** The first executable `name` in the absolute folders of `searchPath` (a PATH value). */
export function findProgram(name: string, searchPath: string): string | undefined {
  return searchPath
    .split(delimiter)
    .filter((dir) => isAbsolute(dir))
    .map((dir) => join(dir, name))
    .find(isExecutable)
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}
