import { existsSync, promises as fs } from 'node:fs'
import path from 'node:path'
import { sized } from './harness'

/**
 * A 100k-file source tree (about 1,000 files in quick mode) for the search benchmarks, generated once into the cache and reused. Shaped like
 * a large monorepo: nested packages of .ts/.js/.md/.json files of realistic sizes (avg ~3.5 KB), plus the
 * git-ignored bulk such trees carry (`dist/` outputs, `node_modules/`), which grep must skip.
 *
 * Known contents, so that benchmarks can choose their hit counts:
 * - `createSession(` on one line of ~2.5% of source files: a moderate number of hits (~2,000 lines).
 * - `ZQX_RARE_MARKER` in exactly RARE_FILES source files: few hits.
 */

// Bump when the layout or contents change: a cached tree of another version is regenerated.
const VERSION = 2
// Quick mode: the same shape, about 1,000 files.
const PACKAGES = sized(20, 2)
const AREAS = sized(10, 3)
const SUBS = sized(10, 3)
const FILES_PER_SUB = 45
const DIST_FILES_PER_PACKAGE = sized(250, 25)
const DEPENDENCIES = sized(100, 10)
const FILES_PER_DEPENDENCY = sized(50, 10)
export const RARE_FILES = 6
export const MODERATE_PATTERN = 'createSession\\('
export const RARE_PATTERN = 'ZQX_RARE_MARKER'
const WRITE_CONCURRENCY = 64

export interface TreeInfo {
  root: string
  files: number
}

/** Deterministic PRNG (mulberry32): the same tree on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = [
  'session',
  'user',
  'token',
  'request',
  'response',
  'handler',
  'config',
  'store',
  'event',
  'queue',
  'cache',
  'parser',
  'render',
  'layout',
  'schema',
  'record',
  'buffer',
  'stream',
  'worker',
  'client',
  'server',
  'route',
]

function identifier(rand: () => number): string {
  const a = WORDS[Math.floor(rand() * WORDS.length)] as string
  const b = WORDS[Math.floor(rand() * WORDS.length)] as string
  return a + b[0]?.toUpperCase() + b.slice(1)
}

function codeLine(rand: () => number, js: boolean): string {
  const id = identifier(rand)
  const other = identifier(rand)
  switch (Math.floor(rand() * 8)) {
    case 0:
      return js ? `const ${id} = require('./${other}')` : `import { ${id} } from './${other}'`
    case 1:
      return `export function ${id}(${other}${js ? '' : ': string'}) {`
    case 2:
      return `  const ${id} = await ${other}.load(${Math.floor(rand() * 1000)})`
    case 3:
      return `  if (!${id}) throw new Error('${other} is missing for ${id}')`
    case 4:
      return `  // ${id}: keep ${other} in sync with the ${WORDS[Math.floor(rand() * WORDS.length)]} layer`
    case 5:
      return `  return ${id}.map((item) => item.${other}).filter(Boolean)`
    case 6:
      return `}`
    default:
      return `  ${id}.${other} = ${rand() < 0.5 ? `'${other}'` : String(Math.floor(rand() * 1e6))}`
  }
}

function fileContent(rand: () => number, ext: string, moderate: boolean, rare: boolean): string {
  const lines: string[] = []
  const count = 10 + Math.floor(rand() * 150)
  const js = ext === 'js'
  for (let i = 0; i < count; i++) {
    if (ext === 'md')
      lines.push(
        i % 6 === 0
          ? `## ${identifier(rand)}`
          : `The ${identifier(rand)} talks to ${identifier(rand)} through a queue and retries on failure.`,
      )
    else if (ext === 'json') lines.push(`  "${identifier(rand)}": ${Math.floor(rand() * 1e6)},`)
    else lines.push(codeLine(rand, js))
  }
  if (moderate)
    lines.splice(Math.floor(rand() * lines.length), 0, `  const handle = createSession(${identifier(rand)})`)
  if (rare) lines.splice(Math.floor(rand() * lines.length), 0, `  // ZQX_RARE_MARKER ${identifier(rand)}`)
  if (ext === 'json') return `{\n${lines.join('\n')}\n  "end": true\n}\n`
  return lines.join('\n') + '\n'
}

function extensionFor(index: number): string {
  const bucket = index % 20
  return bucket < 12 ? 'ts' : bucket < 17 ? 'js' : bucket < 19 ? 'md' : 'json'
}

/** Every file of the tree as [relative path, content producer]. */
function* layout(): Generator<[string, (rand: () => number) => string]> {
  const rand = prng(42)
  let tsIndex = 0
  const tsPerSub = Array.from({ length: FILES_PER_SUB }, (_, f) => extensionFor(f)).filter(
    (e) => e === 'ts',
  ).length
  const rareEvery = Math.floor((PACKAGES * AREAS * SUBS * tsPerSub) / RARE_FILES)
  for (let p = 0; p < PACKAGES; p++) {
    const pkg = `packages/pkg-${String(p).padStart(2, '0')}`
    for (let a = 0; a < AREAS; a++) {
      const area = `${pkg}/src/area-${a}`
      yield [`${area}/README.md`, (r) => fileContent(r, 'md', false, false)]
      for (let s = 0; s < SUBS; s++) {
        for (let f = 0; f < FILES_PER_SUB; f++) {
          const ext = extensionFor(f)
          const moderate = ext !== 'md' && ext !== 'json' && rand() < 0.025
          const rare = ext === 'ts' && tsIndex % rareEvery === rareEvery - 1
          if (ext === 'ts') tsIndex += 1
          yield [
            `${area}/sub-${s}/file-${String(f).padStart(2, '0')}.${ext}`,
            (r) => fileContent(r, ext, moderate, rare),
          ]
        }
      }
    }
    for (let d = 0; d < DIST_FILES_PER_PACKAGE; d++)
      yield [`${pkg}/dist/chunk-${d}.js`, (r) => fileContent(r, 'js', r() < 0.05, false)]
  }
  for (let d = 0; d < DEPENDENCIES; d++)
    for (let f = 0; f < FILES_PER_DEPENDENCY; f++)
      yield [`node_modules/dep-${d}/lib/mod-${f}.js`, (r) => fileContent(r, 'js', r() < 0.05, false)]
  yield ['.gitignore', () => 'node_modules/\ndist/\n*.log\n']
  yield ['package.json', () => '{ "name": "bench-monorepo", "private": true }\n']
}

/**
 * The tree under `<cacheDir>/tree`, generated on first use. A marker written last says the tree is
 * complete: an interrupted generation is thrown away and redone.
 */
export async function ensureTree(cacheDir: string): Promise<TreeInfo> {
  const root = path.join(cacheDir, 'tree')
  const marker = path.join(cacheDir, 'tree.complete.json')
  if (existsSync(marker)) {
    const info = JSON.parse(await fs.readFile(marker, 'utf8')) as { version: number; files: number }
    if (info.version === VERSION && existsSync(root)) return { root, files: info.files }
  }
  await fs.rm(marker, { force: true })
  const staging = path.join(cacheDir, 'tree.partial')
  await fs.rm(staging, { recursive: true, force: true })
  await fs.rm(root, { recursive: true, force: true })

  const started = performance.now()
  const made = new Set<string>()
  let files = 0
  let inFlight: Array<Promise<void>> = []
  for (const [relative, produce] of layout()) {
    const abs = path.join(staging, relative)
    const dir = path.dirname(abs)
    if (!made.has(dir)) {
      await fs.mkdir(dir, { recursive: true })
      made.add(dir)
    }
    // Each file gets its own seeded generator so the content does not depend on write order.
    inFlight.push(fs.writeFile(abs, produce(prng(files + 1))))
    files += 1
    if (inFlight.length >= WRITE_CONCURRENCY) {
      await Promise.all(inFlight)
      inFlight = []
    }
  }
  await Promise.all(inFlight)
  await fs.rename(staging, root)
  await fs.writeFile(marker, JSON.stringify({ version: VERSION, files }))
  process.stderr.write(`generated ${files} files in ${Math.round(performance.now() - started)} ms\n`)
  return { root, files }
}
