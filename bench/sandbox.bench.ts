import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startScriptedModel } from '../src/main/agent/scripted-model'
import { workspaceSecrets } from '../src/main/secrets/workspace-secrets'
import { runInPty } from '../src/main/tools/bash/pty-runner'
import {
  prepareCommandSandbox,
  sandboxSupport,
  type SandboxLaunch,
} from '../src/main/tools/bash/sandbox/launch'
import { ripgrepArgs } from '../src/main/tools/grep/ripgrep'
import { ensureTree, RARE_PATTERN } from './gen-tree'
import { median, QUICK, result, sized, type Benchmark, type BenchResult } from './harness'

/**
 * The sandbox and the exit, side by side in one run (issue 12, points 1 and 9); runs alternate so a shared
 * machine's drift hits both sides alike.
 * - `true` in the sandbox through the runner, against bubblewrap run directly with the same arguments: what
 *   the runner adds to the sandbox itself.
 * - the same sandboxed `true` against the unsandboxed runner: what the sandbox adds to every command.
 * - `git status` on the 100k-file tree (a git repository made once in the cache), sandboxed and not, both
 *   through the runner: the masks are revalidated on every command.
 * - `lanes run` (the built CLI) with one grep of the tree and one command: how long the process lives after `run.finished`,
 *   against a node process that prints a line and exits; and the grep's tool time in that fresh process,
 *   against ripgrep run directly with the same arguments.
 */

const RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(21, 2))
const CLI_RUNS = Number(process.env.LANES_BENCH_RUNS ?? sized(9, 1))
const here = fileURLToPath(new URL('.', import.meta.url))
const cliEntry = join(here, '..', 'bin', 'lanes.js')
const built = join(here, '..', 'out', 'main', 'cli.js')

async function runner(command: string, cwd: string, launch?: SandboxLaunch): Promise<void> {
  const run = await runInPty({
    command,
    cwd,
    timeoutMs: 120_000,
    onData: () => undefined,
    ...(launch ? { launch } : {}),
  })
  if (run.exitCode !== 0) throw new Error(`${command} failed in the benchmark: ${JSON.stringify(run)}`)
}

/**
 * bubblewrap with the runner's own arguments, its output read to the end as any caller must (the output ends
 * when the sandbox's last process is gone, after the namespaces are torn down), its status on a pipe.
 */
function direct(launch: SandboxLaunch, command: string, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(launch.program, [...launch.args, 'bash', '-c', command], {
      cwd,
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    })
    for (const stream of child.stdio.slice(1)) (stream as NodeJS.ReadableStream | null)?.resume()
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`bwrap exited with ${code}`))))
  })
}

async function alternate(
  runs: number,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
): Promise<[number, number]> {
  await a()
  await b()
  const times: [number[], number[]] = [[], []]
  for (let i = 0; i < runs; i++) {
    for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const t0 = performance.now()
      await (side === 0 ? a() : b())
      times[side as 0 | 1].push(performance.now() - t0)
    }
  }
  return [median(times[0]), median(times[1])]
}

/** The tree as a git repository with everything committed, made once. */
export function ensureRepository(root: string): void {
  if (existsSync(join(root, '.git'))) return
  const git = (...args: string[]): void => {
    const done = spawnSync('git', ['-c', 'user.email=b@b', '-c', 'user.name=b', ...args], {
      cwd: root,
      stdio: 'ignore',
    })
    if (done.status !== 0) throw new Error(`git ${args[0]} failed in the benchmark tree`)
  }
  git('init', '-q')
  git('add', '-A')
  // Without gc.auto=0, the commit would start `git gc --auto` in the background for the 100k loose objects: a minute
  // of both cores packing them while the benchmarks that follow run. The repository is packed here instead, once,
  // before any figure is taken, as a repository in use would be.
  git('-c', 'gc.auto=0', 'commit', '-qm', 'tree')
  git('gc', '-q')
}

interface CliRun {
  /** From the run.finished line to the process's exit. */
  exitMs: number
  /** tool.started to tool.finished of the grep, as the events record them. */
  grepMs: number
}

async function lanesRun(workspace: string, sessionsDir: string): Promise<CliRun> {
  const model = await startScriptedModel({
    scenario: {
      turns: [
        // A command too: the exit after one is what a run usually ends with. The first answer comes after 1.5 s,
        // as a real model's first token does: the workspace's secret scan (about 0.9 s on the 100k-file tree,
        // started with the session) runs meanwhile, as it does for a user, instead of inside the grep's time.
        {
          firstTokenMs: 1500,
          blocks: [
            { tool: 'grep', input: { pattern: RARE_PATTERN } },
            { tool: 'bash', input: { command: 'ls' } },
          ],
        },
        { blocks: [{ text: 'done' }] },
      ],
    },
  })
  try {
    const child = spawn(
      process.execPath,
      [cliEntry, 'run', '--workspace', workspace, '--task', 'find it', '--sessions-dir', sessionsDir],
      {
        env: { ...process.env, ANTHROPIC_API_KEY: 'bench', ANTHROPIC_BASE_URL: model.baseUrl },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let pending = ''
    let finishedAt = 0
    let grepId = ''
    const at: Record<string, number> = {}
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString()
      let nl: number
      while ((nl = pending.indexOf('\n')) !== -1) {
        const event = JSON.parse(pending.slice(0, nl)) as {
          type: string
          at: number
          callId?: string
          name?: string
        }
        pending = pending.slice(nl + 1)
        if (event.type === 'tool.queued' && event.name === 'grep') grepId = event.callId ?? ''
        if (event.callId !== undefined && event.callId === grepId) at[event.type] = event.at
        if (event.type === 'run.finished') finishedAt = performance.now()
      }
    })
    // 'exit' may come before the last output is read: the time of each is taken, then both awaited.
    let exitedAt = 0
    const code = await new Promise<number | null>((resolve) => {
      child.on('exit', (exitCode) => {
        exitedAt = performance.now()
        child.on('close', () => resolve(exitCode))
      })
    })
    if (code !== 0 || finishedAt === 0) throw new Error(`lanes run failed in the benchmark (exit ${code})`)
    return {
      exitMs: Math.max(0, exitedAt - finishedAt),
      grepMs: (at['tool.finished'] ?? 0) - (at['tool.started'] ?? 0),
    }
  } finally {
    await model.close()
  }
}

/** A node process that prints a line and exits: the least any process takes from its last line to its end. */
async function plainExit(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("x\\n")'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let lineAt = 0
  child.stdout.once('data', () => (lineAt = performance.now()))
  await new Promise((resolve) => child.on('exit', resolve))
  return performance.now() - lineAt
}

function ripgrep(rgPath: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(rgPath, args, { cwd, stdio: ['ignore', 'pipe', 'ignore'] })
    child.stdout.resume()
    child.on('error', reject)
    child.on('close', () => resolve())
  })
}

export const benchmarks: Benchmark[] = [
  {
    name: 'sandbox',
    async run(cacheDir: string): Promise<BenchResult[]> {
      const support = sandboxSupport()
      if (!support.available) {
        process.stderr.write(`sandbox benchmarks skipped: ${support.reason}\n`)
        return []
      }
      const out: BenchResult[] = []
      const small = await mkdtemp(join(tmpdir(), 'lanes-bench-sandbox-'))
      try {
        // As a command's sandbox is prepared (bash.ts): the masks from the workspace's watched index.
        const launch = async () => {
          const prepared = await prepareCommandSandbox({
            mode: 'read-only',
            workspace: small,
            network: false,
          })
          if ('error' in prepared) throw new Error(prepared.error)
          return prepared
        }
        const fixed = await launch()
        const [viaRunner, bwrap] = await alternate(
          RUNS,
          async () => runner('true', small, await launch()),
          () => direct(fixed, 'true', small),
        )
        out.push(
          result('sandboxed `true` via runner vs bwrap direct', viaRunner, bwrap, 'ms', {
            maxRatio: 1.3,
            text: 'ratio <= 1.3',
          }),
        )
        const [sandboxed, plain] = await alternate(
          RUNS,
          async () => runner('true', small, await launch()),
          () => runner('true', small),
        )
        out.push(
          result('sandboxed `true` vs unsandboxed runner (added ms)', sandboxed - plain, plain, 'ms', {
            maxValue: 25,
            text: 'added < 25 ms (aim)',
          }),
        )
      } finally {
        await rm(small, { recursive: true, force: true })
      }

      const tree = await ensureTree(cacheDir)
      ensureRepository(tree.root)
      const treeLaunch = async () => {
        const prepared = await prepareCommandSandbox({
          mode: 'read-only',
          workspace: tree.root,
          network: false,
        })
        if ('error' in prepared) throw new Error(prepared.error)
        return prepared
      }
      const [gitSandboxed, gitPlain] = await alternate(
        Math.max(5, Math.round(RUNS / 2)),
        async () => runner('git status --porcelain', tree.root, await treeLaunch()),
        () => runner('git status --porcelain', tree.root),
      )
      out.push(
        result(`git status (${tree.files} files) sandboxed vs not`, gitSandboxed, gitPlain, 'ms', {
          maxRatio: 1.2,
          text: 'ratio <= 1.2',
        }),
      )
      // The masks a command gets on this tree: from the watched index, against the walk it replaced (a `stat` per
      // folder, still what runs where a folder cannot be watched). Synchronous work on the main thread either way.
      const secrets = workspaceSecrets(tree.root)
      await secrets.ready()
      const [watched, statWalk] = await alternate(
        RUNS,
        () => secrets.freshMasks(),
        async () => secrets.masks(),
      )
      out.push(
        result(
          `sandbox masks before a command (${tree.files} files): watched vs stat per folder`,
          watched,
          statWalk,
          'ms',
        ),
      )

      if (!existsSync(built)) {
        process.stderr.write('lanes run benchmarks skipped: build first (npx electron-vite build)\n')
        return out
      }
      const sessions = await mkdtemp(join(tmpdir(), 'lanes-bench-sessions-'))
      try {
        const { rgPath } = await import('@vscode/ripgrep')
        const rgArgs = ripgrepArgs({
          pattern: RARE_PATTERN,
          include: undefined,
          caseInsensitive: false,
          target: '.',
        })
        const exits: number[] = []
        const plainExits: number[] = []
        const greps: number[] = []
        const rgs: number[] = []
        // A warm-up run (page cache, the CLI's compiled code), left out in quick mode: each run starts a process.
        if (!QUICK) await lanesRun(tree.root, sessions)
        for (let i = 0; i < CLI_RUNS; i++) {
          const cli = await lanesRun(tree.root, sessions)
          exits.push(cli.exitMs)
          greps.push(cli.grepMs)
          plainExits.push(await plainExit())
          const t0 = performance.now()
          await ripgrep(rgPath, rgArgs, tree.root)
          rgs.push(performance.now() - t0)
        }
        out.push(
          result(
            'lanes run: exit after run.finished vs a plain node exit',
            median(exits),
            median(plainExits),
            'ms',
            {
              maxValue: 50,
              text: '<= 50 ms median',
            },
          ),
          result('lanes run: one grep (fresh process) vs rg direct', median(greps), median(rgs), 'ms', {
            maxRatio: 1.1,
            text: 'ratio <= 1.1',
          }),
        )
      } finally {
        await rm(sessions, { recursive: true, force: true })
      }
      return out
    },
  },
]
