import { promises as fs } from 'node:fs'
import path from 'node:path'

/**
 * Where a workspace's git repository keeps its files, found by reading them as text: Lanes never runs git on a
 * folder to learn about it (a downloaded folder's `.git/config` can make git run programs, core.fsmonitor).
 * Shared by the index reader (index-file.ts) and the object-store reader (history.ts).
 */

export class GitDirError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'GitDirError'
  }
}

export interface GitDir {
  /** The repository's own folder: `.git`, or the one a `.git` file names (a linked worktree, a submodule). */
  readonly gitDir: string
  /**
   * The folder holding what worktrees share (objects, refs, config): `gitDir` itself, or the one its
   * `commondir` file names in a linked worktree.
   */
  readonly commonDir: string
  /** Object ids are 20 bytes (SHA-1), or 32 in a SHA-256 repository. */
  readonly hashLength: 20 | 32
}

/** The repository of the workspace at `root`; null when it has no `.git`. Throws when `.git` makes no sense. */
export async function findGitDir(root: string): Promise<GitDir | null> {
  const gitDir = await gitDirOf(root)
  if (gitDir === null) return null
  let commonDir = gitDir
  try {
    const common = (await fs.readFile(path.join(gitDir, 'commondir'), 'utf8')).trim()
    if (common !== '') commonDir = path.resolve(gitDir, common)
  } catch {
    // Not a linked worktree: it shares nothing.
  }
  return { gitDir, commonDir, hashLength: await objectHashLength(commonDir) }
}

/** A repository kept inside another's folder: a submodule's, at `<common folder>/modules/<name>`. */
export interface SubmoduleRepo {
  /** Its name (which may hold `/`); a nested submodule's is prefixed with its parent's. */
  readonly name: string
  readonly gitDir: string
  readonly hashLength: 20 | 32
}

/** Git nests submodules' repositories this deep and this many at most, as far as Lanes follows them. */
const MAX_SUBMODULE_DEPTH = 8
const MAX_SUBMODULES = 64

/**
 * The submodules' repositories a repository keeps in its common folder (`modules/<name>`, and theirs in
 * `modules/<name>/modules/`): git commands run in the workspace print their objects too (`git diff
 * --submodule=diff`). More than MAX_SUBMODULES, or nested deeper than MAX_SUBMODULE_DEPTH, throws GitDirError.
 */
export async function submoduleRepos(commonDir: string): Promise<SubmoduleRepo[]> {
  const found: SubmoduleRepo[] = []
  const visit = async (dir: string, prefix: string, depth: number): Promise<void> => {
    let entries
    try {
      entries = await fs.readdir(dir, { withFileTypes: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    for (const entry of entries) {
      if (!entry.isDirectory()) continue
      if (depth >= MAX_SUBMODULE_DEPTH || found.length >= MAX_SUBMODULES)
        throw new GitDirError('more submodules than Lanes reads')
      const sub = path.join(dir, entry.name)
      const name = `${prefix}${entry.name}`
      const inside = await fs.readdir(sub).catch(() => [] as string[])
      if (inside.includes('HEAD') && inside.includes('objects')) {
        found.push({ name, gitDir: sub, hashLength: await objectHashLength(sub) })
        await visit(path.join(sub, 'modules'), `${name}/`, depth + 1)
      } else {
        // A name with `/` in it: `modules/lib/json` for the submodule `lib/json`.
        await visit(sub, `${name}/`, depth + 1)
      }
    }
  }
  await visit(path.join(commonDir, 'modules'), '', 0)
  return found
}

/** `.git` as a folder, or as a file naming the folder (a linked worktree, a submodule); null without either. */
async function gitDirOf(root: string): Promise<string | null> {
  const dotGit = path.join(root, '.git')
  let info
  try {
    info = await fs.lstat(dotGit)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  if (info.isDirectory()) return dotGit
  if (!info.isFile()) throw new GitDirError('.git is neither a folder nor a file')
  const text = (await fs.readFile(dotGit, 'utf8')).slice(0, 4096)
  const match = /^gitdir:\s*(.+?)\s*$/m.exec(text)
  if (!match) throw new GitDirError('.git is a file without a gitdir line')
  return path.resolve(root, match[1] as string)
}

/**
 * 20 bytes (SHA-1), or 32 in a SHA-256 repository: `extensions.objectFormat = sha256` in the shared config.
 * Only that key is looked for, in the text; the config is never given to git.
 */
async function objectHashLength(commonDir: string): Promise<20 | 32> {
  const config = await fs.readFile(path.join(commonDir, 'config'), 'utf8').catch(() => '')
  return /^\s*objectformat\s*=\s*sha256\s*$/im.test(config) ? 32 : 20
}
