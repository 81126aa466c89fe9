import { promises as fs } from 'node:fs'
import path from 'node:path'
import { TimeSlices } from '../fs/time-slices'
import { findInHistory, type HistoryBudget, type PathJudge } from '../git/history'
import { configuredHooksPath } from '../git/hooks-path'
import { trackedPaths } from '../git/index-file'

/**
 * The one definition of which workspace paths are sensitive (DESIGN 2.2, 2.3, 5). Every user judges names
 * with these functions: grep (never shows a secret's lines), read_file (asks before sending a secret to the
 * model provider), write_file/edit_file (protected paths always go to review), the bash read-only rules, the
 * approval policy and the sandbox's masks. A second list anywhere else is a bug waiting to happen: the grep
 * tool once had its own and showed `.envrc` lines while read_file asked for the same file.
 *
 * Names are relative to the workspace root, `/`-separated (a `\` also splits, for names written on Windows),
 * and are judged on their text alone, without touching the disk, so the policy can decide the moment a call
 * arrives. Compared case-insensitively because macOS and Windows file systems are: `.GIT/config` is
 * `.git/config` there.
 *
 * Two levels:
 * - secret: the content is a credential. Reading it sends it to the model provider, so reads ask and grep
 *   leaves no trace of it (no line, count or note). Every secret is also protected.
 * - protected: changing it runs code or grants rights later (VCS hooks and config, editor tasks, CI, shell
 *   start-up files, agent settings). Writes always go to review, whatever the settings; reads are fine.
 */

/** Folders, at any depth, whose every file is a credential. */
export const SECRET_DIRS: readonly string[] = ['.ssh', '.gnupg', '.aws', '.azure']

/** File names, at any depth, that hold credentials (package-registry tokens, database passwords, ...). */
export const SECRET_FILES: readonly string[] = [
  '.envrc',
  '.netrc',
  '_netrc',
  '.pgpass',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.yarnrc.yml',
  '.htpasswd',
  '.s3cfg',
  '.boto',
  '.dockercfg',
  '.my.cnf',
  '.mylogin.cnf',
  '.vault-token',
  '.terraformrc',
  'terraform.tfstate',
  'terraform.tfstate.backup',
  // Cloud and registry tools' token files (`.cargo/credentials.toml`, Google's `credentials.json`, ...).
  'credentials.json',
  'credentials.toml',
  // Composer's and similar tools' registry tokens; a kubeconfig's cluster keys; Cloudflare's local secrets;
  // WordPress's database password.
  'auth.json',
  'kubeconfig',
  '.dev.vars',
  'wp-config.php',
]

/**
 * Runs of segments, at any depth, that hold credentials where the folder alone would be too broad: a project's
 * `.docker/` often holds Dockerfiles, but `.docker/config.json` holds registry logins.
 */
export const SECRET_NESTED: readonly string[] = [
  '.docker/config.json',
  '.kube/config',
  '.config/gcloud',
  '.config/gh/hosts.yml',
  '.gem/credentials',
  '.cargo/credentials',
]

/**
 * `.env`, `.env.local`, `.env-prod`, ...; SSH private keys (`id_rsa`, `id_ed25519`, any `id_<word>` without an
 * extension, so `id_rsa.pub` is not one); key and certificate-store files by extension (PuTTY's `.ppk`, Apple's
 * `.p8`); OAuth client secrets and cloud service-account keys (`client_secret_*.json`,
 * `*service-account*.json`, Firebase's `*-adminsdk-*.json`); data files named for what they hold
 * (`secrets.yml`, `.secrets`, `api_key.txt`, `access_token.json`: not code, so `src/secrets.ts` is not one).
 */
export const SECRET_FILE_PATTERN = new RegExp(
  [
    '^\\.env(?:[._-].*)?$',
    '^id_[a-z0-9]+$',
    '\\.(?:pem|key|p12|pfx|jks|keystore|tfvars|ppk|p8|kubeconfig)$',
    '^client_secret.*\\.json$',
    '(?:service[-_.]?account|adminsdk).*\\.json$',
    '^\\.?(?:secrets?|api[-_]?keys?|access[-_]?tokens?)(?:\\.(?:ya?ml|json|toml|ini|env|txt|conf|cfg|properties))?$',
  ].join('|'),
  'i',
)

/**
 * Templates meant to be committed (`.env.example`): they hold placeholders, and the model needs to see them
 * to know which settings exist. They stay protected (a hook could still read them), but are not secret.
 */
export const SECRET_TEMPLATE_PATTERN = /^\.env[._-](?:example|sample|template|dist|defaults)$/i

/**
 * Folders, at any depth, that are protected (not secret): VCS internals (hooks run code), editor and agent
 * settings that run tasks or grant permissions when a folder is opened, CI definitions that run with the
 * repository's secrets.
 */
export const PROTECTED_DIRS: readonly string[] = [
  '.git',
  '.hg',
  '.svn',
  '.vscode',
  '.idea',
  '.devcontainer',
  '.husky',
  '.github',
  '.circleci',
  '.claude',
  '.cursor',
  '.lanes',
]

/** File names, at any depth, that are protected (not secret): shell start-up files, VCS and tool config. */
export const PROTECTED_FILES: readonly string[] = [
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.zlogout',
  '.inputrc',
  '.yarnrc',
  '.gitconfig',
  '.gitmodules',
  '.gitattributes',
  '.gitlab-ci.yml',
  '.mcp.json',
]

/**
 * Names at the workspace root that make it a bare git repository once they exist together: git then reads
 * `config` (which can name programs to run, `core.fsmonitor`) on every `git status`, and `git status` runs
 * without asking. They are protected only when the root has no `.git` of its own (with one, git never looks
 * at them), see `SensitivePathRules`. Files are protected as themselves (a Rails `config/` folder is not
 * git's `config` file); folders with everything in them, since writing `refs/x` creates `refs/`.
 */
export const BARE_REPO_ROOT_FILES: readonly string[] = ['HEAD', 'config', 'packed-refs']
export const BARE_REPO_ROOT_DIRS: readonly string[] = ['objects', 'refs']

/**
 * What depends on the workspace itself, computed once when it is opened (`loadSensitivePathRules`, in the
 * background: `rulesInBackground`) and passed to every judgement of protection, never re-read per call.
 */
export interface SensitivePathRules {
  /** The root has no `.git`, so the root-level names of a bare repository are protected. */
  readonly bareRepoAtRoot: boolean
  /**
   * Git's objects hold a secret file: the repository tracks one now (a committed `.env`), or one is anywhere in
   * its history (committed and deleted later, on another branch, in a stash or a reflog, left dangling by a
   * rewrite), or its objects could not be fully read. Git prints those objects itself, which the sandbox cannot
   * mask, so git commands that print file contents (`git diff`, `git show`, `git log -p`) ask first instead of
   * running at once (validate-read-only.ts).
   */
  readonly gitTracksSecrets: boolean
  /**
   * The folder the repository's config names for its hooks (`core.hooksPath`, git/hooks-path.ts), when it is in the
   * workspace: what is in it runs like `.git/hooks`, so it is protected like them.
   */
  readonly hooksPath?: string
}

/** A workspace that has its own `.git` tracking no secret file: only the fixed lists apply. */
export const GIT_WORKSPACE_RULES: SensitivePathRules = { bareRepoAtRoot: false, gitTracksSecrets: false }
/** The strictest rules: what an unknown workspace gets (fail closed). */
export const STRICT_RULES: SensitivePathRules = { bareRepoAtRoot: true, gitTracksSecrets: true }

/**
 * The rules of the workspace at `root`. `.git` may be a folder or, in a linked worktree or submodule, a file
 * pointing elsewhere; either way git uses it and ignores the root's other names. Its index (git/index-file.ts) and
 * then its whole object store (git/history.ts) are read as bytes, never by running git on a folder Lanes does
 * not know, for a secret file tracked now or ever committed. What cannot be checked gets the strict answer.
 * `historyBudget` bounds the history check (tests make it small).
 */
export async function loadSensitivePathRules(
  root: string,
  historyBudget?: HistoryBudget,
): Promise<SensitivePathRules> {
  try {
    await fs.lstat(path.join(root, '.git'))
  } catch {
    return STRICT_RULES
  }
  const hooksPath = await configuredHooksPath(root)
  const hooks = hooksPath === null ? {} : { hooksPath }
  const tracksSecrets = { bareRepoAtRoot: false, gitTracksSecrets: true, ...hooks }
  let tracked: string[] | null
  try {
    tracked = await trackedPaths(root)
  } catch {
    return tracksSecrets
  }
  // A large repository tracks a hundred thousand files or more (about 25 ms to judge, more on a busy machine):
  // judged in slices, so the app's main process keeps answering meanwhile.
  const slices = new TimeSlices()
  for (const [i, file] of (tracked ?? []).entries()) {
    if (isSecretPath(file)) return tracksSecrets
    if (i % 1024 === 1023) await slices.tick()
  }
  const history = await findInHistory(root, SECRET_JUDGE, historyBudget)
  return history.kind === 'clean' ? { ...GIT_WORKSPACE_RULES, ...hooks } : tracksSecrets
}

/** A workspace's rules while they load (`rulesInBackground`). */
export interface LoadingPathRules extends SensitivePathRules {
  /** Resolves once the rules are loaded; never rejects. */
  ready(): Promise<void>
  /** Whether they are loaded: a caller on a latency-critical path then need not await `ready()`. */
  isReady(): boolean
}

/**
 * The rules a session judges with, loaded in the background from its start (reading a large repository's index
 * and object store takes most of a second), so that neither the session's start nor its first model request
 * waits for them. Whatever judges or runs a tool call waits for them first (`ready`): a call is never judged
 * with half-known rules. A reader that does not wait gets the strict answer until they are loaded (fail closed);
 * a load that fails gives the strict rules. `gitAlsoHoldsSecrets` is what else learns that git holds a secret
 * file (the secrets scan asks git itself), joined to the load's answer. Own properties, not a class's getters,
 * so that a copy (`{ ...rules }`) copies the answers.
 */
export function rulesInBackground(
  load: Promise<SensitivePathRules>,
  gitAlsoHoldsSecrets: () => boolean = () => false,
): LoadingPathRules {
  let loaded: SensitivePathRules | undefined
  const loading = load.then(
    (rules) => void (loaded = rules),
    () => void (loaded = STRICT_RULES),
  )
  return {
    get bareRepoAtRoot() {
      return (loaded ?? STRICT_RULES).bareRepoAtRoot
    },
    get gitTracksSecrets() {
      return (loaded ?? STRICT_RULES).gitTracksSecrets || gitAlsoHoldsSecrets()
    },
    // Unknown while loading: whatever judges a call by it waits for the load first (`ready`).
    get hooksPath() {
      return loaded?.hooksPath
    },
    ready: () => loading,
    isReady: () => loaded !== undefined,
  }
}

const lower = (names: readonly string[]): Set<string> => new Set(names.map((n) => n.toLowerCase()))
const SECRET_DIR_SET = lower(SECRET_DIRS)
const SECRET_FILE_SET = lower(SECRET_FILES)
const SECRET_NESTED_RUNS = SECRET_NESTED.map((run) => run.toLowerCase().split('/'))
const PROTECTED_DIR_SET = lower(PROTECTED_DIRS)
const PROTECTED_FILE_SET = lower(PROTECTED_FILES)
const BARE_REPO_FILE_SET = lower(BARE_REPO_ROOT_FILES)
const BARE_REPO_DIR_SET = lower(BARE_REPO_ROOT_DIRS)

/**
 * A segment as the file systems git protects against read it (git's `is_ntfs_dotgit` and `is_hfs_dotgit`): a
 * folder on Windows, or shared with it or a Mac, opens `.git` by other names. NTFS drops trailing dots and spaces
 * (`.git.`, `.git `) and reads `name:stream` as `name` (`.git::$INDEX_ALLOCATION`), and `git~1` is `.git`'s short
 * name; HFS+ ignores some invisible characters (`.g\u200cit`). So does every judgement here: a command's layer or a
 * write names a protected path by any of them.
 */
const OTHER_SPELLING = /[:~ \u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]|[^.\\/]\.+(?:[\\/]|$)/
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g

function canonicalSegment(segment: string): string {
  const name = segment
    .replace(HFS_IGNORED, '')
    .replace(/:.*$/, '')
    .replace(/(?<=[^. ])[. ]+$/, '')
  return name === 'git~1' ? '.git' : name
}

/**
 * Lower-cased segments of a relative name, each as the file systems above read it (`canonicalSegment`); `.`
 * segments and empty ones (`a//b`, a trailing `/`) dropped.
 */
export function pathSegments(relative: string): string[] {
  const segments = relative.toLowerCase().split(/[\\/]+/)
  // Most names have no other spelling: one test of the whole name, not one per segment.
  return (OTHER_SPELLING.test(relative) ? segments.map(canonicalSegment) : segments).filter(
    (s) => s !== '' && s !== '.',
  )
}

/** `run` stands in `segments` as consecutive segments. */
function containsRun(segments: readonly string[], run: readonly string[]): boolean {
  for (let i = 0; i + run.length <= segments.length; i++) {
    if (run.every((seg, j) => segments[i + j] === seg)) return true
  }
  return false
}

function isSecretSegments(segments: readonly string[]): boolean {
  const name = segments.at(-1)
  if (name === undefined) return false
  if (segments.some((s) => SECRET_DIR_SET.has(s))) return true
  if (SECRET_NESTED_RUNS.some((run) => containsRun(segments, run))) return true
  return isSecretName(name)
}

/** What the name alone makes secret (lower-cased). */
function isSecretName(name: string): boolean {
  if (SECRET_FILE_SET.has(name)) return true
  return SECRET_FILE_PATTERN.test(name) && !SECRET_TEMPLATE_PATTERN.test(name)
}

/** Under the configured hooks folder; at the root (`core.hooksPath = .`), its files (hooks by any name). */
function isInHooksPath(segments: readonly string[], hooksPath: string): boolean {
  const hooks = pathSegments(hooksPath)
  if (hooks.length === 0) return segments.length === 1
  return segments.length > hooks.length && hooks.every((s, i) => segments[i] === s)
}

/** What the name alone makes protected (lower-cased): secrets, their templates (`.env.example`), protected files. */
function isProtectedName(name: string): boolean {
  return SECRET_FILE_SET.has(name) || PROTECTED_FILE_SET.has(name) || SECRET_FILE_PATTERN.test(name)
}

/**
 * Every folder rule (SECRET_DIRS, SECRET_NESTED, PROTECTED_DIRS) matches only a segment that begins with a dot
 * (`.ssh`, `.config/gh`, `.git`), so a path with no such segment is judged by its name alone, without splitting
 * it: every entry of a large workspace is judged at each session start (its index, its history, the sandbox's
 * walk of its tree), and most have no dotted folder. Should a list ever gain a folder without a dot, every path
 * is split.
 */
const FOLDERS_BEGIN_WITH_A_DOT = [
  ...SECRET_DIR_SET,
  ...SECRET_NESTED_RUNS.map((run) => run[0] as string),
  ...PROTECTED_DIR_SET,
].every((segment) => segment.startsWith('.'))

/**
 * The name, lower-cased, of a path judged by its name alone (FOLDERS_BEGIN_WITH_A_DOT); null for any other, and
 * for a name with another spelling (`git~1`, `.git.`: `canonicalSegment`), which may name a dotted folder.
 */
function nameAlone(relative: string): string | null {
  return FOLDERS_BEGIN_WITH_A_DOT && !hasDottedSegment(relative) && !OTHER_SPELLING.test(relative)
    ? lastSegment(relative)
    : null
}

/** A segment of `relative` begins with a dot (a `.` segment too). */
function hasDottedSegment(relative: string): boolean {
  return relative.startsWith('.') || relative.includes('/.') || relative.includes('\\.')
}

/** The last segment of `relative`, lower-cased: as `pathSegments(relative).at(-1)` when no segment is `.`. */
function lastSegment(relative: string): string {
  let end = relative.length
  while (end > 0 && (relative[end - 1] === '/' || relative[end - 1] === '\\')) end--
  const start = Math.max(relative.lastIndexOf('/', end - 1), relative.lastIndexOf('\\', end - 1)) + 1
  return relative.slice(start, end).toLowerCase()
}

/** The file's content is a credential: reads ask, grep leaves no trace of it. `relative` is relative to the root. */
export function isSecretPath(relative: string): boolean {
  const name = nameAlone(relative)
  if (name !== null) return name !== '' && isSecretName(name)
  return isSecretSegments(pathSegments(relative))
}

/**
 * What of a folder's path can still change `isSecretPath` for the names below it: `*` inside a secret folder
 * (or a whole SECRET_NESTED run), otherwise its trailing segments that begin a SECRET_NESTED run (`.config`,
 * `.config/gh`), usually none. Any `folder/rest` and `other/rest` whose folders give the same answer are judged
 * alike, which lets the history walk (git/history.ts) skip a tree it already judged under an equal context.
 */
export function secretFolderContext(folder: string): string {
  const segments = pathSegments(folder)
  if (
    segments.some((s) => SECRET_DIR_SET.has(s)) ||
    SECRET_NESTED_RUNS.some((run) => containsRun(segments, run))
  )
    return '*'
  let longest = 0
  for (const run of SECRET_NESTED_RUNS) {
    for (let n = Math.min(run.length - 1, segments.length); n > longest; n--) {
      if (run.slice(0, n).every((seg, j) => segments[segments.length - n + j] === seg)) longest = n
    }
  }
  return segments.slice(segments.length - longest).join('/')
}

/** The history walk looks for secret files, by the one rule. */
const SECRET_JUDGE: PathJudge = { matches: isSecretPath, folderKey: secretFolderContext }

/**
 * Changing it needs the user's review whatever the settings (every secret is protected). `relative` is
 * relative to the workspace root; `rules` are the workspace's own (`loadSensitivePathRules`).
 */
export function isProtectedPath(relative: string, rules: SensitivePathRules): boolean {
  // A bare repository's names are judged by the first segment too, and a configured hooks folder by its own.
  const alone = rules.bareRepoAtRoot || rules.hooksPath !== undefined ? null : nameAlone(relative)
  if (alone !== null) return alone !== '' && isProtectedName(alone)
  const segments = pathSegments(relative)
  const name = segments.at(-1)
  if (name === undefined) return false
  if (isSecretSegments(segments) || isProtectedName(name)) return true
  if (segments.some((s) => PROTECTED_DIR_SET.has(s))) return true
  if (rules.hooksPath !== undefined && isInHooksPath(segments, rules.hooksPath)) return true
  if (!rules.bareRepoAtRoot) return false
  const top = segments[0] as string
  return segments.length === 1
    ? BARE_REPO_FILE_SET.has(top) || BARE_REPO_DIR_SET.has(top)
    : BARE_REPO_DIR_SET.has(top)
}
