import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startScriptedModel } from '../src/main/agent/scripted-model'
import { median, percentile, result, sized, type Benchmark, type BenchResult } from './harness'

/**
 * How long the `lanes` command takes to start (the built CLI, as a user runs it), against a node process that
 * imports nothing and prints one line: the floor any node command pays. Runs alternate, so a shared machine's
 * drift hits both sides alike.
 * - `lanes --help`: spawn to exit, against the floor's spawn to exit.
 * - `lanes run` on a small workspace, with a model at a base URL (the scripted model, in this process): spawn to
 *   its `session.created` line on stdout, against the floor's spawn to its line. The run then finishes (one
 *   answer) before the next starts.
 */

const RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(15, 2))
const here = fileURLToPath(new URL('.', import.meta.url))
const cliEntry = join(here, '..', 'bin', 'lanes.js')
const built = join(here, '..', 'out', 'main', 'cli.js')

/**
 * Spawns node with `args` and returns the ms from the spawn to the first stdout line `isMark` accepts (to the exit
 * without one), once the process has exited.
 */
function spawnTimed(
  args: string[],
  env: NodeJS.ProcessEnv,
  isMark?: (line: string) => boolean,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    let markedAt = 0
    let pending = ''
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdout.on('data', (chunk: Buffer) => {
      if (!isMark || markedAt !== 0) return
      pending += chunk.toString()
      let nl: number
      while ((nl = pending.indexOf('\n')) !== -1) {
        if (isMark(pending.slice(0, nl))) {
          markedAt = performance.now()
          return
        }
        pending = pending.slice(nl + 1)
      }
    })
    child.on('error', reject)
    child.on('close', (code) => {
      const endedAt = performance.now()
      if (code !== 0) reject(new Error(`node ${args.join(' ')} exited with ${code}: ${stderr}`))
      else if (isMark && markedAt === 0) reject(new Error(`node ${args.join(' ')} never printed its mark`))
      else resolve((isMark ? markedAt : endedAt) - t0)
    })
  })
}

/** The floor: spawn to its one line, or to its exit. */
function plainNode(until: 'line' | 'exit'): Promise<number> {
  return spawnTimed(
    ['-e', 'process.stdout.write("x\\n")'],
    process.env,
    until === 'line' ? () => true : undefined,
  )
}

async function lanesRunToCreated(workspace: string, sessionsDir: string): Promise<number> {
  const model = await startScriptedModel({ scenario: { turns: [{ blocks: [{ text: 'done' }] }] } })
  try {
    return await spawnTimed(
      [cliEntry, 'run', '--workspace', workspace, '--task', 'look', '--sessions-dir', sessionsDir],
      { ...process.env, ANTHROPIC_API_KEY: 'bench', ANTHROPIC_BASE_URL: model.baseUrl },
      (line) => (JSON.parse(line) as { type: string }).type === 'session.created',
    )
  } finally {
    await model.close()
  }
}

/** Each side's times over `RUNS` runs, the order of the two swapped every run, after one warm-up run of each. */
async function alternate(a: () => Promise<number>, b: () => Promise<number>): Promise<[number[], number[]]> {
  await a()
  await b()
  const times: [number[], number[]] = [[], []]
  for (let i = 0; i < RUNS; i++) {
    for (const side of i % 2 === 0 ? [0, 1] : [1, 0])
      times[side as 0 | 1].push(await (side === 0 ? a() : b()))
  }
  return times
}

const spread = (xs: number[]): [number, number] => [percentile(xs, 25), percentile(xs, 75)]

export const benchmarks: Benchmark[] = [
  {
    name: 'startup',
    async run(): Promise<BenchResult[]> {
      if (!existsSync(built)) {
        process.stderr.write('startup benchmarks skipped: build first (npx electron-vite build)\n')
        return []
      }
      const [help, helpFloor] = await alternate(
        () => spawnTimed([cliEntry, '--help'], process.env),
        () => plainNode('exit'),
      )
      const root = await mkdtemp(join(tmpdir(), 'lanes-bench-startup-'))
      try {
        const workspace = join(root, 'workspace')
        await mkdir(join(workspace, 'src'), { recursive: true })
        await writeFile(join(workspace, 'README.md'), '# demo\n')
        await writeFile(join(workspace, 'src', 'index.ts'), 'export const answer = 42\n')
        const sessions = join(root, 'sessions')
        const [created, lineFloor] = await alternate(
          () => lanesRunToCreated(workspace, sessions),
          () => plainNode('line'),
        )
        return [
          result(
            'lanes --help: spawn to exit vs plain node',
            median(help),
            median(helpFloor),
            'ms',
            undefined,
            spread(help),
          ),
          result(
            'lanes run: spawn to session.created vs plain node line',
            median(created),
            median(lineFloor),
            'ms',
            undefined,
            spread(created),
          ),
        ]
      } finally {
        await rm(root, { recursive: true, force: true })
      }
    },
  },
]
