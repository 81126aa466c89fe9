import { ALLOW, clusterHas, deny, matchesLong, shortCluster, type Verdict } from './validate-options'
import { own } from '../../../shared/own'

/**
 * git policy. git is allowed (to human approval), but many of its corners run other programs: `-c` can set
 * an alias to `!shell`, core.pager, core.sshCommand or core.fsmonitor; unknown subcommands are aliases or
 * `git-*` programs from PATH; `rebase --exec`, `submodule foreach`, `bisect run`, `difftool`, `filter-branch`
 * run commands by design; transport options (`--upload-pack`, `--receive-pack`, `ext::` URLs) name programs
 * to execute. Only built-in subcommands are accepted, with those options refused. Long options are matched as
 * git's parse-options reads them: any unambiguous abbreviation counts.
 */

const CONFIG_REASON =
  'git `-c` / `--config-env` set configuration for the call, which can make git run any program (aliases with `!`, core.pager, core.sshCommand); run git without them'

/** Global options that take a value in the next argument (when not written `--opt=value`). */
const GLOBAL_WITH_VALUE = ['-C', '--git-dir', '--work-tree', '--namespace', '--attr-source', '--list-cmds']
const GLOBAL_FLAGS = [
  '-p',
  '--paginate',
  '-P',
  '--no-pager',
  '--bare',
  '--no-replace-objects',
  '--no-lazy-fetch',
  '--no-optional-locks',
  '--no-advice',
  '--literal-pathspecs',
  '--glob-pathspecs',
  '--noglob-pathspecs',
  '--icase-pathspecs',
  '--version',
  '-v',
  '--help',
  '-h',
  '--html-path',
  '--man-path',
  '--info-path',
]

/** Built-in subcommands accepted (subject to the option rules below). */
const SUBCOMMANDS = new Set([
  'add',
  'am',
  'annotate',
  'apply',
  'archive',
  'backfill',
  'bisect',
  'blame',
  'branch',
  'bugreport',
  'bundle',
  'cat-file',
  'check-attr',
  'check-ignore',
  'check-mailmap',
  'check-ref-format',
  'checkout',
  'checkout-index',
  'cherry',
  'cherry-pick',
  'clean',
  'clone',
  'commit',
  'commit-graph',
  'commit-tree',
  'count-objects',
  'describe',
  'diagnose',
  'diff',
  'diff-files',
  'diff-index',
  'diff-tree',
  'fetch',
  'for-each-ref',
  'format-patch',
  'fsck',
  'gc',
  'grep',
  'hash-object',
  'index-pack',
  'init',
  'interpret-trailers',
  'log',
  'ls-files',
  'ls-remote',
  'ls-tree',
  'mailinfo',
  'mailsplit',
  'merge',
  'merge-base',
  'merge-file',
  'merge-tree',
  'mktag',
  'mktree',
  'mv',
  'name-rev',
  'notes',
  'pack-objects',
  'pack-refs',
  'patch-id',
  'prune',
  'prune-packed',
  'pull',
  'push',
  'range-diff',
  'read-tree',
  'rebase',
  'reflog',
  'refs',
  'remote',
  'repack',
  'replace',
  'replay',
  'request-pull',
  'rerere',
  'reset',
  'restore',
  'rev-list',
  'rev-parse',
  'revert',
  'rm',
  'shortlog',
  'show',
  'show-branch',
  'show-index',
  'show-ref',
  'sparse-checkout',
  'stage',
  'stash',
  'status',
  'stripspace',
  'submodule',
  'switch',
  'symbolic-ref',
  'tag',
  'unpack-objects',
  'update-index',
  'update-ref',
  'var',
  'verify-commit',
  'verify-pack',
  'verify-tag',
  'version',
  'whatchanged',
  'worktree',
  'write-tree',
])

/** Subcommands refused with a specific reason (the rest of the unknown ones get a generic one). */
const DENIED_SUBCOMMANDS: Record<string, string> = {
  config:
    '`git config` changes configuration that can make later git commands run programs; ask the user to change it',
  'filter-branch': '`git filter-branch` runs shell filters and rewrites history; ask the user to run it',
  difftool: '`git difftool` launches external programs; use `git diff`',
  mergetool: '`git mergetool` launches external programs; resolve conflicts with edit_file',
  help: '`git help` opens a pager or a browser; use `git <command> -h` for a usage summary',
  maintenance: '`git maintenance` registers scheduled jobs on the system; ask the user to run it',
  hook: '`git hook run` runs hook programs directly; ask the user to run it',
  'send-email': '`git send-email` sends mail and can run configured programs; ask the user to run it',
  instaweb: '`git instaweb` starts a web server and a browser; ask the user to run it',
  daemon: '`git daemon` starts a server; ask the user to run it',
  credential: '`git credential` reads stored credentials; it is not allowed',
  'credential-store': '`git credential-store` reads stored credentials; it is not allowed',
  'credential-cache': '`git credential-cache` reads stored credentials; it is not allowed',
  'for-each-repo': '`git for-each-repo` runs git commands across other repositories; it is not allowed',
  'merge-index': '`git merge-index` runs a merge program given on the command line; it is not allowed',
  'upload-pack': 'git transport plumbing is not allowed; use fetch, pull or push',
  'receive-pack': 'git transport plumbing is not allowed; use fetch, pull or push',
  'upload-archive': 'git transport plumbing is not allowed; use `git archive`',
  shell: '`git shell` is a login shell; it is not allowed',
}

const MERGE_STRATEGIES = new Set(['ort', 'recursive', 'resolve', 'octopus', 'ours', 'subtree'])

/** `<transport>::<address>` makes git run the remote helper `git-remote-<transport>` (e.g. `ext::sh -c ...`). */
const REMOTE_HELPER = /^[A-Za-z][A-Za-z0-9+.-]*::/

export interface GitCommand {
  /** Global options before the subcommand, as written. */
  globals: string[]
  subcommand: string | null
  args: string[]
}

/** Splits `git [global options] <subcommand> [args]`; null when a global option is not recognised. */
export function splitGit(args: readonly string[]): GitCommand | { error: string } {
  const globals: string[] = []
  let i = 0
  for (; i < args.length; i++) {
    const arg = args[i] as string
    if (!arg.startsWith('-')) break
    if (arg.startsWith('-c') || arg.startsWith('--config-env')) return { error: CONFIG_REASON }
    if (arg.startsWith('--exec-path'))
      return { error: 'git `--exec-path` chooses where git finds the programs it runs; run git without it' }
    globals.push(arg)
    if (GLOBAL_FLAGS.includes(arg)) continue
    const withValue = GLOBAL_WITH_VALUE.find((option) => arg === option || arg.startsWith(`${option}=`))
    if (withValue === undefined)
      return { error: `git option \`${arg}\` is not allowed before the subcommand` }
    if (arg === withValue) {
      const value = args[++i]
      if (value === undefined) return { error: `git \`${arg}\` needs a value` }
      globals.push(value)
    }
  }
  return { globals, subcommand: args[i] ?? null, args: args.slice(i + 1) }
}

export function checkGit(allArgs: readonly string[]): Verdict {
  const split = splitGit(allArgs)
  if ('error' in split) return deny(split.error)
  const { subcommand, args } = split
  if (subcommand === null) return ALLOW
  const denied = own(DENIED_SUBCOMMANDS, subcommand)
  if (denied !== undefined) return deny(denied)
  if (!SUBCOMMANDS.has(subcommand))
    return deny(
      `\`git ${subcommand}\` is not a built-in git command the checker knows (aliases and git-* programs can run anything); use a built-in git command`,
    )
  for (const arg of args) {
    if (REMOTE_HELPER.test(arg))
      return deny(
        'git remote-helper URLs (`transport::address`) run programs; use a plain URL or a configured remote',
      )
  }
  const has = (options: readonly string[]): string | null => {
    for (const arg of args) {
      const hit = matchesLong(arg, options)
      if (hit !== null) return hit
    }
    return null
  }
  const hasShort = (letters: string): boolean => args.some((arg) => clusterHas(arg, letters))
  const positional = args.filter((arg) => !arg.startsWith('-'))

  switch (subcommand) {
    case 'rebase': {
      if (has(['--exec']) !== null || hasShort('x'))
        return deny('`git rebase --exec` runs a shell command after each commit; run the commands separately')
      if (has(['--interactive']) !== null || hasShort('i'))
        return deny(
          '`git rebase -i` opens an editor, and there is no terminal input here; ask the user to run it',
        )
      return checkStrategy(args, true)
    }
    case 'merge':
    case 'pull':
      if (subcommand === 'pull' && has(['--upload-pack']) !== null)
        return deny(transportReason('--upload-pack'))
      return checkStrategy(args, true)
    case 'cherry-pick':
    case 'revert':
      return checkStrategy(args, false)
    case 'submodule':
      if (positional[0] === 'foreach')
        return deny(
          '`git submodule foreach` runs a shell command in each submodule; run the commands separately',
        )
      return ALLOW
    case 'bisect':
      if (positional[0] === 'run')
        return deny(
          '`git bisect run` runs a command at each step; run `git bisect good|bad` yourself instead',
        )
      return ALLOW
    case 'clone':
      if (has(['--upload-pack']) !== null || hasShort('u')) return deny(transportReason('--upload-pack'))
      if (has(['--template']) !== null)
        return deny('`git clone --template` installs hooks from a folder, which then run; clone without it')
      if (has(['--config']) !== null || hasShort('c')) return deny(CONFIG_REASON)
      return ALLOW
    case 'init':
      if (has(['--template']) !== null)
        return deny('`git init --template` installs hooks from a folder, which then run; init without it')
      return ALLOW
    case 'fetch':
      if (has(['--upload-pack']) !== null) return deny(transportReason('--upload-pack'))
      return ALLOW
    case 'ls-remote':
      if (has(['--upload-pack']) !== null || hasShort('u')) return deny(transportReason('--upload-pack'))
      return ALLOW
    case 'push':
      if (has(['--receive-pack', '--exec']) !== null) return deny(transportReason('--receive-pack'))
      return ALLOW
    case 'archive':
      if (has(['--remote', '--exec']) !== null)
        return deny(
          '`git archive --remote/--exec` contacts a remote and names a program to run; archive locally',
        )
      return ALLOW
    case 'grep':
      if (has(['--open-files-in-pager']) !== null || hasShort('O'))
        return deny('`git grep -O` opens the results in a program; use `git grep` alone or the grep tool')
      return ALLOW
    case 'clean':
      if (has(['--dry-run']) !== null || hasShort('n')) return ALLOW
      return deny(
        '`git clean` deletes untracked files permanently; use `git clean -n` to list them, and ask the user to delete them',
      )
    case 'reset':
      if (has(['--hard']) !== null)
        return deny(
          '`git reset --hard` discards uncommitted changes permanently; ask the user, or use `git stash` to keep them',
        )
      return ALLOW
    default:
      return ALLOW
  }
}

function transportReason(option: string): string {
  return `git \`${option}\` names a program to run on the other side of the connection; run it without that option`
}

/** `-s`/`--strategy` makes git run `git-merge-<strategy>` from PATH: only the built-in strategies are accepted. */
function checkStrategy(args: readonly string[], shortS: boolean): Verdict {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    let value: string | undefined
    if (matchesLong(arg, ['--strategy']) !== null && !arg.startsWith('--strategy-')) {
      value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[i + 1]
    } else if (shortS) {
      const cluster = shortCluster(arg)
      const at = cluster?.indexOf('s') ?? -1
      if (cluster !== null && at !== -1) value = cluster.slice(at + 1) || args[i + 1]
    }
    if (value !== undefined && !MERGE_STRATEGIES.has(value))
      return deny(
        `git merge strategy \`${value}\` is not a built-in one (others are programs from PATH); use ort, recursive, resolve, octopus, ours or subtree`,
      )
  }
  return ALLOW
}
