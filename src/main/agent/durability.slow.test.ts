import { spawn } from 'node:child_process'
import { mkdtemp, readdir, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { afterAll, describe, expect, it } from 'vitest'
import { readSession, sessionPaths } from '../session/log'

// Real runs of the real loop in child processes, killed with SIGKILL at random points: every log must load,
// with every event of every fsynced turn present and at most the last (torn) line lost. The child is the real
// source bundled once with esbuild, so a hundred processes start in plain node instead of a TS loader each.

const child = fileURLToPath(new URL('./test-fixtures/run-child.ts', import.meta.url))
const KILLS = 100
const PARALLEL = 2

describe('session logs under SIGKILL during runs', () => {
  let base: string
  afterAll(async () => {
    if (base) await rm(base, { recursive: true, force: true })
  })

  it(`survive ${KILLS} kills at random points`, { timeout: 240_000 }, async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-durability-')))
    const bundle = join(process.cwd(), 'node_modules', '.cache', 'lanes-tests', 'run-child.mjs')
    await build({
      entryPoints: [child],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'error',
    })
    const sessionsDir = join(base, 'sessions')
    const synced = new Map<string, number>()

    const once = async (i: number): Promise<void> => {
      const proc = spawn(process.execPath, [bundle, join(base, `ws${i % PARALLEL}`), sessionsDir], {
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      const exited = new Promise((r) => proc.once('exit', r))
      const ready = new Promise<void>((resolve) => {
        createInterface({ input: proc.stdout! }).on('line', (line) => {
          if (line === 'ready') resolve()
          const m = /^synced (\S+) (\d+)$/.exec(line)
          if (m) synced.set(m[1]!, Math.max(synced.get(m[1]!) ?? -1, Number(m[2])))
        })
      })
      await Promise.race([ready, exited])
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 600))
      proc.kill('SIGKILL')
      await exited
    }

    for (let i = 0; i < KILLS; i += PARALLEL) {
      await Promise.all(Array.from({ length: PARALLEL }, (_, k) => once(i + k)))
    }

    const files = (await readdir(sessionsDir)).filter((f) => f.endsWith('.jsonl'))
    expect(files.length).toBeGreaterThan(KILLS / 2)
    for (const [sessionId, seq] of synced) {
      const { events, warnings } = await readSession(sessionPaths(sessionsDir, sessionId).log)
      // Only a torn last line may be lost, and it is reported.
      expect(warnings.length, `${sessionId}: ${warnings.join('; ')}`).toBeLessThanOrEqual(1)
      const seqs = events.map((e) => e.seq)
      expect(seqs, sessionId).toEqual(seqs.map((_, k) => k))
      expect(seqs.length, `${sessionId} lost synced events`).toBeGreaterThan(seq)
    }
  })
})
