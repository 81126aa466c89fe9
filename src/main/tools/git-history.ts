import { findGitDir } from './git-dir'
import { objectDirs, ObjectStore, storeSignature } from './git-objects'
import { GitObjectsError, OBJ_COMMIT, OBJ_TAG, OBJ_TREE, WorkBudget } from './git-pack'

/**
 * Whether a file of some kind was ever in a repository: in any commit of its object store, reachable or not.
 * A secret committed and deleted later, kept on another branch, in a stash, in a reflog entry after a
 * `git reset --hard`, or left dangling by a history rewrite, is still in git's objects, and `git log -p` or
 * `git show <commit>` print it: no sandbox mask hides what git reads from its own store.
 *
 * Every commit and tag object of the store is found (packs and loose objects alike, see git-objects.ts), so
 * nothing depends on refs or reflogs; each one's root tree is walked with full paths and every file name is
 * judged. Git never runs on the folder (see git-dir.ts). The answer is "unknown" when the store holds anything
 * not understood (a corrupt object, a missing tree, an unknown pack version) or when the budget runs out: the
 * caller then assumes the worst (fail closed).
 */

/** What is looked for, and what of a folder's path still matters to it. */
export interface PathJudge {
  /** The file at this repository-relative path (`/`-separated) is one of those looked for. */
  matches(path: string): boolean
  /**
   * Two folders with the same key judge every name below them alike, so a tree met again under an equal key
   * need not be walked again (a commit usually shares all but a few of its trees with the one before).
   */
  folderKey(folder: string): string
}

export type HistoryVerdict =
  { kind: 'clean' } | { kind: 'found'; path: string } | { kind: 'unknown'; reason: string }

export interface HistoryBudget {
  readonly timeMs: number
  readonly maxObjects: number
}

/**
 * About a second and a half: a repository of 2000 commits takes a few tens of milliseconds, one with a hundred
 * thousand commits or a store of several gigabytes runs out, and then gets the strict answer.
 */
export const DEFAULT_HISTORY_BUDGET: HistoryBudget = { timeMs: 1500, maxObjects: 5_000_000 }

/**
 * Earlier answers by repository, kept while its objects stay the same (storeSignature): reopening a workspace,
 * or continuing a session, costs a few hundred `stat`s. Unknown answers are not kept: a budget that ran out under
 * load may suffice next time.
 */
const answers = new WeakMap<PathJudge, Map<string, { signature: string; verdict: HistoryVerdict }>>()

/** Whether any commit in the object store of the repository at `root` holds a file `judge` matches. */
export async function findInHistory(
  root: string,
  judge: PathJudge,
  budget: HistoryBudget = DEFAULT_HISTORY_BUDGET,
): Promise<HistoryVerdict> {
  try {
    const repo = await findGitDir(root)
    if (repo === null) return { kind: 'clean' }
    const dirs = objectDirs(repo.commonDir)
    const signature = storeSignature(dirs)
    const known = answers.get(judge) ?? new Map<string, { signature: string; verdict: HistoryVerdict }>()
    answers.set(judge, known)
    const earlier = known.get(repo.commonDir)
    if (earlier?.signature === signature) return earlier.verdict
    const work = new WorkBudget(budget.timeMs, budget.maxObjects)
    const store = await ObjectStore.open(dirs, repo.hashLength, work)
    let found: string | null
    try {
      found = await walkHistory(store, repo.hashLength, judge, work)
    } finally {
      store.close()
    }
    const verdict: HistoryVerdict = found === null ? { kind: 'clean' } : { kind: 'found', path: found }
    known.set(repo.commonDir, { signature, verdict })
    return verdict
  } catch (error) {
    return { kind: 'unknown', reason: error instanceof Error ? error.message : String(error) }
  }
}

/** The first matching path of any commit's (or tagged tree's) tree, or null. */
async function walkHistory(
  store: ObjectStore,
  hashLength: number,
  judge: PathJudge,
  work: WorkBudget,
): Promise<string | null> {
  const walked = new Set<string>()
  for (const read of await store.find(new Set([OBJ_COMMIT, OBJ_TAG]))) {
    const root = rootTree(read(), hashLength)
    if (root === null) continue
    const stack: Array<{ oid: Buffer; folder: string }> = [{ oid: root, folder: '' }]
    for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
      const key = `${next.oid.toString('hex')}:${judge.folderKey(next.folder)}`
      if (walked.has(key)) continue
      walked.add(key)
      if (walked.size % 64 === 0) await work.tick()
      const tree = store.read(next.oid)
      if (tree.type !== OBJ_TREE) throw new GitObjectsError(`${next.folder || 'a root'} is not a tree`)
      const data = tree.data
      let at = 0
      while (at < data.length) {
        const space = data.indexOf(0x20, at)
        const nul = data.indexOf(0, space)
        if (space < 0 || nul < 0 || nul + 1 + hashLength > data.length)
          throw new GitObjectsError('a tree is cut short')
        const mode = parseInt(data.toString('latin1', at, space), 8)
        const name = data.toString('utf8', space + 1, nul)
        const oid = data.subarray(nul + 1, nul + 1 + hashLength)
        at = nul + 1 + hashLength
        const kind = mode & 0o170000
        // A submodule's commit (gitlink): its files live in its own repository, not in this store.
        if (kind === 0o160000) continue
        if (kind === 0o040000) stack.push({ oid, folder: `${next.folder}${name}/` })
        else if (judge.matches(next.folder + name)) return next.folder + name
      }
    }
  }
  return null
}

/**
 * The tree a commit names (its first line, `tree <hex>`), or the one a tag points at directly (the Linux
 * kernel has such a tag); null for a tag of anything else (a tag of a commit: the commit is walked itself).
 */
function rootTree(object: { type: number; data: Buffer }, hashLength: number): Buffer | null {
  const hex = hashLength * 2
  const text = object.data.toString('latin1', 0, Math.min(object.data.length, 2 * hex + 32))
  const match =
    object.type === OBJ_COMMIT
      ? new RegExp(`^tree ([0-9a-f]{${hex}})\\n`).exec(text)
      : new RegExp(`^object ([0-9a-f]{${hex}})\\ntype tree\\n`).exec(text)
  if (match) return Buffer.from(match[1] as string, 'hex')
  if (object.type === OBJ_COMMIT) throw new GitObjectsError('a commit without its tree')
  return null
}
