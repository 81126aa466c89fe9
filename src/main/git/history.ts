import { findGitDir, submoduleRepos } from './git-dir'
import { objectDirs, ObjectStore, storeSignature } from './objects'
import { GitObjectsError, OBJ_COMMIT, OBJ_TAG, OBJ_TREE, WorkBudget } from './objects-base'

/**
 * Whether a file of some kind was ever in a repository: in any commit of its object store, reachable or not.
 * A secret committed and deleted later, kept on another branch, in a stash, in a reflog entry after a
 * `git reset --hard`, or left dangling by a history rewrite, is still in git's objects, and `git log -p` or
 * `git show <commit>` print it: no sandbox mask hides what git reads from its own store.
 *
 * Every commit and tag object of the store is found (packs and loose objects alike, see objects.ts), so
 * nothing depends on refs or reflogs; each one's root tree is walked with full paths and every file name is
 * judged. Git never runs on the folder (see git-dir.ts). The answer is "unknown" when the store holds anything
 * not understood (a corrupt object, a missing tree, an unknown pack version) or when the budget runs out: the
 * caller then assumes the worst (fail closed). A partial clone is judged by what it holds: its missing blobs
 * cannot be printed (auto-run commands have no network to fetch them), and a missing tree is unknown.
 *
 * The submodules' repositories kept in the repository's folder are read too (`git diff --submodule=diff`
 * prints their files), their paths judged as they stand in the submodule.
 *
 * Not seen: a tree no commit or tag names (a ref pointing straight at a tree, the tree of an aborted commit),
 * a blob no tree names (nothing gives it a path to judge), and objects added after the workspace was opened
 * (the rules are computed once per session).
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
 * Two seconds, once per session start (and not again while the objects stay the same): 2000 commits over 2000
 * files take about 0.2 s packed and 0.5 s all loose, 10000 commits about 1.2 s packed (bench/git-history.bench.ts,
 * on a busy two-core machine); a larger history runs out, and then gets the strict answer.
 */
export const DEFAULT_HISTORY_BUDGET: HistoryBudget = { timeMs: 2000, maxObjects: 5_000_000 }

/**
 * Earlier answers by repository and budget, kept while its objects stay the same (storeSignature): reopening a
 * workspace, or continuing a session, costs a few hundred `stat`s. Unknown answers are kept too: a store that
 * was corrupt or too large for the budget stays so until its objects change, and a large repository would
 * otherwise pay the whole budget again at every session.
 */
const answers = new WeakMap<PathJudge, Map<string, { signature: string; verdict: HistoryVerdict }>>()

/** One object store to read: a repository's, or one of its submodules' (whose paths are reported under `prefix`). */
interface StoreToRead {
  readonly prefix: string
  readonly dirs: readonly string[]
  readonly hashLength: number
}

/**
 * Whether any commit in the object store of the repository at `root`, or of the submodules it keeps, holds a
 * file `judge` matches.
 */
export async function findInHistory(
  root: string,
  judge: PathJudge,
  budget: HistoryBudget = DEFAULT_HISTORY_BUDGET,
): Promise<HistoryVerdict> {
  let commonDir: string
  let stores: StoreToRead[]
  let signature: string
  try {
    const repo = await findGitDir(root)
    if (repo === null) return { kind: 'clean' }
    commonDir = repo.commonDir
    stores = [{ prefix: '', dirs: objectDirs(commonDir), hashLength: repo.hashLength }]
    for (const sub of await submoduleRepos(commonDir))
      stores.push({ prefix: `${sub.name}/`, dirs: objectDirs(sub.gitDir), hashLength: sub.hashLength })
    signature = stores.map((store) => `${store.prefix}\n${storeSignature(store.dirs)}`).join('\n')
  } catch (error) {
    return unknown(error)
  }
  const known = answers.get(judge) ?? new Map<string, { signature: string; verdict: HistoryVerdict }>()
  answers.set(judge, known)
  const key = `${commonDir}\0${budget.timeMs}\0${budget.maxObjects}`
  const earlier = known.get(key)
  if (earlier?.signature === signature) return earlier.verdict
  const verdict = await readHistory(stores, judge, budget)
  known.set(key, { signature, verdict })
  return verdict
}

/** The stores read one after the other, within one budget. */
async function readHistory(
  stores: readonly StoreToRead[],
  judge: PathJudge,
  budget: HistoryBudget,
): Promise<HistoryVerdict> {
  try {
    const work = new WorkBudget(budget.timeMs, budget.maxObjects)
    for (const { prefix, dirs, hashLength } of stores) {
      const store = await ObjectStore.open(dirs, hashLength, work)
      try {
        const found = await walkHistory(store, hashLength, judge, work)
        if (found !== null) return { kind: 'found', path: prefix + found }
      } finally {
        store.close()
      }
    }
    return { kind: 'clean' }
  } catch (error) {
    return unknown(error)
  }
}

const unknown = (error: unknown): HistoryVerdict => ({
  kind: 'unknown',
  reason: error instanceof Error ? error.message : String(error),
})

/**
 * A folder met in the walk, with what is known below it: the trees already walked there, shared by every folder
 * of the same key (`PathJudge.folderKey`); its sub-folders and judged files by name (the name's bytes as
 * latin1: no decoding, no path built, for the thousands of entries every commit repeats).
 */
interface Folder {
  readonly path: string
  readonly walked: Set<string>
  readonly folders: Map<string, Folder>
  readonly files: Map<string, boolean>
}

/** The first matching path of any commit's (or tagged tree's) tree, or null. */
async function walkHistory(
  store: ObjectStore,
  hashLength: number,
  judge: PathJudge,
  work: WorkBudget,
): Promise<string | null> {
  const walkedByKey = new Map<string, Set<string>>()
  const folderAt = (path: string): Folder => {
    const key = judge.folderKey(path)
    const walked = walkedByKey.get(key) ?? new Set<string>()
    walkedByKey.set(key, walked)
    return { path, walked, folders: new Map(), files: new Map() }
  }
  const top = folderAt('')
  const stack: Array<{ oid: Buffer; folder: Folder }> = []
  const visit = (oid: Buffer, folder: Folder): void => {
    const key = oid.toString('latin1')
    if (folder.walked.has(key)) return
    folder.walked.add(key)
    stack.push({ oid, folder })
  }
  let trees = 0
  for (const read of await store.find(new Set([OBJ_COMMIT, OBJ_TAG]))) {
    const root = rootTree(read(), hashLength)
    if (root !== null) visit(root, top)
    for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
      if (++trees % 64 === 0) await work.tick()
      const { folder } = next
      const tree = store.read(next.oid)
      if (tree.type !== OBJ_TREE) throw new GitObjectsError(`${folder.path || 'a root'} is not a tree`)
      const data = tree.data
      let at = 0
      while (at < data.length) {
        const space = data.indexOf(0x20, at)
        const nul = data.indexOf(0, space)
        if (space < 0 || nul < 0 || nul + 1 + hashLength > data.length)
          throw new GitObjectsError('a tree is cut short')
        let mode = 0
        for (let k = at; k < space; k++) mode = mode * 8 + ((data[k] as number) - 0x30)
        const oid = data.subarray(nul + 1, nul + 1 + hashLength)
        const name = data.toString('latin1', space + 1, nul)
        at = nul + 1 + hashLength
        const kind = mode & 0o170000
        // A submodule's commit (gitlink): its files live in its own repository, not in this store.
        if (kind === 0o160000) continue
        if (kind === 0o040000) {
          let sub = folder.folders.get(name)
          if (sub === undefined) {
            sub = folderAt(`${folder.path}${Buffer.from(name, 'latin1').toString('utf8')}/`)
            folder.folders.set(name, sub)
          }
          visit(oid, sub)
          continue
        }
        let matches = folder.files.get(name)
        if (matches === undefined) {
          matches = judge.matches(folder.path + Buffer.from(name, 'latin1').toString('utf8'))
          folder.files.set(name, matches)
        }
        if (matches) return folder.path + Buffer.from(name, 'latin1').toString('utf8')
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
