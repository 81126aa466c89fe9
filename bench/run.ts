import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { cacheDir, QUICK, type Benchmark, type BenchResult } from './harness'

// Every bench/*.bench.ts exports `benchmarks: Benchmark[]`. `npm run bench -- grep` runs only benchmarks whose
// name contains "grep"; `--quick` runs them at small sizes without targets (see QUICK in harness.ts).
// A benchmark that throws, or prints a figure that is not a number, is reported and the others still run; the exit
// code is then 1. A figure outside its target is marked but does not fail the run (the machine may be busy).
const here = dirname(fileURLToPath(import.meta.url))
const filter = process.argv.slice(2).filter((arg) => arg !== '--quick')

async function main(): Promise<number> {
  const files = readdirSync(here)
    .filter((f) => f.endsWith('.bench.ts'))
    .sort()
  const all: BenchResult[] = []
  const broken: string[] = []
  let ran = 0
  const started = performance.now()
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(here, file)).href)) as { benchmarks?: Benchmark[] }
    if (!Array.isArray(mod.benchmarks)) {
      broken.push(`${file}: exports no \`benchmarks\` list`)
      continue
    }
    for (const b of mod.benchmarks) {
      if (filter.length > 0 && !filter.some((f) => b.name.includes(f))) continue
      ran += 1
      process.stderr.write(`running ${b.name}${QUICK ? ' (quick)' : ''} ...\n`)
      const t0 = performance.now()
      try {
        const results = await b.run(cacheDir(b.name))
        for (const r of results) {
          if (!Number.isFinite(r.value) || Number.isNaN(r.baseline))
            broken.push(`${b.name}: "${r.bench}" is not a number (value ${r.value}, baseline ${r.baseline})`)
          // Quick mode's sizes are too small for the targets to mean anything.
          const shown = QUICK ? { ...r, target: undefined, pass: undefined } : r
          process.stdout.write(JSON.stringify(shown) + '\n')
          all.push(shown)
        }
      } catch (error) {
        broken.push(`${b.name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
      }
      process.stderr.write(`  ${b.name}: ${Math.round(performance.now() - t0)} ms\n`)
    }
  }
  if (filter.length > 0 && ran === 0) broken.push(`no benchmark's name contains ${filter.join(' or ')}`)
  const failed = all.filter((r) => r.pass === false)
  process.stderr.write(
    `\n${all.length} figures, ${failed.length} outside their target, in ${Math.round((performance.now() - started) / 1000)} s${QUICK ? ' (quick mode: sizes too small to judge, targets not checked)' : ''}\n`,
  )
  for (const r of all) {
    const mark = r.pass === undefined ? ' ' : r.pass ? '✓' : '✗'
    process.stderr.write(
      `${mark} ${r.bench.padEnd(44)} ${String(r.value).padStart(12)} ${r.unit.padEnd(6)}${r.range ? ` [${r.range[0]}..${r.range[1]}]` : ''} baseline ${String(r.baseline).padStart(12)}  ratio ${r.ratio}${r.target ? `  (${r.target})` : ''}\n`,
    )
  }
  if (broken.length > 0) {
    process.stderr.write(
      `\n${broken.length} benchmark(s) broken:\n${broken.map((b) => `- ${b}`).join('\n')}\n`,
    )
    return 1
  }
  return 0
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
