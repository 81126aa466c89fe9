import { statSync } from 'node:fs'
import path from 'node:path'
import { workspaceSecrets } from '../secrets/workspace-secrets'
import { insideChecker } from './glob'
import { runBuiltinSearch } from './grep/builtin-search'
import { findRipgrep, runRipgrep } from './grep/ripgrep'
import {
  Collector,
  COUNT_LIMIT,
  MAX_SHOWN_LINES,
  type EngineOutcome,
  type FileProblem,
  type SearchPlan,
} from './grep/search'
import { z } from 'zod'
import { cleanText, pathField, toolInput } from './input-fields'
import { searchTarget } from './search-target'
import { defineTool, fail, ok, type ToolResult } from './tool'
import { toWorkspaceRelative } from './workspace'

export const GrepInput = toolInput(
  'Search file contents with a regular expression; returns matching lines with their line numbers.',
  {
    pattern: cleanText(
      'Regular expression to search for (ripgrep/Rust syntax).',
      'must not contain raw control or invisible characters; write them as regex escapes (\\t, \\n, \\x{202E})',
    ),
    path: pathField(
      'File or folder to search in, relative to the workspace root. Omit to search the whole workspace.',
    ).optional(),
    include: cleanText(
      'Only search files whose path matches this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}".',
    ).optional(),
    case_insensitive: z.boolean().optional().describe('Match regardless of letter case. Default false.'),
  },
)
export type GrepInput = z.infer<typeof GrepInput>

/**
 * grep (DESIGN 2): ripgrep when its binary is there, otherwise a slower built-in search with a warning.
 *
 * Choices, and why:
 * - Hidden files are searched (`.github/`, `.eslintrc`, ...: config the model must see) except `.git/`
 *   internals, which are noise. `.gitignore` is respected even outside a git repository (`--no-require-git`):
 *   a folder that has one expects it to apply.
 * - Files that hold credentials (`isSecretPath`: `.env*`, keys, `.ssh/`, `.aws/`, ..., and any other name of
 *   such a file: a hard link) leave no trace: grep runs without approval, while reading those files asks the
 *   user, so their lines are neither shown, counted nor mentioned (see Collector). Lanes' own data is skipped
 *   alike where it lies inside the workspace.
 * - The model sees at most MAX_SHOWN_LINES lines; matching lines are still counted up to COUNT_LIMIT so the
 *   note can say how big the result really is, then ripgrep is killed: a pattern like `e` in a large repo
 *   must not stream millions of lines through us.
 * - `--engine auto`: ripgrep switches to PCRE2 when the pattern needs look-around or backreferences, which
 *   models write often; plain patterns keep the fast default engine.
 */

const MAX_NOTED_PROBLEMS = 5

/** `<path>: <reason>`, where a path of several KB is cut in the middle so the reason stays readable. */
function fileError(file: string, reason: string): string {
  const shown = file.length <= 300 ? file : `${file.slice(0, 140)}…${file.slice(-140)}`
  return `${shown}: ${reason}`
}

// Not toLocaleString: it builds an Intl formatter on every call, which costs more than the whole result.
function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}

function grepTitle(input: GrepInput): string {
  const where = input.path ?? '.'
  return `Search ${JSON.stringify(input.pattern)}${where === '.' ? '' : ` in ${where}`}${input.include ? ` (${input.include})` : ''}`
}

export const grepTool = defineTool({
  name: 'grep',
  description: [
    'Search file contents with a regular expression (ripgrep, Rust regex syntax; look-around and backreferences work too).',
    'Returns matching lines as `path:line:text`, paths relative to the workspace root.',
    `.gitignore is respected, hidden files are searched except .git/, binary files are skipped. At most ${MAX_SHOWN_LINES} lines are returned: narrow a broad search with \`path\`, \`include\` (e.g. "*.ts") or a more specific pattern.`,
  ].join(' '),
  input: GrepInput,
  concurrencySafe: true,
  title: grepTitle,
  // Runs without asking: secret files leave no trace in the search itself (`Collector`).
  policy: () => ({ kind: 'allow' }),
  async execute(input, ctx): Promise<ToolResult> {
    const where = input.path ?? '.'
    const title = grepTitle(input)
    const resolved = await searchTarget(ctx, where, title, {
      cancelled: 'Search cancelled before it started.',
      missing: ' Use the glob tool to find the right path.',
      cannot: 'search',
    })
    if (!resolved.ok) return resolved.result
    const { isDirectory } = resolved
    const secrets = workspaceSecrets(ctx.workspace)
    await secrets.ready()
    const plan: SearchPlan = {
      pattern: input.pattern,
      include: input.include,
      caseInsensitive: input.case_insensitive === true,
      cwd: isDirectory ? resolved.path : path.dirname(resolved.path),
      target: isDirectory ? '.' : path.basename(resolved.path),
      workspace: ctx.workspace,
      signal: ctx.signal,
      redactor: secrets.redactor(),
    }

    // Judged by identity only when some secret file has another name: otherwise its name says it all, and the
    // search costs no `stat` per file.
    const linked = secrets.hasLinkedSecrets()
    const isHidden = (file: string): boolean => {
      const abs = path.resolve(plan.cwd, file)
      if (secrets.isOwnData(abs)) return true
      if (!linked) return false
      try {
        return secrets.isSecretIdentity(statSync(abs))
      } catch {
        return false
      }
    }
    const collector = new Collector(toWorkspaceRelative(ctx.workspace, plan.cwd), isHidden)
    let engine: 'ripgrep' | 'builtin' = 'ripgrep'
    let warning: string | undefined
    const rg = await findRipgrep()
    let outcome: EngineOutcome =
      rg.path === null
        ? { kind: 'unavailable', reason: rg.reason }
        : await runRipgrep(rg.path, plan, collector)
    if (outcome.kind === 'unavailable') {
      engine = 'builtin'
      warning = `ripgrep is not available (${outcome.reason}); the slower built-in search was used, with JavaScript regex semantics.`
      outcome = await runBuiltinSearch(plan, collector)
    }

    const baseMetadata = { engine, ...(warning ? { warning } : {}) }
    switch (outcome.kind) {
      case 'cancelled':
        return fail('Search cancelled.', { title, metadata: { ...baseMetadata, cancelled: true } })
      case 'fatal':
        return fail(outcome.message, { title, metadata: baseMetadata })
      case 'unavailable':
        return fail(`Search failed: ${outcome.reason}.`, { title, metadata: baseMetadata })
      case 'done':
        break
      default: {
        const unreachable: never = outcome
        return unreachable
      }
    }

    // Defence in depth: ripgrep does not follow symlinks, but a folder swapped for a link mid-search would
    // be read through it. Everything shown must really live inside the workspace.
    const isInsideReally = insideChecker(ctx.workspace)
    const folders = [...new Set(collector.shown.map((m) => path.dirname(path.resolve(plan.cwd, m.file))))]
    const verdicts = await Promise.all(folders.map(isInsideReally))
    const realInside = new Set(folders.filter((_, i) => verdicts[i]))
    const prefix = toWorkspaceRelative(ctx.workspace, plan.cwd)
    const shown = collector.shown
      .filter((m) => realInside.has(path.dirname(path.resolve(plan.cwd, m.file))))
      .map((m) => ({ ...m, file: prefix === '.' ? m.file : `${prefix}/${m.file}` }))
      // ripgrep searches files in parallel: sort so that the same search gives the same output.
      .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line))

    const notes: string[] = []
    const truncated = collector.matches > shown.length || !collector.complete
    if (truncated) {
      const total = collector.complete
        ? `${formatCount(collector.matches)} matching lines in ${formatCount(collector.files)} files`
        : `more than ${formatCount(COUNT_LIMIT)} matching lines (counting stopped there)`
      notes.push(
        `[Showing ${shown.length} of ${total}. Narrow the search: set \`path\` to a folder, \`include\` to a file glob such as "*.ts", or make the pattern more specific.]`,
      )
    }
    const describe = ({ file, reason }: FileProblem): string =>
      file === '' ? reason : fileError(prefix === '.' ? file : `${prefix}/${file}`, reason)
    // "binary file matches" for a secret file would answer the regex oracle too.
    for (const note of outcome.notes) if (!collector.isSecret(note.file)) notes.push(`[${describe(note)}]`)
    if (outcome.problems.length > 0) {
      const listed = outcome.problems.slice(0, MAX_NOTED_PROBLEMS).map((problem) => `  ${describe(problem)}`)
      const more = outcome.problems.length - listed.length
      notes.push(
        `[Some files could not be searched:\n${listed.join('\n')}${more > 0 ? `\n  ... and ${more} more` : ''}]`,
      )
    }

    const scope = `${where === '.' ? '' : ` in ${where}`}${input.include ? ` (files matching ${input.include})` : ''}`
    const body =
      shown.length === 0
        ? `No matches for ${JSON.stringify(input.pattern)}${scope}.${/\n|\\n/.test(input.pattern) ? ' Lines are matched one at a time, so a newline in the pattern never matches.' : ''}`
        : shown.map((m) => `${m.file}:${m.line}:${m.text}`).join('\n')
    return ok([body, ...notes].join('\n\n'), {
      title,
      metadata: {
        ...baseMetadata,
        matches: collector.matches,
        files: collector.files,
        truncated,
        countComplete: collector.complete,
        shown: shown.length,
        ...(outcome.problems.length > 0 ? { errors: outcome.problems.length } : {}),
      },
    })
  },
})
