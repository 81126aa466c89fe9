import { isProtectedPath, isSecretPath, pathSegments, type SensitivePathRules } from '../../sensitive-paths'

/**
 * Which of a command's changes are held back instead of landing silently (issue 20): anything protected by the
 * one list (sensitive-paths.ts: secrets, shell and editor configuration, CI definitions, `.gitmodules`, ...)
 * and, inside any `.git` folder, everything but the data git writes as it works. The rule for `.git` is an
 * allowlist, not a list of dangerous names: what git reads as configuration or runs (`config`,
 * `config.worktree`, `commondir`, `hooks/`, `info/`, anything under `modules/` or `worktrees/`, a rebase's
 * todo list with its `exec` lines, names git adds tomorrow) is held whatever it is called, and so is `.git`
 * itself made, removed or replaced. An approved `git commit` or `git fetch` lands: objects, refs, logs,
 * the index and the heads are data.
 */
const GIT_DATA = new Set(
  [
    'objects',
    'refs',
    'logs',
    'index',
    'HEAD',
    'ORIG_HEAD',
    'FETCH_HEAD',
    'MERGE_HEAD',
    'MERGE_MSG',
    'MERGE_MODE',
    'AUTO_MERGE',
    'CHERRY_PICK_HEAD',
    'REVERT_HEAD',
    'COMMIT_EDITMSG',
    'packed-refs',
    'shallow',
    'description',
    'gc.log',
    'gc.pid',
    'BISECT_LOG',
    'BISECT_START',
    'BISECT_TERMS',
    'BISECT_EXPECTED_REV',
    'BISECT_ANCESTORS_OK',
    'BISECT_NAMES',
  ].map((n) => n.toLowerCase()),
)

/** What makes a folder a repository for git: changing one's kind (moving `.git` away) sends git looking above. */
const REPOSITORY = new Set(['head', 'objects', 'refs'])

type Kind = 'file' | 'link' | 'dir' | null

/**
 * Why a change at `rel` is held, or null when it may land. `kinds`: what was there and what the change leaves, when
 * known. Git makes no link among its data, and writes through one it finds there (the message of every commit to
 * COMMIT_EDITMSG, each reflog line appended to logs/, FETCH_HEAD), to wherever the link leads: so a link inside
 * `.git` is held whatever its name.
 */
export function heldReason(
  rel: string,
  rules: SensitivePathRules,
  kinds?: { before: Kind; after: Kind },
): string | null {
  // Judged as sensitive-paths.ts reads names: `.GIT`, `.git.` and `git~1` are `.git` where git may look.
  const segments = pathSegments(rel)
  const git = segments.indexOf('.git')
  if (git >= 0) {
    const inside = segments[git + 1]
    if (inside === undefined) return 'a git folder made, removed or replaced'
    // A split index's shared part and a lock git leaves behind are data too.
    const data =
      GIT_DATA.has(inside) ||
      inside.startsWith('sharedindex.') ||
      (segments.length === git + 2 && inside.endsWith('.lock'))
    if (!data) return 'git reads it as configuration or runs it'
    if (kinds?.after === 'link') return 'a link inside .git: git writes through it, wherever it leads'
    if (kinds && kinds.before !== kinds.after && segments.length === git + 2 && REPOSITORY.has(inside))
      return 'git would no longer find its repository here'
    // A secret or protected name further down (a `.env` inside refs/) is held all the same.
    const rest = segments.slice(git + 2).join('/')
    if (rest !== '' && isSecretPath(rest)) return 'a secret file'
    return null
  }
  if (isSecretPath(rel)) return 'a secret file'
  if (isProtectedPath(rel, rules)) return 'a protected file (it can run code or hold secrets)'
  return null
}
