import { spawn } from 'node:child_process'
import { constants as fsConstants, promises as fs } from 'node:fs'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { insideChecker } from './glob'
import { GrepInput } from './schemas'
import { isSecretPath } from './sensitive-paths'
import { defineTool, fail, ok, type ToolResult } from './tool'
import { isInside, resolveInWorkspace, toWorkspaceRelative } from './workspace'

/**
 * grep (DESIGN 2): ripgrep when its binary is there, otherwise a slower built-in search with a warning.
 *
 * Choices, and why:
 * - Hidden files are searched (`.github/`, `.eslintrc`, ...: config the model must see) except `.git/`
 *   internals, which are noise. `.gitignore` is respected even outside a git repository (`--no-require-git`):
 *   a folder that has one expects it to apply.
 * - Files that hold credentials (`isSecretPath`: `.env*`, keys, `.ssh/`, `.aws/`, ...) are never shown: grep
 *   runs without approval, while reading those files asks the user. The output says how many lines were withheld.
 * - The model sees at most MAX_SHOWN_LINES lines; matching lines are still counted up to COUNT_LIMIT so the
 *   note can say how big the result really is, then ripgrep is killed: a pattern like `e` in a large repo
 *   must not stream millions of lines through us.
 * - `--engine auto`: ripgrep switches to PCRE2 when the pattern needs look-around or backreferences, which
 *   models write often; plain patterns keep the fast default engine.
 */

const MAX_SHOWN_LINES = 200
const COUNT_LIMIT = 5000
/** Long lines (minified code) are cut to this many bytes with ripgrep's marker. */
const MAX_COLUMNS = 500
const LONG_LINE_MARKER = ' [... omitted end of long line]'
const MAX_STDERR_BYTES = 64 * 1024
const MAX_NOTED_PROBLEMS = 5
/** Built-in search: problems kept for the count in the note; a tree of unreadable folders must not fill memory. */
const MAX_KEPT_PROBLEMS = 1000
/** Built-in search: larger files are skipped (and reported) rather than read into memory. */
const BUILTIN_MAX_FILE_BYTES = 32 * 1024 * 1024
/** Built-in search: a regex that spends this long on one file is backtracking catastrophically. */
const BUILTIN_FILE_BUDGET_MS = 10_000

// A `..` segment in a path an engine reported.
const PARENT_IN_PATH = /(?:^|\/)\.\.(?:\/|$)/

interface Match {
  /** Path relative to the folder the search ran in, `/`-separated. */
  file: string
  line: number
  text: string
}

/**
 * Gathers what either engine finds: keeps the first lines for the model, counts the rest up to COUNT_LIMIT,
 * withholds secrets and drops anything that is not lexically inside the workspace.
 */
class Collector {
  readonly shown: Match[] = []
  matches = 0
  files = 0
  withheld = 0
  /** False once COUNT_LIMIT was reached and the search stopped: `matches` is then a lower bound. */
  complete = true
  private lastFile: string | null = null
  /** Verdict for `lastFile`: engines report a file's lines together, so each file is judged once. */
  private lastFileAccepted = false
  private lastFileSecret = false

  /** `folder`: where the search ran, relative to the workspace root (engines name files relative to it). */
  constructor(private readonly folder: string) {}

  /** Returns false when the search should stop. */
  add(file: string, line: number, text: string): boolean {
    const newFile = file !== this.lastFile
    if (newFile) {
      this.lastFile = file
      // `cwd` is a real folder inside the workspace, so a relative name without `..` is lexically inside; the
      // lines shown are checked again by real path before they leave the tool.
      // Secrets are judged by their name in the workspace: `credentials` found by a search of `.aws` is one.
      this.lastFileSecret = isSecretPath(path.posix.join(this.folder, file))
      this.lastFileAccepted = !this.lastFileSecret && !path.isAbsolute(file) && !PARENT_IN_PATH.test(file)
      if (this.lastFileAccepted && this.matches < COUNT_LIMIT) this.files += 1
    }
    if (!this.lastFileAccepted) {
      if (this.lastFileSecret) this.withheld += 1
      return true
    }
    if (this.matches >= COUNT_LIMIT) {
      this.complete = false
      return false
    }
    this.matches += 1
    if (this.shown.length < MAX_SHOWN_LINES) this.shown.push({ file, line, text })
    return true
  }
}

/** A file or folder that could not be searched; `file` is relative to the search folder, '' for none. */
interface FileProblem {
  file: string
  reason: string
}

type EngineOutcome =
  | { kind: 'done'; problems: FileProblem[]; notes: FileProblem[] }
  | { kind: 'fatal'; message: string }
  | { kind: 'cancelled' }
  | { kind: 'unavailable'; reason: string }

interface SearchPlan {
  pattern: string
  include: string | undefined
  caseInsensitive: boolean
  /** Folder the search runs in (the target itself, or a file's folder). */
  cwd: string
  /** What to search inside `cwd`: `.` or a file name. */
  target: string
  workspace: string
  signal: AbortSignal
}

// ---------------------------------------------------------------------------------------------------------
// ripgrep

let bundledRipgrep: Promise<string | null> | undefined

/** `LANES_RG_PATH` overrides the bundled binary. No executable binary: the built-in search is used. */
async function findRipgrep(): Promise<{ path: string } | { path: null; reason: string }> {
  const override = process.env.LANES_RG_PATH
  let candidate: string | null
  if (override !== undefined && override !== '') {
    candidate = override
  } else {
    // Imported lazily: the module throws at import time when the platform package is missing.
    bundledRipgrep ??= import('@vscode/ripgrep').then(
      // In a packaged Electron app the binary is unpacked next to the asar archive, which cannot be executed.
      (m) => m.rgPath.replace(/\bapp\.asar\b(?!\.unpacked)/, 'app.asar.unpacked'),
      () => null,
    )
    candidate = await bundledRipgrep
    if (candidate === null) return { path: null, reason: 'the @vscode/ripgrep binary is not installed' }
  }
  try {
    await fs.access(candidate, fsConstants.X_OK)
    return { path: candidate }
  } catch {
    return { path: null, reason: `no executable ripgrep at ${candidate}` }
  }
}

/** Exported for the benchmark, which runs ripgrep directly with exactly these arguments. */
export function ripgrepArgs(
  plan: Pick<SearchPlan, 'pattern' | 'include' | 'caseInsensitive' | 'target'>,
): string[] {
  const args = [
    '--no-config',
    '--line-number',
    '--no-heading',
    '--with-filename',
    '--color',
    'never',
    // NUL after the file name: names may contain ':'.
    '--null',
    '--max-columns',
    String(MAX_COLUMNS),
    '--max-columns-preview',
    '--hidden',
    '--no-require-git',
    '--engine',
    'auto',
    // `$` then matches before `\r\n` too, as in files written on Windows.
    '--crlf',
  ]
  if (plan.caseInsensitive) args.push('--ignore-case')
  if (plan.include !== undefined) args.push('--glob', plan.include)
  // After the include glob: the last matching glob wins, so `.git/` stays out whatever the include says.
  args.push('--glob', '!.git', '--', plan.pattern, plan.target)
  return args
}

function runRipgrep(rgPath: string, plan: SearchPlan, collector: Collector): Promise<EngineOutcome> {
  return new Promise((resolve) => {
    if (plan.signal.aborted) return resolve({ kind: 'cancelled' })
    const child = spawn(rgPath, ripgrepArgs(plan), {
      cwd: plan.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    })
    let spawned = false
    let stopped = false
    let cancelled = false
    let pending: Buffer = Buffer.alloc(0)
    let stderr = ''
    const notes: FileProblem[] = []

    const stop = (): void => {
      if (stopped) return
      stopped = true
      child.stdout.destroy()
      child.kill('SIGKILL')
    }
    const onAbort = (): void => {
      cancelled = true
      stop()
    }
    plan.signal.addEventListener('abort', onAbort, { once: true })

    const handleLine = (line: Buffer): void => {
      const nul = line.indexOf(0)
      if (nul === -1) {
        // Not a match line: "<file>: binary file matches (...)" for a binary file searched explicitly.
        const binary = /^(?:\.\/)?(.*): (binary file matches.*)$/.exec(line.toString('utf8'))
        if (binary)
          notes.push({ file: binary[1] ?? '', reason: `${binary[2] ?? ''}; its lines are not shown` })
        return
      }
      let file = line.toString('utf8', 0, nul)
      const rest = line.toString('utf8', nul + 1)
      const colon = rest.indexOf(':')
      const lineNumber = Number.parseInt(rest.slice(0, colon), 10)
      if (colon === -1 || !Number.isFinite(lineNumber)) return
      if (file.startsWith('./')) file = file.slice(2)
      if (path.sep === '\\') file = file.replaceAll('\\', '/')
      let text = rest.slice(colon + 1)
      if (text.endsWith('\r')) text = text.slice(0, -1)
      if (!collector.add(file, lineNumber, text)) stop()
    }

    child.on('spawn', () => {
      spawned = true
    })
    child.stdout.on('data', (chunk: Buffer) => {
      if (stopped) return
      let data = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk
      let start = 0
      for (let nl = data.indexOf(10, start); nl !== -1 && !stopped; nl = data.indexOf(10, start)) {
        handleLine(data.subarray(start, nl))
        start = nl + 1
      }
      data = data.subarray(start)
      // Copy: a subarray would keep the whole chunk alive.
      pending = stopped ? Buffer.alloc(0) : Buffer.from(data)
    })
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr += chunk.toString('utf8')
    })
    child.on('error', (error: NodeJS.ErrnoException) => {
      plan.signal.removeEventListener('abort', onAbort)
      if (!spawned)
        resolve({
          kind: 'unavailable',
          reason: `ripgrep could not be started (${error.code ?? error.message})`,
        })
    })
    child.on('close', (code) => {
      plan.signal.removeEventListener('abort', onAbort)
      if (!spawned) return
      if (!stopped && pending.length > 0) handleLine(pending)
      if (cancelled) return resolve({ kind: 'cancelled' })
      // Killed by us at COUNT_LIMIT: what it found so far is the answer.
      if (stopped) return resolve({ kind: 'done', problems: classifyRipgrepErrors(stderr), notes })
      if (code === 0 || code === 1) return resolve({ kind: 'done', problems: [], notes })
      // Exit code 2 is also "searched, but some files failed": keep the results unless nothing could run at all
      // (a pattern or glob that does not compile, or an error that names no file and left no results).
      const problems = classifyRipgrepErrors(stderr)
      const searched = collector.matches > 0 || problems.some((p) => p.file !== '')
      if (code !== 2 || COMPILE_ERROR.test(stderr) || !searched)
        return resolve({ kind: 'fatal', message: readableRipgrepError(stderr, plan.pattern, code) })
      resolve({ kind: 'done', problems, notes })
    })
  })
}

/** ripgrep's messages for a pattern or glob it cannot compile: nothing was searched. */
const COMPILE_ERROR =
  /regex parse error|regex could not be compiled|error parsing glob|literal "\\n" is not allowed/

/**
 * ripgrep reports per-file problems (unreadable file, name too long) as `rg: <path>: <reason> (os error N)`
 * and still exits 2 after printing what it found. Other lines are kept as they are.
 */
function classifyRipgrepErrors(stderr: string): FileProblem[] {
  const problems: FileProblem[] = []
  for (const line of stderr.split('\n')) {
    if (line.trim() === '') continue
    const perFile = /^rg: (?:\.\/)?(.*): ([^:]*\(os error \d+\))$/.exec(line)
    problems.push(
      perFile
        ? { file: perFile[1] ?? '', reason: perFile[2] ?? '' }
        : { file: '', reason: line.replace(/^rg: /, '') },
    )
  }
  return problems
}

/** `<path>: <reason>`, where a path of several KB is cut in the middle so the reason stays readable. */
function fileError(file: string, reason: string): string {
  const shown = file.length <= 300 ? file : `${file.slice(0, 140)}…${file.slice(-140)}`
  return `${shown}: ${reason}`
}

const REGEX_HINT =
  'The pattern uses Rust regex syntax (PCRE2 when it needs look-around or backreferences). Escape characters meant literally, such as ( ) [ ] { } . * + ? | \\, with a backslash.'

/**
 * ripgrep's regex errors are written for a terminal and show the pattern wrapped in `(?:...)`; give the
 * model the error with its own pattern, the caret under the problem, and what to do about it.
 */
function readableRipgrepError(stderr: string, pattern: string, code: number | null): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.replace(/^rg: /, ''))
    .filter((l) => !/^~+$/.test(l))
  const text = lines.join('\n')
  const invalid = `Invalid regex ${JSON.stringify(pattern)}`
  if (/literal "\\n" is not allowed/.test(text))
    return `${invalid}: grep matches one line at a time, so the pattern cannot contain a newline. Search for a single line of the text instead.`
  // The default engine refused look-around or a backreference, so PCRE2 was tried: its error is the one.
  const pcre2 = lines.find((l) => l.startsWith('PCRE2: '))
  if (pcre2 && /look-around|backreferences are not supported/.test(text))
    return `${invalid}: ${pcre2.replace(/^PCRE2: (?:error compiling pattern at offset \d+: )?/, '')}.\n${REGEX_HINT}`
  if (/regex parse error|regex could not be compiled|PCRE2/.test(text)) {
    // Otherwise the default engine's report: PCRE2's is a second opinion on the same problem.
    const start = lines.findIndex((l) => /regex parse error/.test(l))
    const end = lines.findIndex((l, i) => i > start && l.startsWith('error: '))
    const report = start !== -1 && end !== -1 ? lines.slice(start + 1, end + 1) : lines
    const reason = report.find((l) => l.startsWith('error: '))?.slice('error: '.length)
    const shown: string[] = []
    const wrapped = `(?:${pattern})`
    for (let i = 0; i < report.length; i++) {
      const line = report[i] as string
      if (line.startsWith('error: ') || line.trim() === '' || line.trim() === 'regex parse error:') continue
      const at = line.indexOf(wrapped)
      const caret = report[i + 1]
      if (at === -1 || caret === undefined || !/^\s*\^+\s*$/.test(caret)) {
        shown.push(line)
        continue
      }
      // Show the model's own pattern; move the caret back by the 3 characters of `(?:`, or drop it when it
      // points at the wrapper itself (an unbalanced parenthesis), where it would only mislead.
      shown.push(`    ${pattern}`)
      const column = caret.indexOf('^') - at - 3
      if (column >= 0 && column < pattern.length) shown.push(`    ${' '.repeat(column)}${caret.trim()}`)
      i += 1
    }
    return [`${invalid}${reason ? `: ${reason}` : ''}.`, ...shown, REGEX_HINT].join('\n')
  }
  if (/error parsing glob/.test(text))
    return `Invalid include glob: ${text.trim()}\nUse a glob such as "*.ts", "src/**/*.js" or "*.{ts,tsx}".`
  return `ripgrep failed (exit code ${code ?? 'none'}): ${text.trim() || 'no message'}`
}

// ---------------------------------------------------------------------------------------------------------
// Built-in search (no ripgrep binary)

/**
 * Rust regex syntax the model writes for ripgrep, translated to a JavaScript RegExp, or refused with a
 * reason when the meaning would change (JavaScript would otherwise silently read it differently).
 */
export function translateRegex(
  pattern: string,
  caseInsensitive: boolean,
): { ok: true; source: string; flags: string } | { ok: false; reason: string } {
  const flags = new Set<string>()
  if (caseInsensitive) flags.add('i')
  let rest = pattern
  // A leading flag group applies to the whole pattern; `s` and `m` change nothing when matching one line.
  const leading = /^\(\?([imsU]+)\)/.exec(rest)
  if (leading) {
    const letters = leading[1] ?? ''
    if (letters.includes('U'))
      return { ok: false, reason: 'the flag (?U) (swap greedy and lazy) has no JavaScript equivalent' }
    if (letters.includes('i')) flags.add('i')
    rest = rest.slice(leading[0].length)
  }

  let out = ''
  let inClass = false
  let needsUnicode = false
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i] as string
    const next = rest[i + 1]
    if (c === '\\') {
      if (next === undefined) return { ok: false, reason: 'the pattern ends with a lone backslash' }
      if (next === 'Q' && !inClass) {
        // \Q...\E quotes everything literally.
        const end = rest.indexOf('\\E', i + 2)
        const literal = rest.slice(i + 2, end === -1 ? rest.length : end)
        out += literal.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')
        i = end === -1 ? rest.length : end + 1
        continue
      }
      if ((next === 'A' || next === 'z' || next === 'Z') && !inClass) {
        out += next === 'A' ? '^' : '$'
        i += 1
        continue
      }
      if ((next === '<' || next === '>') && !inClass) {
        out += next === '<' ? '\\b(?=\\w)' : '\\b(?<=\\w)'
        i += 1
        continue
      }
      if (next === 'p' || next === 'P') {
        needsUnicode = true
        const brace = rest[i + 2] === '{'
        if (brace) {
          const end = rest.indexOf('}', i + 3)
          if (end === -1) return { ok: false, reason: `unclosed \\${next}{` }
          // Rust takes scripts bare (`\p{Greek}`) and `:` for `=`; JavaScript wants `\p{Script=Greek}`.
          const name = rest.slice(i + 3, end).replace(':', '=')
          out += `\\${next}{${isUnicodeProperty(name) || name.includes('=') ? name : `Script=${name}`}}`
          i = end
        } else {
          const letter = rest[i + 2]
          if (letter === undefined) return { ok: false, reason: `\\${next} needs a Unicode class name` }
          out += `\\${next}{${letter}}`
          i += 2
        }
        continue
      }
      if (next === 'x' && rest[i + 2] === '{') {
        const end = rest.indexOf('}', i + 3)
        if (end === -1) return { ok: false, reason: 'unclosed \\x{' }
        needsUnicode = true
        out += `\\u{${rest.slice(i + 3, end)}}`
        i = end
        continue
      }
      out += c + next
      i += 1
      continue
    }
    if (inClass) {
      if (c === ']') {
        inClass = false
        out += c
        continue
      }
      if (c === '[' && next === ':') {
        const end = rest.indexOf(':]', i + 2)
        const name = end === -1 ? '' : rest.slice(i + 2, end)
        const negated = name.startsWith('^')
        const ascii = POSIX_CLASSES[negated ? name.slice(1) : name]
        if (ascii === undefined || negated)
          return { ok: false, reason: `the POSIX class [:${name}:] is not supported by the built-in search` }
        out += ascii
        i = end + 1
        continue
      }
      if (c === '[')
        return {
          ok: false,
          reason: 'nested character classes ([a[b]]) are not supported by the built-in search',
        }
      if ((c === '&' || c === '~' || c === '-') && next === c && rest[i - 1] !== '[')
        return {
          ok: false,
          reason: `character class set operations (${c}${c}) are not supported by the built-in search`,
        }
      out += c
      continue
    }
    if (c === '[') {
      inClass = true
      out += c
      // `]` right after `[` or `[^` is a literal in Rust, and must be escaped in JavaScript.
      if (next === '^') {
        out += '^'
        i += 1
      }
      if (rest[i + 1] === ']') {
        out += '\\]'
        i += 1
      }
      continue
    }
    if (c === '(' && next === '?') {
      const group = rest.slice(i)
      const named = /^\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(group)
      if (named) {
        out += `(?<${named[1]}>`
        i += named[0].length - 1
        continue
      }
      const backref = /^\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)/.exec(group)
      if (backref) {
        out += `\\k<${backref[1]}>`
        i += backref[0].length - 1
        continue
      }
      if (/^\(\?(?::|=|!|<=|<!)/.test(group)) {
        out += c
        continue
      }
      return {
        ok: false,
        reason:
          'inline flags inside the pattern (e.g. (?i:...) or (?x)) are not supported by the built-in search; use case_insensitive instead',
      }
    }
    out += c
  }
  if (inClass) return { ok: false, reason: 'unclosed character class [' }
  if (needsUnicode) flags.add('u')
  const flagText = [...flags].sort().join('')
  try {
    new RegExp(out, flagText)
  } catch (error) {
    // V8 says "Invalid regular expression: /<source>/<flags>: <problem>"; the source is our translation.
    return {
      ok: false,
      reason: (error as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, ''),
    }
  }
  return { ok: true, source: out, flags: flagText }
}

function isUnicodeProperty(name: string): boolean {
  try {
    new RegExp(`\\p{${name}}`, 'u')
    return true
  } catch {
    return false
  }
}

const POSIX_CLASSES: Record<string, string> = {
  alnum: 'a-zA-Z0-9',
  alpha: 'a-zA-Z',
  ascii: '\\x00-\\x7F',
  blank: ' \\t',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\s',
  upper: 'A-Z',
  word: '\\w',
  xdigit: '0-9A-Fa-f',
}

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

interface IgnoreFile {
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

function isIgnored(ignores: IgnoreFile[], abs: string, isDir: boolean): boolean {
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

async function readIgnoreFile(dir: string): Promise<IgnoreFile | null> {
  try {
    const text = await fs.readFile(path.join(dir, '.gitignore'), 'utf8')
    return { base: dir, rules: parseGitignore(text) }
  } catch {
    return null
  }
}

// The matching runs in a worker: a pattern like `(a+)+$` can backtrack for minutes, which on the main
// thread would freeze the app and ignore the stop button. A worker can be terminated mid-match.
const MATCH_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const re = new RegExp(workerData.source, workerData.flags)
parentPort.on('message', (job) => {
  const hits = []
  const lines = job.text.split('\\n')
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  for (let i = 0; i < lines.length && hits.length < job.limit; i++) {
    let line = lines[i]
    if (line.endsWith('\\r')) line = line.slice(0, -1)
    if (re.test(line)) {
      hits.push([i + 1, line.length > workerData.maxColumns ? line.slice(0, workerData.maxColumns) + workerData.marker : line])
    }
  }
  parentPort.postMessage(hits)
})
`

async function runBuiltinSearch(plan: SearchPlan, collector: Collector): Promise<EngineOutcome> {
  const regex = translateRegex(plan.pattern, plan.caseInsensitive)
  if (!regex.ok)
    return {
      kind: 'fatal',
      message: `Invalid regex ${JSON.stringify(plan.pattern)} for the built-in search: ${regex.reason}.`,
    }
  const include = plan.include === undefined ? null : globToRegExp(plan.include)
  if (include === null && plan.include !== undefined)
    return {
      kind: 'fatal',
      message: `Invalid include glob ${JSON.stringify(plan.include)}. Use a glob such as "*.ts", "src/**/*.js" or "*.{ts,tsx}".`,
    }

  const worker = new Worker(MATCH_WORKER_SOURCE, {
    eval: true,
    workerData: {
      source: regex.source,
      flags: regex.flags,
      maxColumns: MAX_COLUMNS,
      marker: LONG_LINE_MARKER,
    },
  })
  worker.unref()
  const problems: FileProblem[] = []
  const notes: FileProblem[] = []
  let tooLarge = 0

  type MatchOutcome = Array<[number, string]> | 'cancelled' | 'slow' | Error
  const matchFile = (text: string, limit: number): Promise<MatchOutcome> =>
    new Promise((resolve) => {
      const finish = (value: MatchOutcome): void => {
        clearTimeout(timer)
        plan.signal.removeEventListener('abort', onAbort)
        worker.off('message', onMessage)
        worker.off('error', onError)
        resolve(value)
      }
      const onMessage = (hits: Array<[number, string]>): void => finish(hits)
      const onError = (error: Error): void => finish(error)
      const onAbort = (): void => finish('cancelled')
      const timer = setTimeout(() => finish('slow'), BUILTIN_FILE_BUDGET_MS)
      worker.on('message', onMessage)
      worker.on('error', onError)
      plan.signal.addEventListener('abort', onAbort, { once: true })
      worker.postMessage({ text, limit })
    })

  // 'stop' when the count limit is reached, 'next' to go on, or how the whole search ends.
  const searchFile = async (abs: string): Promise<EngineOutcome | 'stop' | 'next'> => {
    const relative = path.relative(plan.cwd, abs).split(path.sep).join('/')
    let buffer: Buffer
    try {
      const stats = await fs.stat(abs)
      if (stats.size > BUILTIN_MAX_FILE_BYTES) {
        tooLarge += 1
        return 'next'
      }
      buffer = await fs.readFile(abs)
    } catch (error) {
      if (problems.length < MAX_KEPT_PROBLEMS)
        problems.push({
          file: relative,
          reason: (error as NodeJS.ErrnoException).code ?? (error as Error).message,
        })
      return 'next'
    }
    // Like ripgrep: a NUL byte means binary, not worth showing to the model.
    if (buffer.includes(0)) {
      if (plan.target !== '.') notes.push({ file: relative, reason: 'binary file, not searched' })
      return 'next'
    }
    const hits = await matchFile(buffer.toString('utf8'), COUNT_LIMIT - collector.matches + 1)
    if (hits === 'cancelled') return { kind: 'cancelled' }
    if (hits instanceof Error)
      return { kind: 'fatal', message: `The built-in search failed: ${hits.message}` }
    if (hits === 'slow')
      return {
        kind: 'fatal',
        message: `The pattern ${JSON.stringify(plan.pattern)} took more than ${BUILTIN_FILE_BUDGET_MS / 1000} s on ${relative} (catastrophic backtracking?). Simplify it, e.g. avoid nested quantifiers like (a+)+.`,
      }
    for (const [line, text] of hits) if (!collector.add(relative, line, text)) return 'stop'
    return 'next'
  }

  try {
    if (plan.target !== '.') {
      const outcome = await searchFile(path.join(plan.cwd, plan.target))
      return typeof outcome === 'string' ? { kind: 'done', problems, notes } : outcome
    }
    // Ignore files from the workspace root down to the search folder apply, as they do for git.
    const ancestors: IgnoreFile[] = []
    for (let dir = path.dirname(plan.cwd); isInside(plan.workspace, dir); dir = path.dirname(dir)) {
      const file = await readIgnoreFile(dir)
      if (file) ancestors.unshift(file)
      if (dir === plan.workspace || dir === path.dirname(dir)) break
    }
    const stack: Array<{ dir: string; ignores: IgnoreFile[] }> = [{ dir: plan.cwd, ignores: ancestors }]
    while (stack.length > 0) {
      if (plan.signal.aborted) return { kind: 'cancelled' }
      const { dir, ignores: inherited } = stack.pop() as { dir: string; ignores: IgnoreFile[] }
      let entries
      try {
        entries = await fs.readdir(dir, { withFileTypes: true })
      } catch (error) {
        const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message
        if (problems.length < MAX_KEPT_PROBLEMS)
          problems.push({ file: path.relative(plan.cwd, dir).split(path.sep).join('/'), reason })
        continue
      }
      const own = entries.some((e) => e.name === '.gitignore' && e.isFile())
        ? await readIgnoreFile(dir)
        : null
      const ignores = own ? [...inherited, own] : inherited
      const subdirs: string[] = []
      for (const entry of entries) {
        // Symlinks are neither followed nor searched, as with ripgrep.
        if (entry.name === '.git' || entry.isSymbolicLink()) continue
        const abs = path.join(dir, entry.name)
        if (entry.isDirectory()) {
          if (!isIgnored(ignores, abs, true)) subdirs.push(abs)
          continue
        }
        if (!entry.isFile() || isIgnored(ignores, abs, false)) continue
        if (include && !include.test(path.relative(plan.cwd, abs).split(path.sep).join('/'))) continue
        const outcome = await searchFile(abs)
        if (outcome === 'stop') return { kind: 'done', problems, notes }
        if (outcome !== 'next') return outcome
      }
      for (const sub of subdirs.reverse()) stack.push({ dir: sub, ignores })
    }
    if (tooLarge > 0)
      problems.push({
        file: '',
        reason: `${tooLarge} file(s) over ${BUILTIN_MAX_FILE_BYTES / 1024 / 1024} MiB were not searched`,
      })
    return { kind: 'done', problems, notes }
  } finally {
    await worker.terminate()
  }
}

// ---------------------------------------------------------------------------------------------------------
// The tool

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
  // Runs without asking: secret files are withheld by the search itself (`isSecretPath`).
  policy: () => ({ kind: 'allow' }),
  async execute(input, ctx): Promise<ToolResult> {
    const where = input.path ?? '.'
    const title = grepTitle(input)
    if (ctx.signal.aborted)
      return fail('Search cancelled before it started.', { title, metadata: { cancelled: true } })

    const resolved = await resolveInWorkspace(ctx.workspace, where, 'read')
    if (!resolved.ok) return fail(resolved.reason, { title })
    let isDirectory: boolean
    try {
      isDirectory = (await fs.stat(resolved.path)).isDirectory()
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      return fail(
        code === 'ENOENT'
          ? `Path ${JSON.stringify(where)} does not exist. Use the glob tool to find the right path.`
          : `Cannot search ${JSON.stringify(where)}: ${(error as Error).message}`,
        { title },
      )
    }
    const plan: SearchPlan = {
      pattern: input.pattern,
      include: input.include,
      caseInsensitive: input.case_insensitive === true,
      cwd: isDirectory ? resolved.path : path.dirname(resolved.path),
      target: isDirectory ? '.' : path.basename(resolved.path),
      workspace: ctx.workspace,
      signal: ctx.signal,
    }

    const collector = new Collector(toWorkspaceRelative(ctx.workspace, plan.cwd))
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
    if (collector.withheld > 0)
      notes.push(
        `[${collector.withheld} matching line(s) in credential files (.env, keys) are not shown; read such a file with read_file if it is really needed.]`,
      )
    const describe = ({ file, reason }: FileProblem): string =>
      file === '' ? reason : fileError(prefix === '.' ? file : `${prefix}/${file}`, reason)
    for (const note of outcome.notes) notes.push(`[${describe(note)}]`)
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
        ...(collector.withheld > 0 ? { withheld: collector.withheld } : {}),
        ...(outcome.problems.length > 0 ? { errors: outcome.problems.length } : {}),
      },
    })
  },
})
