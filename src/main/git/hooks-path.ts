import { promises as fs } from 'node:fs'
import path from 'node:path'
import { findGitDir } from './git-dir'

/**
 * The folder a repository's own config names for its hooks (`core.hooksPath`: `.githooks`, `scripts/hooks`), read
 * as text like the rest of git's files (git-dir.ts): git runs what is in it on commit, checkout or push, outside any
 * sandbox, exactly as it runs `.git/hooks`. Relative to the workspace root, `/`-separated (`''`: the root itself);
 * null when none is set or it is outside the workspace. The repository's config, then its worktree's, the last
 * setting winning as in git; what the config includes from elsewhere is not followed.
 */
export async function configuredHooksPath(root: string): Promise<string | null> {
  const repo = await findGitDir(root).catch(() => null)
  if (repo === null) return null
  let value: string | null = null
  for (const file of [path.join(repo.commonDir, 'config'), path.join(repo.gitDir, 'config.worktree')]) {
    const text = await fs.readFile(file, 'utf8').catch(() => '')
    value = hooksPathIn(text) ?? value
  }
  if (value === null || value === '' || value.startsWith('~')) return null
  // A relative path is taken from the top of the worktree, where git runs hooks.
  const relative = path.relative(root, path.resolve(root, value))
  if (relative.startsWith('..') || path.isAbsolute(relative)) return null
  return relative.split(path.sep).join('/')
}

/** The last `core.hooksPath` of one config file's text, unquoted; null when it sets none. */
export function hooksPathIn(text: string): string | null {
  let section = ''
  let found: string | null = null
  for (const raw of text.split('\n')) {
    let line = raw.trim()
    // A section header, perhaps with a setting after it on the same line (`[core] hooksPath = x`).
    const header = /^\[([^\]]*)\]\s*/.exec(line)
    if (header) {
      section = (header[1] as string).trim().toLowerCase()
      line = line.slice(header[0].length)
    }
    if (section !== 'core') continue
    const entry = /^hookspath\s*=\s*(.*)$/i.exec(line)
    if (entry) found = configValue(entry[1] as string)
  }
  return found
}

/** A config value: quotes removed, `\"` and `\\` unescaped, a comment after it (`#`, `;`) left out. */
function configValue(text: string): string {
  let out = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (c === '\\' && i + 1 < text.length) {
      const next = text[++i] as string
      out += next === 't' ? '\t' : next === 'n' ? '\n' : next
    } else if (c === '"') quoted = !quoted
    else if (!quoted && (c === '#' || c === ';')) break
    else out += c
  }
  return out.trim()
}
