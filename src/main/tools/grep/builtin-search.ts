import { promises as fs } from 'node:fs'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { isInside } from '../workspace'
import { globToRegExp, isIgnored, readIgnoreFile, type IgnoreFile } from './gitignore'
import { translateRegex } from './rust-regex'
import {
  COUNT_LIMIT,
  LONG_LINE_MARKER,
  MAX_COLUMNS,
  type Collector,
  type EngineOutcome,
  type FileProblem,
  type SearchPlan,
} from './search'

/**
 * grep's fallback engine when there is no ripgrep binary: walks the folder (respecting .gitignore, skipping
 * `.git/` and symlinks) and matches with the pattern translated to a JavaScript RegExp.
 */

/** Problems kept for the count in the note; a tree of unreadable folders must not fill memory. */
const MAX_KEPT_PROBLEMS = 1000
/** Larger files are skipped (and reported) rather than read into memory. */
const BUILTIN_MAX_FILE_BYTES = 32 * 1024 * 1024
/** A regex that spends this long on one file is backtracking catastrophically. */
const BUILTIN_FILE_BUDGET_MS = 10_000

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

export async function runBuiltinSearch(plan: SearchPlan, collector: Collector): Promise<EngineOutcome> {
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
    // Matched on the text the model may see: a line holding a secret value matches as its redacted form
    // (secret-lens.ts).
    const text = plan.redactor.redactBytes(buffer).toString('utf8')
    const hits = await matchFile(text, COUNT_LIMIT - collector.matches + 1)
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
