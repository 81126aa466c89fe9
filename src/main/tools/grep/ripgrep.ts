import { spawn } from 'node:child_process'
import { constants as fsConstants, promises as fs } from 'node:fs'
import path from 'node:path'
import {
  LONG_LINE_MARKER,
  MAX_COLUMNS,
  type Collector,
  type EngineOutcome,
  type FileProblem,
  type SearchPlan,
} from './search'
import { LINE_WINDOW, SecretLens, valuePatterns } from './secret-lens'

/** grep's first engine: the ripgrep binary, its arguments, and its errors made readable for the model. */

const MAX_STDERR_BYTES = 64 * 1024

let bundledRipgrep: Promise<string | null> | undefined

/** `LANES_RG_PATH` overrides the bundled binary. No executable binary: the built-in search is used. */
export async function findRipgrep(): Promise<{ path: string } | { path: null; reason: string }> {
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

export type RipgrepExit =
  | { kind: 'unavailable'; error: NodeJS.ErrnoException }
  | { kind: 'cancelled' }
  /** `stopped`: `onRecord` asked for no more, and the process was killed. */
  | { kind: 'exited'; code: number | null; stopped: boolean }

/**
 * Runs ripgrep (for grep and for glob's walk) and hands its output over record by record, each ended by
 * `separator` (NUL after `--null` names, a newline after match lines). `onRecord` returning false stops it:
 * the process is killed and its output no longer read; an abort of `signal` stops it too, as cancelled.
 */
export function runRipgrepProcess(
  rgPath: string,
  args: string[],
  options: {
    cwd: string
    signal: AbortSignal
    separator: number
    /** The record `data[start, end)`, separator excluded. */
    onRecord(data: Buffer, start: number, end: number): boolean
    onStderr(chunk: string): void
    /** Output that ends without a separator is a last record too (else it is dropped). */
    unterminatedLast: boolean
    /** What the process reads on its standard input (patterns with `--file=-`, or text to search). */
    input?: string
  },
): Promise<RipgrepExit> {
  const { signal, separator, onRecord } = options
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ kind: 'cancelled' })
    const child = spawn(rgPath, args, {
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    })
    // A process that stops reading early (a pattern that does not compile) must not fail the write.
    child.stdin.on('error', () => undefined)
    child.stdin.end(options.input ?? '')
    let spawned = false
    let stopped = false
    let cancelled = false
    let pending: Buffer = Buffer.alloc(0)

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
    signal.addEventListener('abort', onAbort, { once: true })

    child.on('spawn', () => {
      spawned = true
    })
    child.stdout.on('data', (chunk: Buffer) => {
      if (stopped) return
      const data = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk
      let start = 0
      for (
        let end = data.indexOf(separator, start);
        end !== -1 && !stopped;
        end = data.indexOf(separator, start)
      ) {
        const more = onRecord(data, start, end)
        start = end + 1
        if (!more) stop()
      }
      // Copy: a subarray would keep the whole chunk alive.
      pending = stopped ? Buffer.alloc(0) : Buffer.from(data.subarray(start))
    })
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => options.onStderr(chunk))
    child.on('error', (error: NodeJS.ErrnoException) => {
      signal.removeEventListener('abort', onAbort)
      if (!spawned) resolve({ kind: 'unavailable', error })
    })
    child.on('close', (code) => {
      signal.removeEventListener('abort', onAbort)
      if (!spawned) return
      if (options.unterminatedLast && !stopped && pending.length > 0 && !onRecord(pending, 0, pending.length))
        stopped = true
      if (cancelled) return resolve({ kind: 'cancelled' })
      resolve({ kind: 'exited', code, stopped })
    })
  })
}

/** Exported for the benchmark, which runs ripgrep directly with exactly these arguments. */
export function ripgrepArgs(
  plan: Pick<SearchPlan, 'pattern' | 'include' | 'caseInsensitive' | 'target'>,
  /**
   * The secret lens (secret-lens.ts): `window`, long lines come up to LINE_WINDOW; `values`, the values come as
   * patterns on standard input.
   */
  lens: { window: boolean; values: boolean } = { window: false, values: false },
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
    String(lens.window ? LINE_WINDOW : MAX_COLUMNS),
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
  args.push('--glob', '!.git')
  if (lens.values) args.push(`--regexp=${plan.pattern}`, '--file=-', '--', plan.target)
  else args.push('--', plan.pattern, plan.target)
  return args
}

/** Arguments of the second ripgrep that judges lines (secret-lens.ts): the pattern, read against stdin. */
function judgeArgs(plan: Pick<SearchPlan, 'pattern' | 'caseInsensitive'>): string[] {
  const args = ['--no-config', '--line-number', '--no-heading', '--color', 'never', '--max-columns', '1']
  args.push('--engine', 'auto', '--crlf', '--text')
  if (plan.caseInsensitive) args.push('--ignore-case')
  args.push(`--regexp=${plan.pattern}`, '-')
  return args
}

export async function runRipgrep(
  rgPath: string,
  plan: SearchPlan,
  collector: Collector,
): Promise<EngineOutcome> {
  let stderr = ''
  const notes: FileProblem[] = []
  const lens = new SecretLens(plan.redactor)
  /** Lines judged again on their redacted text once the search is done, and that text, one per line. */
  const judged: { file: string; line: number; text: string }[] = []
  const judgeInput: string[] = []
  let judgeBytes = 0
  /** One line of output; false when the collector has enough. */
  const handleLine = (line: Buffer): boolean => {
    const nul = line.indexOf(0)
    if (nul === -1) {
      // Not a match line: "<file>: binary file matches (...)" for a binary file searched explicitly.
      const binary = /^(?:\.\/)?(.*): (binary file matches.*)$/.exec(line.toString('utf8'))
      if (binary) notes.push({ file: binary[1] ?? '', reason: `${binary[2] ?? ''}; its lines are not shown` })
      return true
    }
    let file = line.toString('utf8', 0, nul)
    const rest = line.toString('utf8', nul + 1)
    const colon = rest.indexOf(':')
    const lineNumber = Number.parseInt(rest.slice(0, colon), 10)
    if (colon === -1 || !Number.isFinite(lineNumber)) return true
    if (file.startsWith('./')) file = file.slice(2)
    if (path.sep === '\\') file = file.replaceAll('\\', '/')
    let text = rest.slice(colon + 1)
    if (text.endsWith('\r')) text = text.slice(0, -1)
    const cut = lens.active && text.endsWith(LONG_LINE_MARKER)
    const seen = lens.look(cut ? text.slice(0, -LONG_LINE_MARKER.length) : text, cut)
    if (seen.kind === 'shown') return collector.add(file, lineNumber, seen.text)
    if (seen.kind === 'left out' || collector.isSecret(file)) return true
    judged.push({ file, line: lineNumber, text: seen.text })
    judgeInput.push(seen.judge)
    judgeBytes += seen.judge.length
    if (judgeBytes <= MAX_JUDGED_CHARS) return true
    // Bounded: the search stops here, as it does at COUNT_LIMIT.
    collector.complete = false
    return false
  }

  const args = ripgrepArgs(plan, { window: lens.active, values: lens.exact })
  const exit = await runRipgrepProcess(rgPath, args, {
    ...(lens.exact ? { input: valuePatterns(plan.redactor, plan.caseInsensitive) } : {}),
    cwd: plan.cwd,
    signal: plan.signal,
    separator: 10,
    onRecord: (data, start, end) => handleLine(data.subarray(start, end)),
    onStderr: (chunk) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr += chunk
    },
    unterminatedLast: true,
  })
  if (exit.kind === 'unavailable')
    return {
      kind: 'unavailable',
      reason: `ripgrep could not be started (${exit.error.code ?? exit.error.message})`,
    }
  if (exit.kind === 'cancelled') return { kind: 'cancelled' }
  const { code } = exit
  const problems = exit.stopped || code === 2 ? classifyRipgrepErrors(stderr) : []
  // Exit code 2 is also "searched, but some files failed": keep the results unless nothing could run at all
  // (a pattern or glob that does not compile, or an error that names no file and left no results).
  const searched = collector.matches > 0 || judged.length > 0 || problems.some((p) => p.file !== '')
  if (!exit.stopped && code !== 0 && code !== 1 && (code !== 2 || COMPILE_ERROR.test(stderr) || !searched)) {
    // ripgrep's report names every pattern it was given: with the values among them, ask again without them.
    const report = lens.exact ? await patternError(rgPath, plan) : stderr
    return { kind: 'fatal', message: readableRipgrepError(report || stderr, plan.pattern, code) }
  }
  if (judged.length > 0) {
    const accepted = await judge(rgPath, plan, judgeInput)
    if (accepted === 'cancelled') return { kind: 'cancelled' }
    for (const [i, m] of judged.entries())
      if (accepted.has(i + 1) && !collector.add(m.file, m.line, m.text)) break
  }
  // Killed by us at COUNT_LIMIT: what it found so far is the answer.
  return { kind: 'done', problems, notes }
}

/** The text of the judged lines ripgrep holds at most; past it the search stops, like at COUNT_LIMIT. */
const MAX_JUDGED_CHARS = 16 * 1024 * 1024

/**
 * Which of `texts` (redacted lines) the pattern matches, by 1-based index, as ripgrep decides it; none when it
 * cannot (the line then does not match: a verdict that depends on the pattern alone).
 */
async function judge(rgPath: string, plan: SearchPlan, texts: string[]): Promise<Set<number> | 'cancelled'> {
  const accepted = new Set<number>()
  const exit = await runRipgrepProcess(rgPath, judgeArgs(plan), {
    cwd: plan.cwd,
    signal: plan.signal,
    separator: 10,
    input: `${texts.join('\n')}\n`,
    onRecord: (data, start, end) => {
      const line = data.toString('utf8', start, end)
      const n = Number.parseInt(line.slice(0, line.indexOf(':')), 10)
      if (Number.isFinite(n)) accepted.add(n)
      return true
    },
    onStderr: () => undefined,
    unterminatedLast: true,
  })
  return exit.kind === 'cancelled' ? 'cancelled' : accepted
}

/** ripgrep's error for the pattern alone, searched in empty input (the values left out of the report). */
async function patternError(rgPath: string, plan: SearchPlan): Promise<string> {
  let stderr = ''
  await runRipgrepProcess(rgPath, judgeArgs(plan), {
    cwd: plan.cwd,
    signal: plan.signal,
    separator: 10,
    input: '',
    onRecord: () => true,
    onStderr: (chunk) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr += chunk
    },
    unterminatedLast: true,
  })
  return stderr
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
