import { ensureUtf8Locale, NON_INTERACTIVE_ENV } from '../child-env'

/**
 * How one bash command is confined (DESIGN 2.3). Auto-run commands get `read-only`; approved ones
 * `workspace-write`, with the network only when the user switched "needs the internet" on in the review.
 * "Run outside the sandbox" is not a mode of the sandbox: the command then runs as before, unconfined.
 */
export type SandboxMode = 'read-only' | 'workspace-write' | 'no-workspace'

/**
 * A person's approval of one bash command (in the review, or earlier with "always allow"), with the review's
 * two switches, both off unless the user turned them on for this command.
 */
export interface CommandApproval {
  /** "Needs the internet": the sandbox keeps the network. */
  network: boolean
  /** "Run outside the sandbox": the command runs unconfined, as a terminal would run it. */
  outsideSandbox: boolean
  /** "Show me its changes before they land": every change it makes is held for the per-file review (issue 20). */
  hold?: boolean
}

export interface SandboxSpec {
  /** `no-workspace`: the workspace is not there at all (an MCP server the user gave no access to it). */
  mode: SandboxMode
  /** Real path of the workspace root. */
  workspace: string
  network: boolean
  /** Further folders readable inside (an MCP server's own install folder), by real path. */
  readable?: readonly string[]
  /**
   * A long-lived program that is not a bash command (an MCP server): no exit report on descriptor 3, which its
   * launcher does not open. Bash commands keep it (absent: true).
   */
  statusReport?: boolean
}

/** The environment names a sandboxed command inherits from the app: an allowlist, never a denylist. */
const INHERITED = /^(?:PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ)$/

/** Inside the sandbox: the private temp folder and the empty HOME in it (Linux: a tmpfs at /tmp). */
export const SANDBOX_TMP = '/tmp'
export const SANDBOX_HOME = '/tmp/home'

/**
 * The environment of a sandboxed command. Whatever a command prints goes to the model provider, so nothing
 * the app's own environment holds reaches it unless named here: no keys, tokens or database URLs by any
 * name. Then settings that keep tools from waiting for a person (no pager, no editor, no prompts, CI mode),
 * a dumb terminal without colour, and git with the system and global config off: a hostile repository
 * config still runs what it names, but inside the sandbox; `safe.bareRepository=explicit` keeps git from
 * treating a workspace that only looks like a bare repository as one, and `core.fsmonitor=false` from
 * starting the repository's watcher on every `git status`.
 */
export function sandboxEnv(
  base: NodeJS.ProcessEnv,
  paths: { home: string; tmp: string },
): Record<string, string> {
  // Null prototype: an environment may hold any name, `__proto__` and `constructor` included.
  const env: Record<string, string> = Object.create(null) as Record<string, string>
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && INHERITED.test(name)) env[name] = value
  }
  ensureUtf8Locale(env)
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin'
  return {
    ...env,
    ...NON_INTERACTIVE_ENV,
    HOME: paths.home,
    TMPDIR: paths.tmp,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: 'safe.bareRepository',
    GIT_CONFIG_VALUE_0: 'explicit',
    GIT_CONFIG_KEY_1: 'core.fsmonitor',
    GIT_CONFIG_VALUE_1: 'false',
  }
}
