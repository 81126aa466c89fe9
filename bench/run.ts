import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { cacheDir, type Benchmark, type BenchResult } from './harness'

// Every bench/*.bench.ts exports `benchmarks: Benchmark[]`. `npm run bench -- grep` runs only
// benchmarks whose name contains "grep".
const here = dirname(fileURLToPath(import.meta.url))
const filter = process.argv.slice(2)

async function main(): Promise<void> {
  const files = readdirSync(here)
    .filter((f) => f.endsWith('.bench.ts'))
    .sort()
  const all: BenchResult[] = []
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(here, file)).href)) as { benchmarks?: Benchmark[] }
    for (const b of mod.benchmarks ?? []) {
      if (filter.length > 0 && !filter.some((f) => b.name.includes(f))) continue
      process.stderr.write(`running ${b.name} ...\n`)
      const results = await b.run(cacheDir(b.name))
      for (const r of results) {
        process.stdout.write(JSON.stringify(r) + '\n')
        all.push(r)
      }
    }
  }
  const failed = all.filter((r) => r.pass === false)
  process.stderr.write(`\n${all.length} figures, ${failed.length} outside their target\n`)
  for (const r of all) {
    const mark = r.pass === undefined ? ' ' : r.pass ? '✓' : '✗'
    process.stderr.write(
      `${mark} ${r.bench.padEnd(44)} ${String(r.value).padStart(12)} ${r.unit.padEnd(6)} baseline ${String(r.baseline).padStart(12)}  ratio ${r.ratio}${r.target ? `  (${r.target})` : ''}\n`,
    )
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
