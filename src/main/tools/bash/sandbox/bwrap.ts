import { lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs'
import { delimiter, dirname, isAbsolute, sep } from 'node:path'
import type { Masks } from './masks'
import { SANDBOX_HOME, SANDBOX_TMP, type SandboxSpec } from './policy'

/**
 * The bubblewrap command line for one command (Linux). An allowlist of what exists inside: the system
 * folders read-only, a fresh /proc of a private PID namespace, a minimal /dev, a private /tmp (tmpfs) holding
 * the empty HOME, the folders of PATH read-only, and the workspace: read-only, or writable with its
 * protected paths bound read-only over it. Secret paths are masked on top of everything. Every namespace is
 * new (network included, unless the user allowed it for this command), with no nested user namespaces; no
 * capability is kept; the sandbox dies with the app.
 */

/** Top-level system folders bound read-only when present (links, as on merged-/usr systems, are copied). */
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt', '/sys']

/** Credentials of the machine itself, readable by a root user, hidden even then (and the SSH host keys). */
const SYSTEM_SECRETS = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers']

function systemSecrets(): string[] {
  let hostKeys: string[] = []
  try {
    hostKeys = readdirSync('/etc/ssh')
      .filter((name) => /^ssh_host_.*_key$/.test(name))
      .map((name) => `/etc/ssh/${name}`)
  } catch {
    // No SSH server configuration: nothing to hide.
  }
  return [...SYSTEM_SECRETS.filter(exists), ...hostKeys]
}

/** With the network on, name resolution may live under /run (systemd-resolved's stub). */
const RESOLVER_DIRS = ['/run/systemd/resolve', '/run/resolvconf']

/**
 * Every namespace new, the user namespace included, and none may be made inside it: a nested user namespace
 * would give a command the capabilities to try its own mounts (the sandbox's are locked against a less
 * privileged namespace, but there is no reason to allow the attempt).
 */
export const NAMESPACES = ['--unshare-all', '--unshare-user', '--disable-userns']

/** The descriptor on which bwrap reports the child's start and exit (`--json-status-fd`). */
export const STATUS_FD = 3

export interface BwrapContext {
  /** PATH of the command's environment: its folders are bound read-only so programs are found. */
  path: string
  /** The user's HOME: never bound, even when a PATH folder is inside it or is it. */
  home: string
}

export function bwrapArgs(spec: SandboxSpec, masks: Masks, context: BwrapContext): string[] {
  const args = [...NAMESPACES, '--die-with-parent', '--cap-drop', 'ALL']
  if (spec.network) args.push('--share-net')
  for (const dir of SYSTEM) args.push(...mirror(dir))
  if (spec.network) for (const dir of RESOLVER_DIRS) if (exists(dir)) args.push('--ro-bind', dir, dir)
  for (const dir of pathFolders(context)) args.push('--ro-bind-try', dir, dir)
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', SANDBOX_TMP, '--dir', SANDBOX_HOME)
  for (const dir of spec.readable ?? []) args.push('--ro-bind-try', dir, dir)
  if (spec.mode !== 'no-workspace') {
    args.push(spec.mode === 'read-only' ? '--ro-bind' : '--bind', spec.workspace, spec.workspace)
    if (spec.mode === 'workspace-write') {
      for (const p of masks.protected) args.push('--ro-bind', p.path, p.path)
    }
    for (const p of masks.secrets) {
      if (p.kind === 'dir') args.push('--tmpfs', p.path, '--remount-ro', p.path)
      else args.push('--ro-bind', '/dev/null', p.path)
    }
  }
  for (const file of systemSecrets()) args.push('--ro-bind', '/dev/null', file)
  args.push('--chdir', spec.mode === 'no-workspace' ? SANDBOX_HOME : spec.workspace)
  if (spec.statusReport !== false) args.push('--json-status-fd', String(STATUS_FD))
  return args
}

function mirror(dir: string): string[] {
  try {
    const st = lstatSync(dir)
    if (st.isSymbolicLink()) return ['--symlink', readlinkSync(dir), dir]
    return st.isDirectory() ? ['--ro-bind', dir, dir] : []
  } catch {
    return []
  }
}

/**
 * PATH folders outside the system folders (a version manager's node, ~/.cargo/bin), by real path. Never the
 * user's HOME or a folder above it, never the root: that would bring in the very files the sandbox hides.
 */
function pathFolders({ path, home }: BwrapContext): string[] {
  const out = new Set<string>()
  for (const entry of path.split(delimiter)) {
    if (!isAbsolute(entry)) continue
    let real: string
    try {
      real = realpathSync(entry)
    } catch {
      continue
    }
    const underSystem = SYSTEM.some((dir) => real === dir || real.startsWith(dir + sep))
    const holdsHome = home !== '' && (home === real || home.startsWith(real === sep ? real : real + sep))
    if (!underSystem && !holdsHome && real !== dirname(real)) out.add(real)
  }
  return [...out]
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}
