import { execFileSync, spawn } from 'node:child_process'
import { existsSync, promises as fs } from 'node:fs'
import path from 'node:path'
import { DEFAULT_HISTORY_BUDGET, findInHistory, type PathJudge } from '../src/main/git/history'
import { isSecretPath, secretFolderContext } from '../src/main/tools/sensitive-paths'
import { median, result, sized, type Benchmark } from './harness'

/**
 * The history check (src/main/git/history.ts: does any commit of the object store hold a secret file?) on a generated
 * repository of 2000 commits over 2000 files, against `git log --all --name-only --format=` on the same
 * repository, the cheapest way git itself lists every path of every commit. Both read the whole history: the
 * repository holds no secret. Figures: packed (after `git gc`, trees stored as deltas), all loose (what a young
 * repository looks like), and the cached answer when the workspace is opened again.
 */

const VERSION = 1
const FILES = sized(2000, 200)
const COMMITS = sized(2000, 100)
const RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(9, 1))

/** A fresh judge per run: answers are cached per judge, and the figure is the uncached work. */
const freshJudge = (): PathJudge => ({ matches: isSecretPath, folderKey: secretFolderContext })

const fileName = (i: number): string =>
  `packages/pkg-${i % 20}/src/area-${Math.floor(i / 20) % 10}/mod-${Math.floor(i / 200)}.ts`

/** A fast-import stream: one commit adding every file, then commits changing one to three files each. */
function importStream(): string {
  const lines: string[] = []
  let seed = 42
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed % n
  }
  const blob = (content: string): string => `data ${Buffer.byteLength(content)}\n${content}`
  for (let c = 0; c < COMMITS; c++) {
    lines.push('commit refs/heads/main', `committer Bench <b@example.com> ${1_700_000_000 + c} +0000`)
    lines.push(blob(`change ${c}\n`))
    const touched = c === 0 ? [...Array(FILES).keys()] : [random(FILES), random(FILES), random(FILES)]
    for (const i of touched.slice(0, c === 0 ? FILES : 1 + random(3)))
      lines.push(
        `M 100644 inline ${fileName(i)}`,
        blob(`export const value${i} = ${c}\n// ${'x'.repeat(200)}\n`),
      )
    lines.push('')
  }
  return `${lines.join('\n')}\n`
}

/** The generated repository, packed and loose, made once into the cache. */
async function ensureRepos(cacheDir: string): Promise<{ packed: string; loose: string }> {
  const packed = path.join(cacheDir, `v${VERSION}`, 'packed')
  const loose = path.join(cacheDir, `v${VERSION}`, 'loose')
  if (existsSync(path.join(loose, '.done'))) return { packed, loose }
  await fs.rm(path.join(cacheDir, `v${VERSION}`), { recursive: true, force: true })
  for (const dir of [packed, loose]) {
    await fs.mkdir(dir, { recursive: true })
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: dir })
  }
  execFileSync('git', ['fast-import', '--quiet'], { cwd: packed, input: importStream() })
  execFileSync('git', ['gc', '-q'], { cwd: packed })
  // The same objects unpacked, one file each.
  const packDir = path.join(packed, '.git', 'objects', 'pack')
  const pack = (await fs.readdir(packDir)).find((f) => f.endsWith('.pack')) as string
  execFileSync('git', ['unpack-objects', '-q'], {
    cwd: loose,
    input: await fs.readFile(path.join(packDir, pack)),
  })
  execFileSync(
    'git',
    [
      'update-ref',
      'refs/heads/main',
      execFileSync('git', ['rev-parse', 'main'], { cwd: packed }).toString().trim(),
    ],
    { cwd: loose },
  )
  await fs.writeFile(path.join(loose, '.done'), '')
  return { packed, loose }
}

/** git listing every path of every commit, its output read in full. */
function gitNameOnly(cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['log', '--all', '--name-only', '--format='], {
      cwd,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    let bytes = 0
    child.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length
    })
    child.on('error', reject)
    child.on('close', () => resolve(bytes))
  })
}

/** Median times of `tool` and `baseline`, alternated so a shared machine's drift hits both alike. */
async function sideBySide(
  tool: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
): Promise<{ tool: number; baseline: number }> {
  await tool()
  await baseline()
  const times = { tool: [] as number[], baseline: [] as number[] }
  for (let i = 0; i < RUNS; i++) {
    for (const side of i % 2 === 0 ? (['tool', 'baseline'] as const) : (['baseline', 'tool'] as const)) {
      const t0 = performance.now()
      await (side === 'tool' ? tool : baseline)()
      times[side].push(performance.now() - t0)
    }
  }
  return { tool: median(times.tool), baseline: median(times.baseline) }
}

/** The whole check, timed without its budget (the figure says how far it is from the default one). */
async function check(root: string, judge: PathJudge): Promise<void> {
  const verdict = await findInHistory(root, judge, { timeMs: 60_000, maxObjects: Number.POSITIVE_INFINITY })
  if (verdict.kind !== 'clean')
    throw new Error(`the generated repository is not clean: ${JSON.stringify(verdict)}`)
}

export const benchmarks: Benchmark[] = [
  {
    name: 'git-history',
    async run(cacheDir) {
      const { packed, loose } = await ensureRepos(cacheDir)
      const out = []
      for (const [label, root] of [
        ['packed', packed],
        ['loose', loose],
      ] as const) {
        const times = await sideBySide(
          () => check(root, freshJudge()),
          () => gitNameOnly(root),
        )
        out.push(
          result(`git-history ${label} ${COMMITS} commits`, times.tool, times.baseline, 'ms', {
            maxValue: DEFAULT_HISTORY_BUDGET.timeMs,
            text: `within the ${DEFAULT_HISTORY_BUDGET.timeMs} ms budget (beyond it the check fails closed)`,
          }),
        )
      }
      const judge = freshJudge()
      await check(packed, judge)
      const cached = await sideBySide(
        () => check(packed, judge),
        () => gitNameOnly(packed),
      )
      out.push(result('git-history packed, cached answer', cached.tool, cached.baseline, 'ms'))
      return out
    },
  },
]
