import { lstat, readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import type { Scenario, ScenarioBlock } from './scenario'

/**
 * The built-in demo (DESIGN 8): with no API key and no base URL, the scripted model plays a run built from the
 * opened folder's own files, through the real pipeline: parallel reads, a search, a write that waits for the
 * user's approval, a read-only command, a summary. The survey below only decides what the script asks for;
 * everything shown comes from the real tools at run time.
 *
 * The script cannot react to results (it is written before the run), so its texts never claim what a tool
 * returned or what the user decided.
 */

/** Paced like a real model, so the timeline is watchable. */
const PACE = { tokensPerSecond: 120, firstTokenMs: 250 } as const
const NOTE_NAMES = ['LANES_DEMO.md', 'LANES_DEMO-2.md', 'LANES_DEMO-3.md']
/** The survey never walks more than this many entries, whatever the folder's size. */
const MAX_ENTRIES = 2000
const MAX_DEPTH = 4
const READ_LIMIT = 80
const SKIP_DIRS = new Set([
  'node_modules',
  'dist',
  'build',
  'out',
  'target',
  'vendor',
  'coverage',
  '__pycache__',
  'venv',
  'bin',
  'obj',
])
const LANGUAGES: Record<string, string> = {
  ts: 'TypeScript',
  tsx: 'TypeScript',
  js: 'JavaScript',
  jsx: 'JavaScript',
  mjs: 'JavaScript',
  cjs: 'JavaScript',
  py: 'Python',
  go: 'Go',
  rs: 'Rust',
  java: 'Java',
  kt: 'Kotlin',
  rb: 'Ruby',
  php: 'PHP',
  c: 'C',
  h: 'C',
  cpp: 'C++',
  cc: 'C++',
  hpp: 'C++',
  cs: 'C#',
  swift: 'Swift',
  scala: 'Scala',
  sh: 'shell',
  lua: 'Lua',
  dart: 'Dart',
  ex: 'Elixir',
  exs: 'Elixir',
  vue: 'Vue',
  svelte: 'Svelte',
  zig: 'Zig',
}
const MANIFESTS = [
  'package.json',
  'pyproject.toml',
  'Cargo.toml',
  'go.mod',
  'pom.xml',
  'build.gradle',
  'build.gradle.kts',
  'Gemfile',
  'composer.json',
  'requirements.txt',
  'Makefile',
]
const SOURCE_DIRS = new Set(['src', 'lib', 'app', 'cmd', 'pkg', 'source', 'sources'])
const ENTRY_NAMES = new Set(['index', 'main', 'app', 'lib', 'mod', 'server', 'cli'])

interface Survey {
  readme?: string
  readmeTitle?: string
  manifest?: string
  manifestSummary?: string
  source?: string
  /** Dominant code extension and how many files have it (within the walk's budget). */
  language?: { ext: string; name: string; files: number }
  filesSeen: number
  truncated: boolean
  git: boolean
  /** Where the note goes, and whether a file is already there (it must be read before it is overwritten). */
  note: { path: string; exists: boolean }
}

export async function buildDemoScenario(workspaceRoot: string): Promise<Scenario> {
  const survey = await surveyWorkspace(workspaceRoot)
  return {
    description: 'Built-in demo: explores the opened folder while no API key is configured.',
    turns: [exploreTurn(survey), noteTurn(survey), closingTurn(survey)],
  }
}

function exploreTurn(s: Survey): Scenario['turns'][number] {
  const reads = [s.readme, s.manifest, s.source].filter((p): p is string => p !== undefined)
  const blocks: ScenarioBlock[] = [
    {
      text:
        'Hello! This is the **built-in demo** of Lanes. No API key is configured, so a scripted model is answering ' +
        'instead of Claude. It uses the same tools, timeline and approvals as a real run, on your real files.\n\n' +
        'To work with Claude, add your Anthropic API key in **Settings**, or set the `ANTHROPIC_API_KEY` environment ' +
        'variable and restart Lanes.\n\n' +
        (reads.length > 0
          ? `First I will look around: read ${reads.map((p) => `\`${p}\``).join(', ')} and search the code. These calls only read, so they run in parallel, without asking you.`
          : 'This folder looks empty, so there is little to read. I will still search it, to show how read-only calls run in parallel without asking you.'),
    },
    ...reads.map((path) => ({ tool: 'read_file', input: { path, limit: READ_LIMIT } })),
  ]
  if (s.note.exists) blocks.push({ tool: 'read_file', input: { path: s.note.path } })
  const dir = s.source?.includes('/') ? s.source.split('/')[0] : undefined
  const ext = s.language?.ext
  blocks.push({ tool: 'glob', input: { pattern: ext ? `${dir ? `${dir}/` : ''}**/*.${ext}` : '*' } })
  blocks.push({ tool: 'grep', input: { pattern: 'TODO|FIXME', ...(dir ? { path: dir } : {}) } })
  return { blocks, stop: 'tool_use', ...PACE }
}

function noteTurn(s: Survey): Scenario['turns'][number] {
  const found: string[] = []
  if (s.readme) found.push(`- \`${s.readme}\`${s.readmeTitle ? `: "${s.readmeTitle}"` : ''}`)
  if (s.manifest) found.push(`- \`${s.manifest}\`${s.manifestSummary ? `: ${s.manifestSummary}` : ''}`)
  if (s.source) found.push(`- \`${s.source}\`: a ${s.language?.name ?? 'source'} file`)
  if (s.language) {
    const count = `${s.language.files}${s.truncated ? '+' : ''}`
    found.push(`- mostly ${s.language.name}: ${count} \`.${s.language.ext}\` file(s) seen`)
  }
  const findings =
    found.length > 0 ? found.join('\n') : '- nothing yet: the folder was empty when the demo looked'
  const note =
    '# Lanes demo\n\n' +
    'This note was written by the built-in demo of Lanes (a scripted model: no API key was configured).\n\n' +
    `## What it looked at\n\n${findings}\n\n` +
    'It is safe to delete this file; nothing uses it.\n'
  const command = s.git
    ? { command: 'git status', description: 'Show the working tree, with the new note' }
    : { command: 'ls', description: 'List the folder, with the new note' }
  return {
    blocks: [
      {
        text:
          `${found.length > 0 ? `Here is what I found:\n\n${findings}` : 'The folder is empty so far.'}\n\n` +
          `Next I will write a short note, \`${s.note.path}\`, with these findings. Writing a file needs your approval: ` +
          'the review screen shows the exact change as a diff, and you can approve it, or reject it with a note. ' +
          `Then I will run \`${command.command}\`, a read-only command that runs without asking.`,
      },
      { tool: 'write_file', input: { path: s.note.path, content: note } },
      { tool: 'bash', input: command },
    ],
    stop: 'tool_use',
    ...PACE,
  }
}

function closingTurn(s: Survey): Scenario['turns'][number] {
  const text =
    'That is the whole demo. What you saw:\n\n' +
    '- the read-only calls (reads, glob, grep) ran **in parallel**, in one lane, without asking;\n' +
    `- the write of \`${s.note.path}\` **waited for your approval**: if you approved it, the note is in the folder ` +
    '(delete it whenever you like); if you rejected it, nothing was written;\n' +
    '- the command ran **after** the write, in order, because commands and writes never run at the same time.\n\n' +
    'Every step is saved in the session log: open the session from the list to **replay** it.\n\n' +
    'To give Claude a real task, add your Anthropic API key in **Settings** (or set `ANTHROPIC_API_KEY`).'
  return { blocks: [{ text }], stop: 'end_turn', ...PACE }
}

/** What is in the folder, within a fixed budget; any error just means less is known. */
async function surveyWorkspace(root: string): Promise<Survey> {
  const survey: Survey = {
    filesSeen: 0,
    truncated: false,
    git: false,
    note: { path: 'LANES_DEMO.md', exists: false },
  }
  const top = await readdir(root, { withFileTypes: true }).catch(() => [])
  const topFiles = new Set(top.filter((e) => e.isFile()).map((e) => e.name))
  survey.git = top.some((e) => e.name === '.git')

  survey.readme = [...topFiles].sort().find((name) => /^readme(\.(md|markdown|txt|rst))?$/i.test(name))
  if (survey.readme) survey.readmeTitle = await readmeTitle(join(root, survey.readme))
  survey.manifest = MANIFESTS.find((name) => topFiles.has(name))
  if (survey.manifest === 'package.json')
    survey.manifestSummary = await packageSummary(join(root, 'package.json'))

  for (const name of NOTE_NAMES) {
    const stats = await lstat(join(root, name)).catch(() => null)
    if (!stats) {
      survey.note = { path: name, exists: false }
      break
    }
    if (stats.isFile() && stats.nlink === 1) {
      survey.note = { path: name, exists: true }
      break
    }
  }

  // Breadth-first, so the files nearest the root are seen first and a huge tree costs the same as a small one.
  const counts = new Map<string, number>()
  const candidates: { path: string; ext: string; score: number }[] = []
  let queue: { rel: string; depth: number }[] = [{ rel: '', depth: 0 }]
  let seen = 0
  while (queue.length > 0 && !survey.truncated) {
    const next: typeof queue = []
    for (const dir of queue) {
      const entries = await readdir(join(root, dir.rel), { withFileTypes: true }).catch(() => [])
      entries.sort((a, b) => a.name.localeCompare(b.name))
      for (const entry of entries) {
        if (++seen > MAX_ENTRIES) {
          survey.truncated = true
          break
        }
        const rel = dir.rel ? `${dir.rel}/${entry.name}` : entry.name
        if (entry.isDirectory()) {
          if (!entry.name.startsWith('.') && !SKIP_DIRS.has(entry.name) && dir.depth + 1 < MAX_DEPTH) {
            next.push({ rel, depth: dir.depth + 1 })
          }
          continue
        }
        if (!entry.isFile()) continue
        survey.filesSeen++
        const ext = extname(entry.name).slice(1).toLowerCase()
        if (!LANGUAGES[ext] || entry.name.startsWith('.')) continue
        counts.set(ext, (counts.get(ext) ?? 0) + 1)
        const stem = entry.name.slice(0, entry.name.length - ext.length - 1).toLowerCase()
        const inSourceDir = SOURCE_DIRS.has(rel.split('/')[0] ?? '') && rel.includes('/')
        candidates.push({
          path: rel,
          ext,
          score: (inSourceDir ? 0 : 10) + (ENTRY_NAMES.has(stem) ? 0 : 5) + dir.depth,
        })
      }
      if (survey.truncated) break
    }
    queue = next
  }

  const dominant = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]
  if (dominant) {
    const [ext, files] = dominant
    survey.language = { ext, name: LANGUAGES[ext] ?? ext, files }
    // The most typical file of the main language: in a source folder, named like an entry point, near the root.
    const best = candidates
      .map((c) => ({ ...c, score: c.score + (c.ext === ext ? 0 : 3) }))
      .sort((a, b) => a.score - b.score || a.path.localeCompare(b.path))[0]
    survey.source = best?.path
  }
  return survey
}

async function readHead(path: string): Promise<string | undefined> {
  try {
    const stats = await lstat(path)
    if (!stats.isFile() || stats.size > 1024 * 1024) return undefined
    return (await readFile(path, 'utf8')).slice(0, 16 * 1024)
  } catch {
    return undefined
  }
}

async function readmeTitle(path: string): Promise<string | undefined> {
  const text = await readHead(path)
  const line = text
    ?.split(/\r?\n/)
    .map((l) => l.replace(/^#+\s*/, '').trim())
    .find((l) => l.length > 0 && !l.startsWith('<') && !l.startsWith('[!['))
  return line ? clip(line, 80) : undefined
}

async function packageSummary(path: string): Promise<string | undefined> {
  const text = await readHead(path)
  if (!text) return undefined
  try {
    const pkg = JSON.parse(text) as { name?: unknown; description?: unknown; scripts?: unknown }
    const parts: string[] = []
    if (typeof pkg.name === 'string') parts.push(`package "${clip(pkg.name, 60)}"`)
    if (typeof pkg.description === 'string' && pkg.description.trim())
      parts.push(clip(pkg.description.trim(), 100))
    if (typeof pkg.scripts === 'object' && pkg.scripts !== null) {
      const scripts = Object.keys(pkg.scripts).slice(0, 6)
      if (scripts.length > 0) parts.push(`scripts: ${scripts.join(', ')}`)
    }
    return parts.length > 0 ? parts.join('; ') : undefined
  } catch {
    return undefined
  }
}

function clip(text: string, max: number): string {
  // Backticks and newlines would break the markdown the summary is quoted in.
  const flat = text.replace(/[`\r\n\t]+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}
