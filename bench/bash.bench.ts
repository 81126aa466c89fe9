import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { runInPty } from '../src/main/tools/bash/pty-runner'
import { RollingBuffer } from '../src/main/tools/bash/rolling-buffer'
import { median, result, sized, type Benchmark, type BenchResult } from './harness'

/**
 * The bash tool's runner against plain child_process, side by side in the same run; runs alternate so a
 * shared machine's drift hits both sides alike.
 * - spawn: `true` through the pty runner (pty, `bash -c`, group bookkeeping, waiting for the output to
 *   end) against `child_process.spawn('true')` waiting for its pipes to close (the target's figure). A second
 *   figure, without a target, takes the same `bash -c` command through child_process as its baseline: what
 *   the runner adds beyond bash's own start (as the flood below compares).
 * - flood: 1 GB of text through runner + rolling buffer + log file, against the same command through
 *   child_process with stdout piped to a file. Nothing to generate up front: the command is the input.
 */

const SPAWN_RUNS = sized(40, 5)
const FLOOD_RUNS = sized(3, 1)
const FLOOD_BYTES = sized(1_000_000_000, 20_000_000)
const FLOOD_COMMAND = `yes 'The quick brown fox jumps over the lazy dog, 0123456789 ABCDEFG' | head -c ${FLOOD_BYTES}`

async function ptyRun(command: string, cwd: string, filePath?: string): Promise<number> {
  const buffer = filePath ? new RollingBuffer({ filePath }) : null
  let bytes = 0
  const run = await runInPty({
    command,
    cwd,
    timeoutMs: 600_000,
    onData: (chunk) => {
      bytes += chunk.length
      return buffer?.write(chunk)
    },
  })
  await buffer?.close()
  if (run.exitCode !== 0) throw new Error(`${command} failed in the benchmark: ${JSON.stringify(run)}`)
  return bytes
}

function childRun(file: string, args: string[], cwd: string, filePath?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    // stdin from /dev/null: on a socket (Node's default pipe), bash takes itself for an rshd session and
    // sources ~/.bashrc, which would slow the baseline down by whatever that file does.
    const child = spawn(file, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let bytes = 0
    child.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length))
    const fileDone = filePath
      ? new Promise<void>((done) => child.stdout.pipe(createWriteStream(filePath)).on('close', () => done()))
      : Promise.resolve()
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${file} exited with ${code} in the benchmark`))
      else void fileDone.then(() => resolve(bytes))
    })
  })
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const startedAt = performance.now()
  await fn()
  return performance.now() - startedAt
}

export const benchmarks: Benchmark[] = [
  {
    // Named so that `npm run bench -- spawn` (or `bash`) runs it without the minutes-long flood.
    name: 'bash spawn',
    async run(cacheDir: string): Promise<BenchResult[]> {
      const cwd = cacheDir
      const pty: number[] = []
      const child: number[] = []
      const childBash: number[] = []
      // The runner's own command line (pty-runner.ts): bash runs the stdin redirection, then the command.
      const bashArgs = ['-c', 'exec 9<&0 </dev/null; true']
      // Warm-up: load the native module and fill the caches on both sides.
      await ptyRun('true', cwd)
      await childRun('true', [], cwd)
      await childRun('bash', bashArgs, cwd)
      for (let i = 0; i < SPAWN_RUNS; i++) {
        pty.push(await timed(() => ptyRun('true', cwd)))
        child.push(await timed(() => childRun('true', [], cwd)))
        childBash.push(await timed(() => childRun('bash', bashArgs, cwd)))
      }
      return [
        result('bash spawn `true` via pty runner vs child_process.spawn', median(pty), median(child), 'ms', {
          maxRatio: 1.5,
          text: 'ratio <= 1.5',
        }),
        result(
          'bash spawn `true` via pty runner vs child_process `bash -c` (no target)',
          median(pty),
          median(childBash),
          'ms',
        ),
      ]
    },
  },
  {
    name: 'bash flood',
    async run(cacheDir: string): Promise<BenchResult[]> {
      const cwd = cacheDir
      const ours: number[] = []
      const theirs: number[] = []
      const ptyFile = join(cacheDir, 'flood-pty.log')
      const childFile = join(cacheDir, 'flood-child.log')
      try {
        for (let i = 0; i < FLOOD_RUNS; i++) {
          let bytes = 0
          const ptyMs = await timed(async () => (bytes = await ptyRun(FLOOD_COMMAND, cwd, ptyFile)))
          if (bytes !== FLOOD_BYTES) throw new Error(`the pty flood delivered ${bytes} bytes`)
          ours.push(FLOOD_BYTES / 1000 / ptyMs)
          const childMs = await timed(() => childRun('bash', ['-c', FLOOD_COMMAND], cwd, childFile))
          theirs.push(FLOOD_BYTES / 1000 / childMs)
          process.stderr.write(
            `flood ${i + 1}: pty ${ours.at(-1)?.toFixed(1)} MB/s, child ${theirs.at(-1)?.toFixed(1)} MB/s\n`,
          )
        }
      } finally {
        await rm(ptyFile, { force: true })
        await rm(childFile, { force: true })
      }
      return [
        result(
          `bash ${FLOOD_BYTES / 1e9} GB flood via pty+buffer+file vs child_process piped to file`,
          median(ours),
          median(theirs),
          'MB/s',
          {
            minValue: 25,
            text: '>= 25 MB/s',
          },
        ),
      ]
    },
  },
]
