import fs from 'node:fs'
import { constants as osConstants } from 'node:os'
import path from 'node:path'
import type { Readable } from 'node:stream'
import fg from 'fast-glob'
import picomatch from 'picomatch'
import { runRipgrepProcess } from '../grep/ripgrep'

/**
 * glob's two walkers. Both list the files of a walk that fast-glob planned (`fg.generateTasks`), and both decide
 * what matches with fast-glob's own rule: its tasks' patterns compiled by picomatch (what fast-glob's micromatch
 * compiles them with) under the options fast-glob passes, a file kept when a positive pattern matches it and no
 * negative one does. What differs is who reads the folders:
 *
 * - ripgrep (`rg --files`), several threads in native code, its output streamed: the full walk of a 100k-file
 *   tree in a fraction of fast-glob's time. It is given only what keeps the answer the same: every file
 *   (`--no-ignore`: no .gitignore, .ignore or global excludes; `--hidden`), no symlink followed (its default), the
 *   folders the ignore list would empty anyway pruned, and, when the patterns' last segments are plain names and
 *   stars, those as globs (a superset of the matches: ripgrep matches a slash-less glob against the name at any
 *   depth). Names come NUL-separated, so a newline in a name is only a character.
 * - fast-glob itself, for what ripgrep cannot take (a static pattern, which fast-glob answers with a stat) and when
 *   no ripgrep binary can run.
 */

export interface WalkPlan {
  /** The folder the patterns are relative to; entries are relative to it too. */
  cwd: string
  tasks: fg.Task[]
  /** The options fast-glob is run with (cwd, dot, ignore, ...). */
  options: fg.Options
  signal: AbortSignal
  /** A file found (relative to cwd); false stops the walk (the cap is reached). */
  onEntry(entry: string): boolean
  /** A folder that could not be read, as an absolute path, and why (an errno code where known). */
  onError(folder: string, code: string): void
}

export type WalkOutcome = 'done' | 'cancelled' | Error

/** The picomatch options fast-glob derives from its settings (fast-glob/out/providers/provider.js). */
function matchOptions(options: fg.Options): picomatch.PicomatchOptions {
  return {
    dot: options.dot ?? false,
    matchBase: options.baseNameMatch ?? false,
    nobrace: !(options.braceExpansion ?? true),
    nocase: !(options.caseSensitiveMatch ?? true),
    noext: !(options.extglob ?? true),
    noglobstar: !(options.globstar ?? true),
    posix: true,
    strictSlashes: false,
  }
}

/**
 * fast-glob's entry filter for files (fast-glob/out/providers/filters/entry.js): a positive pattern of any task
 * matches and no negative one does (negatives are compiled with `dot: true`, as there). Absolute negatives never
 * occur here: the ignore list is relative and an absolute pattern was made relative before planning.
 */
export function fileMatcher(tasks: fg.Task[], options: fg.Options): (entry: string) => boolean {
  const opts = matchOptions(options)
  const positive = [...new Set(tasks.flatMap((t) => t.positive))].map((p) => picomatch.makeRe(p, opts))
  const negative = [...new Set(tasks.flatMap((t) => t.negative))].map((p) =>
    picomatch.makeRe(p, { ...opts, dot: true }),
  )
  return (entry) => positive.some((re) => re.test(entry)) && !negative.some((re) => re.test(entry))
}

// Characters that mean something in a glob of either dialect; a last segment without them (stars aside) is
// matched alike by both. `?` is left out on purpose: picomatch counts UTF-16 units, ripgrep code points. So is
// white space: ripgrep reads its globs as .gitignore lines, whose trailing spaces do not count.
const SPECIAL = /[?[\]{}()!+@,\\^$|'"\s]/

/**
 * ripgrep globs that pass at least every file the patterns match: their last segments, when each is plain names
 * and stars. None (every file listed) when any last segment is `**` or uses other syntax.
 */
export function narrowingGlobs(tasks: fg.Task[]): string[] {
  const globs = new Set<string>()
  for (const pattern of tasks.flatMap((t) => t.positive)) {
    const last = pattern.slice(pattern.lastIndexOf('/') + 1)
    if (last === '' || last.includes('**') || SPECIAL.test(last) || last.startsWith('#')) return []
    globs.add(last)
  }
  return [...globs]
}

/**
 * How deep below its base folder a walk needs to read, as fast-glob reads it: patterns without `**` match at a fixed
 * depth, and fast-glob reads no folder below it (so meets no unreadable folder there either). Counting every `/`
 * (also one inside `[...]` or `@(...)`) can only make the limit deeper than needed, never too shallow.
 */
function maxDepth(tasks: fg.Task[]): number | undefined {
  let deepest = 0
  for (const task of tasks) {
    const baseDepth = task.base === '.' || task.base === '' ? 0 : task.base.split('/').length
    for (const pattern of task.positive) {
      if (pattern.includes('**')) return undefined
      deepest = Math.max(deepest, pattern.split('/').length - baseDepth)
    }
  }
  return deepest
}

/** Ripgrep's arguments for a walk of `bases` (the tasks' base folders that are folders). */
export function ripgrepFilesArgs(tasks: fg.Task[], ignore: readonly string[], bases: string[]): string[] {
  const args = ['--files', '--no-config', '--hidden', '--no-ignore', '--null', '--color', 'never']
  const depth = maxDepth(tasks)
  if (depth !== undefined) args.push('--max-depth', String(Math.max(1, depth)))
  for (const glob of narrowingGlobs(tasks)) args.push('--glob', glob)
  // Folders whose every file the ignore list drops (`**/.git/**` empties every folder named .git), pruned: fewer
  // folders read, nothing the matcher would keep. Last, so that they win over the globs above (ripgrep: the last
  // matching glob decides).
  for (const pattern of ignore) {
    const folder = /^\*\*\/([^/*?[\]{}()!+@,\\]+)\/\*\*$/.exec(pattern)?.[1]
    if (folder !== undefined) args.push('--glob', `!${folder}/`)
  }
  return [...args, '--', ...bases]
}

/** Whether ripgrep can take this walk: every task is a dynamic one (a static pattern is a stat for fast-glob). */
export function ripgrepCanWalk(tasks: fg.Task[]): boolean {
  return tasks.length > 0 && tasks.every((t) => t.dynamic)
}

const ERRNO_NAMES = new Map(Object.entries(osConstants.errno).map(([name, n]) => [n, name]))

/**
 * The walk through `rg --files`. 'unavailable' when ripgrep could not run as planned (it did not start, or failed
 * without naming a folder it could not read): the caller walks again with fast-glob, having kept nothing.
 */
export async function walkWithRipgrep(rgPath: string, plan: WalkPlan): Promise<WalkOutcome | 'unavailable'> {
  // fast-glob reads each base folder (through a link, as ripgrep does with a path it is given): one that is not a
  // folder is an error (ENOTDIR), one that is gone is nothing. ripgrep would list a file given as a path instead.
  const bases: string[] = []
  for (const base of new Set(plan.tasks.map((t) => (t.base === '' ? '.' : t.base)))) {
    if (base === '.') {
      bases.push(base)
      continue
    }
    const abs = path.resolve(plan.cwd, base)
    try {
      if ((await fs.promises.stat(abs)).isDirectory()) bases.push(base)
      else plan.onError(abs, 'ENOTDIR')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message
      if (code !== 'ENOENT') plan.onError(abs, code)
    }
  }
  if (bases.length === 0) return 'done'
  // ripgrep prints each file as the path it was given joined with the rest: `./a.ts` for `.`, where fast-glob says
  // `a.ts`; `./src/a.ts` for a base `./src`, as fast-glob does. Matching is on the path without a leading `./`.
  const fromDot = bases.length === 1 && bases[0] === '.'
  return runRipgrepFiles(
    rgPath,
    plan,
    ripgrepFilesArgs(plan.tasks, plan.options.ignore ?? [], bases),
    fromDot,
  )
}

async function runRipgrepFiles(
  rgPath: string,
  plan: WalkPlan,
  args: string[],
  fromDot: boolean,
): Promise<WalkOutcome | 'unavailable'> {
  if (plan.signal.aborted) return 'cancelled'
  const matches = fileMatcher(plan.tasks, plan.options)
  let stderrPending = ''
  // A line of ripgrep's other than "this path could not be read": the walk is not to be trusted.
  let otherError = false
  // Bases may nest (`{src/**/*.ts,src/x/*.md}`): a file is listed once.
  const seen = plan.tasks.length > 1 ? new Set<string>() : null
  // ripgrep names each folder or file it could not read, `rg: <path>: <reason> (os error N)`, and goes on.
  const stderrLine = (line: string): void => {
    if (line.trim() === '') return
    const perPath = /^rg: (.*): [^:]*\(os error (\d+)\)$/.exec(line)
    if (perPath === null) {
      otherError = true
      return
    }
    const name = ERRNO_NAMES.get(Number(perPath[2])) ?? `os error ${perPath[2]}`
    // Gone since it was listed: not an error (fast-glob's walk ignores these too).
    if (name !== 'ENOENT') plan.onError(path.resolve(plan.cwd, perPath[1] ?? ''), name)
  }
  const exit = await runRipgrepProcess(rgPath, args, {
    cwd: plan.cwd,
    signal: plan.signal,
    separator: 0,
    onRecord: (data, start, end) => {
      let entry = data.toString('utf8', start, end)
      const bare = entry.startsWith('./') ? entry.slice(2) : entry
      if (fromDot) entry = bare
      if (!matches(bare)) return true
      if (seen !== null) {
        if (seen.has(entry)) return true
        seen.add(entry)
      }
      return plan.onEntry(entry)
    },
    onStderr: (chunk) => {
      const lines = (stderrPending + chunk).split('\n')
      stderrPending = lines.pop() ?? ''
      lines.forEach(stderrLine)
    },
    unterminatedLast: false,
  })
  if (exit.kind !== 'exited') return exit.kind
  stderrLine(stderrPending)
  if (exit.stopped || exit.code === 0 || exit.code === 1) return 'done'
  // Exit 2 with only per-path problems: the rest was listed. Anything else is not a walk to trust.
  return exit.code === 2 && !otherError ? 'done' : 'unavailable'
}

/**
 * fast-glob groups patterns by their fixed part in a plain object, so a fixed part named like a member of every
 * object (`constructor/**`, `__proto__/*`) throws or is lost. Spelled `./constructor` it is no such name; the
 * `./` is taken off again from what fast-glob plans and lists.
 */
const dotted = (pattern: string): string => (pattern.startsWith('./') ? pattern : `./${pattern}`)
const undotted = (path: string): string => (path.startsWith('./') ? path.slice(2) : path)

/** fast-glob's plan of a walk (`fg.generateTasks`), for a fixed part of any name. */
export function planWalk(pattern: string, options: fg.Options): fg.Task[] {
  return fg.generateTasks(dotted(pattern), options).map((task) => ({
    ...task,
    base: undotted(task.base),
    positive: task.positive.map(undotted),
    patterns: task.patterns.map(undotted),
  }))
}

type ReaddirCallback = (error: NodeJS.ErrnoException | null, entries: fs.Dirent[]) => void

/** The walk through fast-glob's own stream. */
export function walkWithFastGlob(pattern: string, plan: WalkPlan): Promise<WalkOutcome> {
  const options: fg.Options = {
    ...plan.options,
    // Errors are recorded by this readdir and the walk goes on: one unreadable folder must not hide every other
    // result (fast-glob would otherwise abort the whole walk).
    suppressErrors: true,
    fs: {
      // fast-glob calls readdir(dir, { withFileTypes: true }, callback) when it needs no stats, as here.
      readdir: ((dir: string, readdirOptions: { withFileTypes: true }, callback: ReaddirCallback) =>
        fs.readdir(dir, readdirOptions, (error, entries) => {
          if (error && error.code !== 'ENOENT')
            plan.onError(path.resolve(plan.cwd, dir), error.code ?? error.message)
          callback(error, entries)
        })) as typeof fs.readdir,
    },
  }
  return new Promise<WalkOutcome>((resolve) => {
    // The signal may have fired during the caller's awaits, when no listener was there yet.
    if (plan.signal.aborted) return resolve('cancelled')
    let stream: Readable
    try {
      // Typed as the older NodeJS.ReadableStream; it is a stream.Readable (merge2).
      stream = fg.stream(dotted(pattern), options) as Readable
    } catch (error) {
      return resolve(error as Error)
    }
    let finished = false
    const finish = (outcome: WalkOutcome): void => {
      if (finished) return
      finished = true
      plan.signal.removeEventListener('abort', onAbort)
      stream.destroy()
      resolve(outcome)
    }
    const onAbort = (): void => finish('cancelled')
    plan.signal.addEventListener('abort', onAbort, { once: true })
    stream.on('data', (entry: string) => {
      if (!finished && !plan.onEntry(undotted(entry))) finish('done')
    })
    stream.once('error', (error: Error) => finish(error))
    stream.once('end', () => finish('done'))
  })
}
