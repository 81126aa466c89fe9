import type { Masks } from './masks'
import type { SandboxSpec } from './policy'

/**
 * The Seatbelt profile for one command (macOS, run as `sandbox-exec -p <profile> bash -c ...`). The same
 * policy as bubblewrap's, said the Seatbelt way: everything denied, then reading allowed for the system
 * folders, the PATH folders, the workspace and the private temp folder (which holds the empty HOME); writing
 * for the temp folder, and for the workspace when the command was approved; secret paths denied for reading
 * and protected paths for writing after that (in a profile, the last matching rule wins). Processes may see
 * and signal only their own sandbox. No network unless the user allowed it for this command.
 *
 * Seatbelt has no mount namespace: the paths stay where they are and HOME and TMPDIR point at the private
 * folder instead of a tmpfs. It cannot run on this Linux machine; its text is unit-tested.
 */

export interface SeatbeltContext {
  /** A fresh private folder (real path) for TMPDIR and HOME, removed after the command. */
  tmp: string
  /** Real paths of the PATH folders outside the system folders. */
  pathFolders: string[]
}

const SYSTEM_READ = [
  '/System',
  '/Library',
  '/usr',
  '/bin',
  '/sbin',
  '/opt',
  '/private/etc',
  '/private/var/db/timezone',
  '/Applications/Xcode.app',
  '/Library/Developer/CommandLineTools',
  '/dev',
]

export function seatbeltProfile(spec: SandboxSpec, masks: Masks, context: SeatbeltContext): string {
  const lines = [
    '(version 1)',
    '(deny default)',
    '(allow process-exec process-fork)',
    '(allow signal (target same-sandbox))',
    '(allow process-info* (target same-sandbox))',
    '(allow sysctl-read)',
    '(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo") (global-name "com.apple.system.notification_center") (global-name "com.apple.trustd.agent") (global-name "com.apple.SecurityServer"))',
    '(allow ipc-posix-shm-read-data ipc-posix-shm-read-metadata)',
    // Listing `/` and resolving parent folders is harmless: metadata only, never content.
    '(allow file-read-metadata)',
    `(allow file-read* ${[...SYSTEM_READ, ...context.pathFolders].map(subpath).join(' ')})`,
    `(allow file-read* file-write* ${subpath(context.tmp)} (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))`,
    ...(spec.mode !== 'no-workspace' ? [`(allow file-read* ${subpath(spec.workspace)})`] : []),
    ...(spec.readable ?? []).map((dir) => `(allow file-read* ${subpath(dir)})`),
  ]
  if (spec.mode === 'workspace-write') {
    lines.push(`(allow file-write* ${subpath(spec.workspace)})`)
    if (masks.protected.length > 0)
      lines.push(`(deny file-write* ${masks.protected.map((p) => matcher(p.path, p.kind)).join(' ')})`)
  }
  if (masks.secrets.length > 0 && spec.mode !== 'no-workspace')
    lines.push(`(deny file-read* file-write* ${masks.secrets.map((p) => matcher(p.path, p.kind)).join(' ')})`)
  if (spec.network) lines.push('(allow network* system-socket)')
  return lines.join('\n') + '\n'
}

function matcher(path: string, kind: 'file' | 'dir'): string {
  return kind === 'dir' ? subpath(path) : `(literal ${quote(path)})`
}

function subpath(path: string): string {
  return `(subpath ${quote(path)})`
}

/** A Seatbelt string literal: backslashes and double quotes escaped, nothing else is special in it. */
export function quote(path: string): string {
  return `"${path.replace(/[\\"]/g, (c) => `\\${c}`)}"`
}
