import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** One figure, always a ratio against a baseline measured side by side in the same run. */
export interface BenchResult {
  bench: string
  value: number
  baseline: number
  ratio: number
  unit: string
  /** The target the issue sets, in words (e.g. "ratio <= 1.15"). */
  target?: string
  pass?: boolean
  /** The spread of `value` over its runs (e.g. 25th-75th percentile), where one figure hides it. */
  range?: [number, number]
}

export interface Benchmark {
  name: string
  run(cacheDir: string): Promise<BenchResult[]>
}

const here = dirname(fileURLToPath(import.meta.url))

/**
 * Quick mode (`npm run bench:smoke`: `--quick` or LANES_BENCH_QUICK=1): every benchmark at small sizes, a few
 * seconds each, its targets not enforced. `npm test` runs it so that a benchmark that no longer runs fails CI; the
 * figures it prints mean nothing.
 */
export const QUICK = process.argv.includes('--quick') || process.env.LANES_BENCH_QUICK === '1'

/** `full` in a real run, `quick` in quick mode: the one switch every size and run count goes through. */
export function sized<T>(full: T, quick: T): T {
  return QUICK ? quick : full
}

/**
 * Large generated inputs live here and are reused between runs (git-ignored); quick mode's small ones in a
 * folder of their own, so that neither mode regenerates the other's.
 */
export function cacheDir(...parts: string[]): string {
  const base = process.env.LANES_BENCH_CACHE ?? join(here, '.cache')
  const dir = join(QUICK ? join(base, 'quick') : base, ...parts)
  mkdirSync(dir, { recursive: true })
  return dir
}

export function result(
  bench: string,
  value: number,
  baseline: number,
  unit: string,
  target?: { maxRatio?: number; maxValue?: number; minValue?: number; text: string },
  range?: [number, number],
): BenchResult {
  const ratio = baseline === 0 ? Number.POSITIVE_INFINITY : value / baseline
  let pass: boolean | undefined
  if (target) {
    pass = true
    if (target.maxRatio !== undefined && ratio > target.maxRatio) pass = false
    if (target.maxValue !== undefined && value > target.maxValue) pass = false
    if (target.minValue !== undefined && value < target.minValue) pass = false
  }
  return {
    bench,
    value: round(value),
    baseline: round(baseline),
    ratio: round(ratio),
    unit,
    target: target?.text,
    pass,
    ...(range ? { range: [round(range[0]), round(range[1])] as [number, number] } : {}),
  }
}

function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 1000) / 1000 : n
}

export function median(xs: number[]): number {
  return percentile(xs, 50)
}

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN
  const sorted = [...xs].sort((a, b) => a - b)
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[idx] as number
}

/** Runs `fn` `n` times and returns the wall-clock durations in ms. */
export async function timeRuns(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn()
    out.push(performance.now() - t0)
  }
  return out
}
