import { spawn } from 'node:child_process'
import type { Readable } from 'node:stream'
import fg from 'fast-glob'
import { globTool } from '../src/main/tools/glob'
import { grepTool } from '../src/main/tools/grep'
import { ripgrepArgs } from '../src/main/tools/grep/ripgrep'
import type { ToolContext, ToolResult } from '../src/main/tools/tool'
import { ensureTree, MODERATE_PATTERN, RARE_PATTERN } from './gen-tree'
import { median, result, sized, type Benchmark, type BenchResult } from './harness'
import { makeToolContext } from '../src/main/tools/test-fixtures/tool-context'

/**
 * grep and glob on a 100k-file tree, each against the library or binary it wraps, called directly with the
 * same arguments in the same run. Runs alternate tool/baseline so that drift of a shared machine (other
 * engineers' jobs on the same two cores) hits both sides alike; each figure is the median of its runs
 * (`LANES_BENCH_RUNS` overrides their number).
 */

// Runs per side: grep reads the whole tree (seconds on a shared machine), glob stops early (milliseconds).
const GREP_RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(11, 2))
const GLOB_RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(41, 3))
const GLOB_CAP = 1000

const context = (workspace: string): ToolContext => makeToolContext(workspace, { callId: 'bench' })

/** Median wall time of `tool` and `baseline`, alternated, after one warm-up of each (page cache). */
async function sideBySide(
  runs: number,
  tool: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
): Promise<{ tool: number; baseline: number }> {
  await tool()
  await baseline()
  const toolTimes: number[] = []
  const baselineTimes: number[] = []
  for (let i = 0; i < runs; i++) {
    // Alternate which side goes first: the second of a pair may profit from the first's warm caches.
    const order = i % 2 === 0 ? [tool, baseline] : [baseline, tool]
    for (const fn of order) {
      const t0 = performance.now()
      await fn()
      const elapsed = performance.now() - t0
      ;(fn === tool ? toolTimes : baselineTimes).push(elapsed)
    }
  }
  return { tool: median(toolTimes), baseline: median(baselineTimes) }
}

/** ripgrep run directly, its whole output read: what a caller without our tool would do. */
function runRipgrep(rgPath: string, args: string[], cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(rgPath, args, { cwd, stdio: ['ignore', 'pipe', 'ignore'] })
    let bytes = 0
    child.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length
    })
    child.on('error', reject)
    child.on('close', () => resolve(bytes))
  })
}

/** fast-glob streamed with the options the tool uses, stopped after the same number of entries. */
function fastGlobStream(pattern: string, options: fg.Options, cap: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = fg.stream(pattern, options) as Readable
    let count = 0
    const finish = (): void => {
      stream.destroy()
      resolve(count)
    }
    stream.on('data', () => {
      count += 1
      if (count > cap) finish()
    })
    stream.once('error', reject)
    stream.once('end', finish)
  })
}

async function expectOk(run: Promise<ToolResult>, walker?: 'ripgrep' | 'fast-glob'): Promise<ToolResult> {
  const r = await run
  if (r.isError) throw new Error(`tool failed in the benchmark: ${r.output}`)
  if (walker !== undefined && r.metadata?.walker !== walker)
    throw new Error(`glob walked with ${String(r.metadata?.walker)}, not ${walker}`)
  return r
}

/** `fn` run with no ripgrep binary to be found (LANES_RG_PATH names none), as on a machine without one. */
async function withoutRipgrep<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.env.LANES_RG_PATH
  process.env.LANES_RG_PATH = '/nonexistent/rg'
  try {
    return await fn()
  } finally {
    if (saved === undefined) delete process.env.LANES_RG_PATH
    else process.env.LANES_RG_PATH = saved
  }
}

export const benchmarks: Benchmark[] = [
  {
    name: 'search',
    async run(cacheDir: string): Promise<BenchResult[]> {
      const tree = await ensureTree(cacheDir)
      const ctx = context(tree.root)
      const { rgPath } = await import('@vscode/ripgrep')
      const out: BenchResult[] = []

      for (const [label, pattern] of [
        ['moderate hits', MODERATE_PATTERN],
        ['few hits', RARE_PATTERN],
      ] as const) {
        const sample = await expectOk(grepTool.execute({ pattern }, ctx))
        process.stderr.write(`grep ${label}: ${JSON.stringify(sample.metadata)}\n`)
        const args = ripgrepArgs({ pattern, include: undefined, caseInsensitive: false, target: '.' })
        const times = await sideBySide(
          GREP_RUNS,
          () => expectOk(grepTool.execute({ pattern }, ctx)),
          () => runRipgrep(rgPath, args, tree.root),
        )
        out.push(
          result(
            `grep ${label} (${sample.metadata?.matches} lines) vs rg direct`,
            times.tool,
            times.baseline,
            'ms',
            {
              maxRatio: 1.15,
              text: 'ratio <= 1.15',
            },
          ),
        )
      }

      // The options the glob tool uses for `**/*.ts` (no node_modules/.git in the pattern).
      const globOptions: fg.Options = {
        cwd: tree.root,
        dot: true,
        onlyFiles: true,
        followSymbolicLinks: false,
        suppressErrors: true,
        ignore: ['**/.git/**', '**/node_modules/**'],
      }
      const capped = await sideBySide(
        GLOB_RUNS,
        () => expectOk(globTool.execute({ pattern: '**/*.ts' }, ctx), 'ripgrep'),
        () => fastGlobStream('**/*.ts', globOptions, GLOB_CAP),
      )
      out.push(
        result(`glob **/*.ts (first ${GLOB_CAP}) vs fast-glob direct`, capped.tool, capped.baseline, 'ms', {
          maxRatio: 1.2,
          text: 'ratio <= 1.2',
        }),
      )
      // A pattern with few matches walks the whole tree on both sides.
      const fullWalk = await sideBySide(
        GLOB_RUNS,
        () => expectOk(globTool.execute({ pattern: '**/README.md' }, ctx), 'ripgrep'),
        () => fastGlobStream('**/README.md', globOptions, GLOB_CAP),
      )
      out.push(
        result('glob **/README.md (full walk) vs fast-glob direct', fullWalk.tool, fullWalk.baseline, 'ms', {
          maxRatio: 1.2,
          text: 'ratio <= 1.2',
        }),
      )
      // The walker glob falls back to where no ripgrep binary runs: fast-glob itself, behind the same matching.
      const noRipgrep = await withoutRipgrep(() =>
        sideBySide(
          GLOB_RUNS,
          () => expectOk(globTool.execute({ pattern: '**/README.md' }, ctx), 'fast-glob'),
          () => fastGlobStream('**/README.md', globOptions, GLOB_CAP),
        ),
      )
      out.push(
        result(
          'glob **/README.md (full walk, no ripgrep: fast-glob walks) vs fast-glob direct',
          noRipgrep.tool,
          noRipgrep.baseline,
          'ms',
          { maxRatio: 1.2, text: 'ratio <= 1.2' },
        ),
      )
      // ripgrep lists files with several threads and applies .gitignore (skips dist/); glob lists dist/ too.
      const rgFiles = await sideBySide(
        GLOB_RUNS,
        () => expectOk(globTool.execute({ pattern: '**/*.ts' }, ctx)),
        () => runRipgrep(rgPath, ['--files', '-g', '*.ts'], tree.root),
      )
      out.push(
        result(
          `glob **/*.ts (first ${GLOB_CAP}) vs rg --files -g *.ts (all)`,
          rgFiles.tool,
          rgFiles.baseline,
          'ms',
        ),
      )
      const rgFull = await sideBySide(
        GLOB_RUNS,
        () => expectOk(globTool.execute({ pattern: '**/README.md' }, ctx), 'ripgrep'),
        () => runRipgrep(rgPath, ['--files', '-g', 'README.md'], tree.root),
      )
      out.push(
        result(
          'glob **/README.md (full walk) vs rg --files -g README.md',
          rgFull.tool,
          rgFull.baseline,
          'ms',
          { maxRatio: 1.2, text: 'ratio <= 1.2' },
        ),
      )
      return out
    },
  },
]
