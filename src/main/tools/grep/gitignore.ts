import { promises as fs } from 'node:fs'
import path from 'node:path'

/** Globs and .gitignore files in ripgrep's syntax, for the built-in search. */

/**
 * A glob in ripgrep/gitignore syntax as a RegExp over `/`-separated relative paths. A glob without a
 * slash matches the file name at any depth (`*.ts`), one with a slash is anchored (`src/**\/*.ts`).
 */
export function globToRegExp(glob: string): RegExp | null {
  let text = glob
  if (text.startsWith('/')) text = text.slice(1)
  else if (!text.slice(0, -1).includes('/')) text = `**/${text}`
  if (text.endsWith('/')) text = text.slice(0, -1)
  let out = ''
  let braceDepth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (c === '*') {
      const double = text[i + 1] === '*'
      const atStart = i === 0 || text[i - 1] === '/'
      const after = text[i + (double ? 2 : 1)]
      if (double && atStart && (after === '/' || after === undefined)) {
        if (after === '/') {
          out += '(?:.*/)?'
          i += 2
        } else {
          out += '.*'
          i += 1
        }
      } else {
        out += '[^/]*'
        if (double) i += 1
      }
    } else if (c === '?') {
      out += '[^/]'
    } else if (c === '[') {
      const end = text.indexOf(']', i + 2)
      if (end === -1) return null
      let body = text.slice(i + 1, end)
      const negated = body.startsWith('!') || body.startsWith('^')
      if (negated) body = body.slice(1)
      out += `[${negated ? '^/' : ''}${body.replace(/\\/g, '\\\\').replace(/\]/g, '\\]')}]`
      i = end
    } else if (c === '{') {
      braceDepth += 1
      out += '(?:'
    } else if (c === '}' && braceDepth > 0) {
      braceDepth -= 1
      out += ')'
    } else if (c === ',' && braceDepth > 0) {
      out += '|'
    } else if (c === '\\' && i + 1 < text.length) {
      out += (text[i + 1] as string).replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')
      i += 1
    } else {
      out += c.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')
    }
  }
  if (braceDepth !== 0) return null
  try {
    return new RegExp(`^${out}$`)
  } catch {
    return null
  }
}

interface IgnoreRule {
  regex: RegExp
  negate: boolean
  dirOnly: boolean
}

export interface IgnoreFile {
  /** Absolute folder holding the .gitignore; its rules match paths relative to it. */
  base: string
  rules: IgnoreRule[]
}

function parseGitignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = []
  for (const raw of text.split(/\r?\n/)) {
    // Trailing spaces are dropped unless escaped; `#` starts a comment, `\#` is a literal.
    let line = raw.replace(/(?<!\\)\s+$/, '')
    if (line === '' || line.startsWith('#')) continue
    let negate = false
    if (line.startsWith('!')) {
      negate = true
      line = line.slice(1)
    } else if (line.startsWith('\\!') || line.startsWith('\\#')) {
      line = line.slice(1)
    }
    const dirOnly = line.endsWith('/')
    // A slash anywhere but at the end anchors the rule to the .gitignore's folder.
    const anchored = line.slice(0, -1).includes('/') || line.startsWith('/')
    const glob = anchored && !line.startsWith('/') ? `/${line}` : line
    // Gitignore has no braces: escape them so globToRegExp reads them literally.
    const regex = globToRegExp(glob.replace(/[{},]/g, '\\$&'))
    if (regex) rules.push({ regex, negate, dirOnly })
  }
  return rules
}

export function isIgnored(ignores: IgnoreFile[], abs: string, isDir: boolean): boolean {
  let ignored = false
  // Later (deeper) files and later rules win, as in git.
  for (const file of ignores) {
    const relative = path.relative(file.base, abs).split(path.sep).join('/')
    if (relative === '' || relative === '..' || relative.startsWith('../')) continue
    for (const rule of file.rules) {
      if (rule.dirOnly && !isDir) continue
      if (rule.regex.test(relative)) ignored = !rule.negate
    }
  }
  return ignored
}

export async function readIgnoreFile(dir: string): Promise<IgnoreFile | null> {
  try {
    const text = await fs.readFile(path.join(dir, '.gitignore'), 'utf8')
    return { base: dir, rules: parseGitignore(text) }
  } catch {
    return null
  }
}
