import { promises as fsp } from 'node:fs'
import path from 'node:path'
import type fg from 'fast-glob'
import { planWalk, ripgrepCanWalk, walkWithFastGlob, walkWithRipgrep, type WalkPlan } from './glob/walk'
import { findRipgrep } from './grep/ripgrep'
import type { z } from 'zod'
import { cleanText, pathField, toolInput } from './input-fields'
import { searchTarget } from './search-target'
import { defineTool, fail, ok, type ToolResult } from './tool'
import { isInside, resolveInWorkspace, toWorkspaceRelative } from './workspace'

export const GlobInput = toolInput('Find files by name pattern.', {
  pattern: cleanText('Glob pattern for file paths, e.g. "**/*.ts" or "src/**/index.{js,ts}".'),
  path: pathField(
    'Folder to search in, relative to the workspace root. Omit for the workspace root.',
  ).optional(),
})
export type GlobInput = z.infer<typeof GlobInput>

/**
 * glob (DESIGN 2): file names matching a pattern, as fast-glob matches them; the folders are read by ripgrep
 * (`rg --files`, several times faster on a large tree) or, where it cannot, by fast-glob (see glob/walk.ts).
 *
 * Choices, and why:
 * - Dotfiles are listed (`.github/workflows/*.yml`, `.eslintrc.json` are what people look for), but `.git/`
 *   and `node_modules/` are skipped unless the pattern names them: `**\/*.ts` in a JavaScript project must
 *   give the project's files, not 30,000 files from dependencies. `.gitignore` is not applied: glob answers
 *   "which files exist", build outputs included; grep is the gitignore-aware tool.
 * - Symlinks are neither followed nor listed, and a pattern whose fixed part (`escape/**`) goes through a
 *   link leading outside is refused: fast-glob reads a pattern's base folder through links.
 * - At most MAX_RESULTS paths; the walk stops there instead of collecting a 100k-file tree. A complete list
 *   is sorted newest first (what the model most likely wants next); a truncated one is an arbitrary sample
 *   of the tree, so it is sorted by path, which shows where the matches concentrate.
 */

const MAX_RESULTS = 1000
/** fast-glob expands braces into separate patterns, synchronously: `{a,b}` seventeen times blocks for seconds. */
const MAX_BRACE_EXPANSIONS = 256
const MAX_NOTED_ERRORS = 5
/** lstat calls in flight when sorting by modification time. */
const STAT_CONCURRENCY = 64

// A `..` segment, also inside a brace list (`{..,src}/*`).
const PARENT_SEGMENT = /(?:^|[/{,])\.\.(?:$|[/},])/
const namesSegment = (pattern: string, name: string): boolean =>
  new RegExp(`(?:^|[/{,])${name.replace(/\./g, '\\.')}(?:$|[/},])`).test(pattern)

// A `..` segment in a path a walker returned.
const PARENT_IN_PATH = /(?:^|\/)\.\.(?:\/|$)/

/**
 * Real-path check for what a walk returned: `check(folder)` answers whether an absolute folder really lies
 * inside the workspace. Walkers resolve paths through whatever the disk holds at that moment (a folder swapped
 * for a symlink mid-walk); this is the last word on "inside". Used by grep too.
 *
 * Each path component below the root is lstat'ed once per checker (results share most of their parents, so
 * this costs far fewer calls than a realpath per folder); a folder reached only through real directories is
 * inside. One that passes through a symlink is judged by its real path.
 */
export function insideChecker(rootReal: string): (dir: string) => Promise<boolean> {
  const isRealDir = new Map<string, Promise<boolean>>()
  const realDir = (abs: string): Promise<boolean> => {
    let verdict = isRealDir.get(abs)
    if (verdict === undefined) {
      verdict = fsp.lstat(abs).then(
        (stats) => stats.isDirectory(),
        () => false,
      )
      isRealDir.set(abs, verdict)
    }
    return verdict
  }
  const base = rootReal.endsWith(path.sep) ? rootReal.slice(0, -1) : rootReal
  return async (dir) => {
    if (!isInside(rootReal, dir)) return false
    let prefix = base
    for (const part of dir.length > base.length ? dir.slice(base.length + 1).split(path.sep) : []) {
      prefix += path.sep + part
      if (!(await realDir(prefix))) {
        try {
          return isInside(rootReal, await fsp.realpath(dir))
        } catch {
          // Gone or unreadable: not shown.
          return false
        }
      }
    }
    return true
  }
}

/** Modification times of `entries` (relative to `cwd`); files deleted since the walk are left out. */
async function statAll(entries: string[], cwd: string, into: Map<string, number>): Promise<void> {
  for (let i = 0; i < entries.length; i += STAT_CONCURRENCY) {
    await Promise.all(
      entries.slice(i, i + STAT_CONCURRENCY).map(async (entry) => {
        try {
          into.set(entry, (await fsp.lstat(path.join(cwd, entry))).mtimeMs)
        } catch {
          // Gone: rather not list a file that no longer exists.
        }
      }),
    )
  }
}

/** How many patterns `{a,b}` alternatives and `{1..9}` ranges expand to (nested groups included). */
export function braceExpansions(pattern: string): number {
  let i = 0
  // A sequence up to the `,` or `}` that ends it: the product of its groups.
  const sequence = (): number => {
    let product = 1
    while (i < pattern.length && pattern[i] !== ',' && pattern[i] !== '}') {
      if (pattern[i] === '\\') i += 2
      else if (pattern[i] === '{') {
        i += 1
        product *= group()
      } else i += 1
    }
    return product
  }
  // After `{`: a range counts its steps, a list the sum of its alternatives; `{x}` is a literal.
  const group = (): number => {
    const range = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?\}/.exec(pattern.slice(i))
    if (range) {
      i += range[0].length
      const [from, to] = [range[1] ?? '', range[2] ?? ''].map((v) =>
        /\d/.test(v) ? Number(v) : v.charCodeAt(0),
      )
      return Math.floor(Math.abs((to ?? 0) - (from ?? 0)) / Math.max(1, Math.abs(Number(range[3] ?? 1)))) + 1
    }
    let sum = 0
    let alternatives = 0
    for (;;) {
      sum += sequence()
      alternatives += 1
      if (pattern[i] === ',') i += 1
      else if (pattern[i] === '}') {
        i += 1
        return alternatives > 1 ? sum : 1
      } else return 1
    }
  }
  let total = 1
  // At the top level a stray `,` or `}` is a literal character.
  while (i < pattern.length) {
    total *= sequence()
    i += 1
  }
  return total
}

/** A pattern fast-glob would read outside `cwd` (absolute elsewhere, `..`), refused with a reason. */
function checkPattern(
  pattern: string,
  cwd: string,
  workspace: string,
): { ok: true; pattern: string; cwd: string } | { ok: false; reason: string } {
  if (PARENT_SEGMENT.test(pattern))
    return {
      ok: false,
      reason: `Pattern ${JSON.stringify(pattern)} contains "..": patterns may not climb out of the search folder. Set \`path\` to the folder to search (inside the workspace) instead.`,
    }
  if (pattern.startsWith('/')) {
    // An absolute pattern inside the workspace is accepted and searched from the workspace root.
    if (pattern.startsWith(workspace + '/'))
      return { ok: true, pattern: pattern.slice(workspace.length + 1), cwd: workspace }
    return {
      ok: false,
      reason: `Pattern ${JSON.stringify(pattern)} is an absolute path outside the workspace. Use a pattern relative to the workspace root, e.g. "src/**/*.ts".`,
    }
  }
  return { ok: true, pattern, cwd }
}

function globTitle(input: GlobInput): string {
  const where = input.path ?? '.'
  return `Glob ${JSON.stringify(input.pattern)}${where === '.' ? '' : ` in ${where}`}`
}

export const globTool = defineTool({
  name: 'glob',
  description: [
    'Find files by name with a glob pattern (`**` matches any number of folders, `{a,b}` alternatives), e.g. "**/*.ts" or "src/**/index.{js,ts}".',
    'Returns paths relative to the workspace root, newest first.',
    `Hidden files are included; .git/ and node_modules/ are skipped unless the pattern names them. At most ${MAX_RESULTS} paths are returned.`,
  ].join(' '),
  input: GlobInput,
  concurrencySafe: true,
  title: globTitle,
  // Runs without asking: it lists names (secret files' too, as any file listing would), never contents.
  policy: () => ({ kind: 'allow' }),
  async execute(input, ctx): Promise<ToolResult> {
    const where = input.path ?? '.'
    const title = globTitle(input)
    const resolved = await searchTarget(ctx, where, title, {
      cancelled: 'Glob cancelled before it started.',
      missing: '',
      cannot: 'list',
    })
    if (!resolved.ok) return resolved.result
    if (!resolved.isDirectory)
      return fail(
        `Path ${JSON.stringify(where)} is a file, not a folder: set \`path\` to a folder or omit it.`,
        { title },
      )
    const checked = checkPattern(input.pattern, resolved.path, ctx.workspace)
    if (!checked.ok) return fail(checked.reason, { title })
    const { pattern, cwd } = checked

    const ignore: string[] = []
    if (!namesSegment(pattern, '.git')) ignore.push('**/.git/**')
    if (!namesSegment(pattern, 'node_modules')) ignore.push('**/node_modules/**')
    // The first few unreadable folders are named; the rest only counted (a tree can have thousands).
    const errors: string[] = []
    let errorCount = 0
    const options: fg.Options = {
      cwd,
      dot: true,
      onlyFiles: true,
      followSymbolicLinks: false,
      ignore,
      suppressErrors: true,
    }

    const expansions = braceExpansions(pattern)
    if (expansions > MAX_BRACE_EXPANSIONS)
      return fail(
        `Pattern ${JSON.stringify(input.pattern)} expands to ${expansions > 1e9 ? 'billions of' : expansions} alternatives (at most ${MAX_BRACE_EXPANSIONS}); use fewer {a,b} groups or ranges, or a wildcard.`,
        { title },
      )
    let tasks: fg.Task[]
    try {
      tasks = planWalk(pattern, options)
    } catch (error) {
      // fast-glob throws on patterns it cannot expand (`{1..10000000}` exceeds the brace range limit).
      return fail(`Invalid glob pattern ${JSON.stringify(input.pattern)}: ${(error as Error).message}`, {
        title,
      })
    }
    // fast-glob reads each pattern's fixed part (`escape` in `escape/**`) through symlinks: it must resolve
    // inside the workspace before anything is walked.
    for (const task of tasks) {
      if (task.base === '.' || task.base === '') continue
      const base = await resolveInWorkspace(ctx.workspace, path.resolve(cwd, task.base), 'read')
      if (!base.ok)
        return fail(`Pattern ${JSON.stringify(input.pattern)} is refused: ${base.reason}`, { title })
    }

    const found: string[] = []
    let truncated = false
    // Entries are relative to cwd; this is their folder, the same way (`''` for cwd itself).
    const folderOf = (entry: string): string => {
      const slash = entry.lastIndexOf('/')
      return slash === -1 ? '' : entry.slice(0, slash)
    }
    const plan: WalkPlan = {
      cwd,
      tasks,
      options,
      signal: ctx.signal,
      onEntry: (entry) => {
        // Anything not plainly below cwd is dropped (checked again by real path below).
        if (entry.startsWith('/') || PARENT_IN_PATH.test(entry)) return true
        if (found.length >= MAX_RESULTS) {
          truncated = true
          return false
        }
        found.push(entry)
        return true
      },
      onError: (folder, code) => {
        if (++errorCount > MAX_NOTED_ERRORS) return
        const shown = toWorkspaceRelative(ctx.workspace, folder)
        errors.push(`${shown.length > 300 ? `${shown.slice(0, 140)}…${shown.slice(-140)}` : shown}: ${code}`)
      },
    }
    const rg = ripgrepCanWalk(tasks) ? await findRipgrep() : null
    let walker: 'ripgrep' | 'fast-glob' = 'fast-glob'
    let walk = rg?.path ? await walkWithRipgrep(rg.path, plan) : ('unavailable' as const)
    if (walk === 'unavailable') {
      // Nothing of a walk that failed is kept: fast-glob walks again from the start.
      found.length = 0
      errors.length = 0
      errorCount = 0
      truncated = false
      walk = await walkWithFastGlob(pattern, plan)
    } else walker = 'ripgrep'
    if (walk === 'cancelled') return fail('Glob cancelled.', { title, metadata: { cancelled: true } })
    if (walk instanceof Error) return fail(`Glob failed: ${walk.message}`, { title })

    // Per folder, not per file: a thousand results live in a few dozen folders.
    const isInsideReally = insideChecker(ctx.workspace)
    const mtimes = new Map<string, number>()
    const inside = new Set<string>()
    await Promise.all([
      ...[...new Set(found.map(folderOf))].map(async (folder) => {
        if (await isInsideReally(folder === '' ? cwd : path.join(cwd, folder))) inside.add(folder)
      }),
      // Only a complete list is sorted by modification time (see the header).
      truncated ? Promise.resolve() : statAll(found, cwd, mtimes),
    ])
    let files = found.filter((entry) => inside.has(folderOf(entry)))
    let sort: 'mtime' | 'path' = 'path'
    if (truncated) {
      files.sort()
    } else {
      sort = 'mtime'
      files = files
        .filter((entry) => mtimes.has(entry))
        .sort((a, b) => (mtimes.get(b) as number) - (mtimes.get(a) as number) || (a < b ? -1 : a > b ? 1 : 0))
    }
    const prefix = toWorkspaceRelative(ctx.workspace, cwd)
    const relative = prefix === '.' ? files : files.map((entry) => `${prefix}/${entry}`)

    const notes: string[] = []
    if (truncated)
      notes.push(
        `[Showing the first ${MAX_RESULTS} matching files found, sorted by path; there are more. Use a more specific pattern or set \`path\` to a folder.]`,
      )
    if (errorCount > 0) {
      const listed = errors.map((e) => `  ${e}`)
      const more = errorCount - listed.length
      notes.push(
        `[Some folders could not be read:\n${listed.join('\n')}${more > 0 ? `\n  ... and ${more} more` : ''}]`,
      )
    }
    const scope = where === '.' ? '' : ` in ${where}`
    const body =
      relative.length === 0 ? `No files match ${JSON.stringify(input.pattern)}${scope}.` : relative.join('\n')
    return ok([body, ...notes].join('\n\n'), {
      title,
      metadata: {
        count: relative.length,
        truncated,
        sort,
        walker,
        ...(errorCount > 0 ? { errors: errorCount } : {}),
      },
    })
  },
})
