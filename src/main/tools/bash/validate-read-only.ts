import { posix } from 'node:path'
import { GIT_WORKSPACE_RULES, isProtectedPath, type SensitivePathRules } from '../sensitive-paths'
import { splitGit } from './validate-git'
import { clusterHas, matchesLong, shortCluster } from './validate-options'
import { searchOperands } from './validate-paths'
import { own } from '../../../shared/own'

/**
 * The read-only allowlist: commands the approval policy runs without asking. Called only for a command that
 * already passed validation (so no dangerous flag, no path outside the workspace), and deliberately small:
 * the program name must match exactly (case included), and every rule answers false when unsure. Naming a
 * protected path (`.env`, `.git/config`, keys: the same list read_file asks about) is never read-only, and
 * neither is a recursive search from the workspace root with GNU grep, which would read those too.
 */

type ReadOnlyRule = (args: readonly string[]) => boolean

const ANY: ReadOnlyRule = () => true
const FLAGS_ONLY: ReadOnlyRule = (args) => args.every((arg) => arg.startsWith('-'))

/** Version queries: exactly one argument, one of these. */
const VERSION_QUERIES: Record<string, readonly string[]> = {
  node: ['--version', '-v'],
  python: ['--version', '-V'],
  python3: ['--version', '-V'],
  npm: ['--version', '-v'],
  pnpm: ['--version', '-v'],
  yarn: ['--version', '-v'],
  bun: ['--version', '-v'],
  deno: ['--version', '-V'],
  git: ['--version'],
  tsc: ['--version', '-v'],
  go: ['version'],
  rustc: ['--version', '-V'],
  cargo: ['--version', '-V'],
  java: ['-version', '--version'],
  ruby: ['--version'],
  perl: ['--version', '-v'],
  php: ['--version', '-v'],
  gcc: ['--version'],
  'g++': ['--version'],
  clang: ['--version'],
  make: ['--version'],
  cmake: ['--version'],
  pip: ['--version', '-V'],
  pip3: ['--version', '-V'],
  rg: ['--version', '-V'],
}

const RULES: Record<string, ReadOnlyRule> = {
  ls: ANY,
  pwd: FLAGS_ONLY,
  cat: ANY,
  head: ANY,
  // `tail -f` never ends: not harmful, but not something to start without asking.
  tail: (args) =>
    !args.some((arg) => matchesLong(arg, ['--follow', '--retry']) !== null || clusterHas(arg, 'fF')),
  wc: ANY,
  // `file -C` compiles a magic file, i.e. writes one.
  file: (args) => !args.some((arg) => matchesLong(arg, ['--compile']) !== null || clusterHas(arg, 'C')),
  stat: ANY,
  du: ANY,
  df: ANY,
  which: ANY,
  echo: ANY,
  date: ANY,
  whoami: (args) => args.length === 0,
  uname: FLAGS_ONLY,
  // `tree -o file` writes its output to a file.
  tree: (args) => !args.some((arg) => clusterHas(arg, 'o')),
  grep: (args) => {
    if (!grepRecurses(args)) return true
    // A recursive search reads the whole tree below its operands: only a named sub-folder is read-only.
    const operands = searchOperands('grep', args) ?? []
    return operands.length > 0 && !operands.some(isWorkspaceRoot)
  },
  // rg skips hidden and ignored files (`.env`, `.git`) unless told otherwise: `--hidden`, `-u`, the
  // `--no-ignore*` family, and globs (`-g '.e*'` selects hidden files too) make it read the whole tree.
  // `--search-zip` runs decompression programs; `--pre` is refused by validation already.
  rg: (args) =>
    !args.some(
      (arg) =>
        matchesLong(arg, RG_WHOLE_TREE) !== null || arg.startsWith('--no-ignore') || clusterHas(arg, 'zu.g'),
    ),
  find: ANY,
  npm: (args) => {
    const [sub, ...rest] = args
    return (
      sub !== undefined &&
      NPM_READ_ONLY.has(sub) &&
      !rest.includes('fix') &&
      !rest.some((arg) => arg.startsWith('--fix'))
    )
  },
  pnpm: (args) => args[0] !== undefined && ['ls', 'list', 'why', 'outdated'].includes(args[0]),
}

const NPM_READ_ONLY = new Set([
  'ls',
  'list',
  'la',
  'll',
  'view',
  'info',
  'show',
  'v',
  'outdated',
  'root',
  'prefix',
  'explain',
  'why',
  'audit',
])

/**
 * `rules`: the workspace's sensitive-path rules (what the session computed when it opened it); the default is a
 * repository that tracks no secret file.
 */
export function isReadOnly(
  program: string,
  args: readonly string[],
  rules: SensitivePathRules = GIT_WORKSPACE_RULES,
): boolean {
  // Reading a bare repository's root names (`HEAD`, `config`) is harmless: only writing them is, so the
  // workspace's own rules are not needed here and the validator stays free of the file system.
  if (args.some((arg) => arg.split(/[=:]/).some((piece) => isProtectedPath(piece, GIT_WORKSPACE_RULES))))
    return false
  const versions = own(VERSION_QUERIES, program)
  if (versions !== undefined && args.length === 1 && versions.includes(args[0] as string)) return true
  if (program === 'git') return isReadOnlyGit(args, rules)
  const rule = own(RULES, program)
  return rule !== undefined && rule(args)
}

/** `.`, `./`, `src/..`: the workspace root however it is spelled. */
function isWorkspaceRoot(path: string): boolean {
  return posix.normalize(path).replace(/\/+$/, '') === '.' || posix.normalize(path) === '/'
}

const RG_WHOLE_TREE = [
  '--search-zip',
  '--pre-glob',
  '--hidden',
  '--no-ignore',
  '--unrestricted',
  '--glob',
  '--iglob',
  '--glob-case-insensitive',
  '--follow',
]

/**
 * Every way GNU grep is told to recurse: `-r`, `-R` (also in a cluster, `-rn`), `--recursive`,
 * `--dereference-recursive` (and their abbreviations), and `-d`/`--directories` with `recurse` glued, after
 * `=` or in the next argument.
 */
function grepRecurses(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--') return false
    if (matchesLong(arg, ['--recursive', '--dereference-recursive']) !== null) return true
    if (matchesLong(arg, ['--directories']) !== null) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[i + 1]
      if (value === undefined || 'recurse'.startsWith(value)) return true
      continue
    }
    const cluster = shortCluster(arg)
    if (cluster === null) continue
    for (let j = 0; j < cluster.length; j++) {
      const letter = cluster[j] as string
      if (letter === 'r' || letter === 'R') return true
      if (!GREP_VALUE_LETTERS.includes(letter)) continue
      if (letter === 'd') {
        const value = j + 1 < cluster.length ? cluster.slice(j + 1) : args[i + 1]
        if (value === undefined || 'recurse'.startsWith(value)) return true
      }
      break // the rest of the cluster, or the next argument, is this option's value
    }
  }
  return false
}

/** grep's short options that take a value. */
const GREP_VALUE_LETTERS = 'efmABCdD'

const GIT_READ_ONLY = new Set(['status', 'diff', 'log', 'show', 'rev-parse', 'branch', 'ls-files', 'blame'])

/**
 * What prints the content of files from git's objects (patches): in a repository whose objects hold a secret
 * file (tracked now, or anywhere in its history), no sandbox mask hides it, so these ask first there. `git diff
 * <rev>` and `git show <rev>[:<path>]` print any of them; `git log` prints content only with a patch (or
 * line-range) option, or `--check` (the offending lines) and `--binary` (implies a patch); `-S`/`-G` search the
 * contents, which tells what is in them too; `git status -v` prints the staged patch. `git blame` prints only
 * the file it names (in any revision), which the path check already judges.
 */
const GIT_PRINTS_CONTENT = new Set(['diff', 'show'])
const GIT_LOG_CONTENT_LONG = [
  '--patch',
  '--patch-with-raw',
  '--patch-with-stat',
  '--unified',
  '--word-diff',
  '--word-diff-regex',
  '--color-words',
  '--cc',
  '--dd',
  '--diff-merges',
  '--remerge-diff',
  '--full-diff',
  '--textconv',
  '--pickaxe-regex',
  '--pickaxe-all',
  '--find-object',
  '--check',
  '--binary',
]
const GIT_LOG_CONTENT_SHORT = 'puUcmLSG'

function gitPrintsContent(subcommand: string, args: readonly string[]): boolean {
  if (GIT_PRINTS_CONTENT.has(subcommand)) return true
  if (subcommand === 'status')
    return args.some((arg) => matchesLong(arg, ['--verbose']) !== null || clusterHas(arg, 'v'))
  if (subcommand !== 'log') return false
  return args.some(
    (arg) =>
      matchesLong(arg, GIT_LOG_CONTENT_LONG) !== null ||
      (!arg.startsWith('--') && clusterHas(arg, GIT_LOG_CONTENT_SHORT)),
  )
}

function isReadOnlyGit(allArgs: readonly string[], rules: SensitivePathRules): boolean {
  const split = splitGit(allArgs)
  if ('error' in split) return false
  // `-C`, `--git-dir` etc. could point git at another repository, with its own config (pagers, fsmonitor).
  if (
    !split.globals.every(
      (option) => option === '--no-pager' || option === '-P' || option === '--no-optional-locks',
    )
  )
    return false
  const { subcommand, args } = split
  if (subcommand === null || !GIT_READ_ONLY.has(subcommand)) return false
  if (rules.gitTracksSecrets && gitPrintsContent(subcommand, args)) return false
  // `--output` writes a file; `--ext-diff` runs the configured external diff program.
  if (args.some((arg) => matchesLong(arg, ['--output', '--ext-diff']) !== null)) return false
  return subcommand === 'branch' ? isBranchListing(args) : true
}

const BRANCH_FLAGS = [
  '--all',
  '--remotes',
  '--verbose',
  '--list',
  '--show-current',
  '--ignore-case',
  '--color',
  '--no-color',
  '--column',
  '--no-column',
  '--abbrev',
  '--no-abbrev',
  '--quiet',
  '--omit-empty',
]
const BRANCH_VALUE_OPTIONS = [
  '--merged',
  '--no-merged',
  '--contains',
  '--no-contains',
  '--points-at',
  '--sort',
  '--format',
]

/** `git branch` lists branches only with listing options; a positional names a branch to create unless --list. */
function isBranchListing(args: readonly string[]): boolean {
  const listMode = args.some((arg) => arg === '--list' || clusterHas(arg, 'l'))
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg.startsWith('--')) {
      const name = arg.split('=')[0] as string
      if (BRANCH_VALUE_OPTIONS.includes(name)) {
        if (!arg.includes('=')) i++
        continue
      }
      if (!BRANCH_FLAGS.includes(name)) return false
      continue
    }
    const cluster = shortCluster(arg)
    if (cluster !== null) {
      if (![...cluster].every((letter) => 'arvlqi'.includes(letter))) return false
      continue
    }
    if (!listMode) return false
  }
  return true
}
