import { lstat, readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import type { Scenario, ScenarioBlock, ScenarioTurn } from './scenario'
import { own } from '../../shared/own'

/**
 * The built-in demo (DESIGN 8): with no API key and no base URL, the scripted model plays a run built from the
 * opened folder's own files and the task the user typed, through the real pipeline: parallel reads (of the
 * files the task names, else the project's main files), a search for the task's words, a write that waits for
 * the user's approval, a read-only command, a summary. Every task, follow-ups included, gets its own run: the
 * responder (`demoResponder`) reads the conversation of each request to know the task and how far it got.
 *
 * The survey only decides what the script asks for; everything shown comes from the real tools at run time, so
 * the texts never claim what a tool returned. The note is not rewritten when it would not change (no approval
 * asked for a change that changes nothing).
 */

/** Where the user runs Lanes: what "switch to Claude" means there. */
export type DemoHost = 'app' | 'web' | 'cli'

const SWITCH_TO_CLAUDE: Record<DemoHost, string> = {
  app: 'To work with Claude, add your Anthropic API key in **Settings** (the ⚙ button, top left); the next task you send uses it.',
  web:
    'To work with Claude, add your Anthropic API key in **Settings** (the ⚙ button, top left), or stop `lanes web` ' +
    'and start it again with the `ANTHROPIC_API_KEY` environment variable set.',
  cli:
    'To work with Claude, run `lanes run` again with the `ANTHROPIC_API_KEY` environment variable set ' +
    '(or `--base-url` for a compatible server).',
}

export interface DemoTask {
  task?: string
  host?: DemoHost
  /** A follow-up in the same session: no introduction again. */
  followUp?: boolean
}

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
  note: { path: string; exists: boolean; content?: string }
  /** Paths of the files seen (within the walk's budget), for the files a task names. */
  files: string[]
}

export async function buildDemoScenario(workspaceRoot: string, demo: DemoTask = {}): Promise<Scenario> {
  const survey = await surveyWorkspace(workspaceRoot)
  const task = demo.task?.trim() ? clip(demo.task.trim(), 160) : undefined
  const ctx: Ctx = { s: survey, task, host: demo.host ?? 'app', followUp: demo.followUp ?? false }
  const note = noteContent(ctx)
  return {
    description: 'Built-in demo: explores the opened folder while no API key is configured.',
    turns: [exploreTurn(ctx), noteTurn(ctx, note), closingTurn(ctx, survey.note.content === note)],
  }
}

/**
 * The demo's answer to each request of a session, from its conversation: the latest task the user typed and how
 * many answers it has had. A task's run is planned once, at its first request, so its steps fit together.
 */
export function demoResponder(
  workspaceRoot: string,
  host: DemoHost,
): (request: unknown) => Promise<ScenarioTurn> {
  const plans = new Map<string, Promise<Scenario>>()
  return async (request) => {
    const { task, taskAt, step, followUp } = readConversation(request)
    const key = `${taskAt}\u0000${task}`
    let plan = plans.get(key)
    if (!plan) {
      plan = buildDemoScenario(workspaceRoot, { task, host, followUp })
      plans.set(key, plan)
    }
    const turns = (await plan).turns
    return (
      turns[step] ?? {
        blocks: [
          { text: 'That is all the demo does for this task. Type another task below to see it again.' },
        ],
        stop: 'end_turn',
      }
    )
  }
}

/** The latest message the user typed (one without tool results), where it is, and the answers since. */
function readConversation(request: unknown): {
  task: string
  taskAt: number
  step: number
  followUp: boolean
} {
  const messages = (request as { messages?: unknown }).messages
  const list = Array.isArray(messages) ? (messages as { role?: unknown; content?: unknown }[]) : []
  for (let i = list.length - 1; i >= 0; i--) {
    const m = list[i]
    if (m?.role !== 'user') continue
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content
    if (!Array.isArray(blocks)) continue
    const parts = blocks as { type?: unknown; text?: unknown }[]
    if (parts.some((b) => b.type === 'tool_result')) continue
    const task = parts
      .filter((b) => b.type === 'text' && typeof b.text === 'string')
      .map((b) => b.text as string)
      .join('\n')
    const assistant = (from: number, to: number): number =>
      list.slice(from, to).filter((x) => x?.role === 'assistant').length
    return { task, taskAt: i, step: assistant(i + 1, list.length), followUp: assistant(0, i) > 0 }
  }
  return { task: '', taskAt: -1, step: 0, followUp: false }
}

interface Ctx {
  s: Survey
  task?: string
  host: DemoHost
  followUp: boolean
}

/** Words of the task worth looking for: not too short, not filler. */
export function taskWords(task: string | undefined): string[] {
  if (!task) return []
  const words = task.toLowerCase().match(/[a-z0-9_][a-z0-9_.-]*[a-z0-9_]/g) ?? []
  return [...new Set(words.filter((w) => w.length >= 3 && !STOP_WORDS.has(w)))].slice(0, 5)
}

const STOP_WORDS = new Set(
  (
    'the and for with from this that what which where when how why can could would should will please make add ' +
    "fix change update show tell find look into about all any are was were has have had not but its it's our your " +
    'you use using there their them then than also just some more most file files code project folder'
  ).split(' '),
)

/** Files whose path contains one of the task's words, code first, at most three. */
function filesNamedBy(s: Survey, words: string[]): string[] {
  if (words.length === 0) return []
  const hits = s.files.filter((f) => words.some((w) => f.toLowerCase().includes(w)))
  const code = (f: string): number => (own(LANGUAGES, extname(f).slice(1).toLowerCase()) ? 0 : 1)
  return hits.sort((a, b) => code(a) - code(b) || a.length - b.length || a.localeCompare(b)).slice(0, 3)
}

const escapeRegex = (word: string): string => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

function exploreTurn(ctx: Ctx): Scenario['turns'][number] {
  const { s, task } = ctx
  const words = taskWords(task)
  const named = filesNamedBy(s, words)
  const reads =
    named.length > 0 ? named : [s.readme, s.manifest, s.source].filter((p): p is string => p !== undefined)
  const intro = ctx.followUp
    ? ''
    : 'Hello! This is the **built-in demo** of Lanes. No API key is configured, so a scripted model is answering ' +
      'instead of Claude: it cannot really do your task, but it shows how Lanes works, with the same tools, ' +
      `timeline and approvals as a real run, on your real files.\n\n${SWITCH_TO_CLAUDE[ctx.host]}\n\n`
  const asked = task ? `You asked: “${task}”. ` : ''
  const plan =
    reads.length > 0
      ? named.length > 0
        ? `Your task names ${named.map((p) => `\`${p}\``).join(', ')}, so I will read ${named.length === 1 ? 'it' : 'them'}`
        : `I will read ${reads.map((p) => `\`${p}\``).join(', ')} to see what this project is`
      : 'This folder looks empty, so there is little to read. I will still search it'
  const search = words.length > 0 ? ` and search the code for ${words.map((w) => `“${w}”`).join(', ')}` : ''
  const blocks: ScenarioBlock[] = [
    {
      text: `${intro}${asked}${plan}${search}. These calls only read, so they run in parallel, without asking you.`,
    },
    ...reads.map((path) => ({ tool: 'read_file', input: { path, limit: READ_LIMIT } })),
  ]
  if (s.note.exists) blocks.push({ tool: 'read_file', input: { path: s.note.path } })
  const dir = s.source?.includes('/') ? s.source.split('/')[0] : undefined
  const ext = s.language?.ext
  blocks.push({ tool: 'glob', input: { pattern: ext ? `${dir ? `${dir}/` : ''}**/*.${ext}` : '*' } })
  blocks.push({
    tool: 'grep',
    input:
      words.length > 0
        ? { pattern: words.map(escapeRegex).join('|'), case_insensitive: true }
        : { pattern: 'TODO|FIXME', ...(dir ? { path: dir } : {}) },
  })
  return { blocks, stop: 'tool_use', ...PACE }
}

function findings(s: Survey): string[] {
  const found: string[] = []
  if (s.readme) found.push(`- \`${s.readme}\`${s.readmeTitle ? `: "${s.readmeTitle}"` : ''}`)
  if (s.manifest) found.push(`- \`${s.manifest}\`${s.manifestSummary ? `: ${s.manifestSummary}` : ''}`)
  if (s.source) found.push(`- \`${s.source}\`: a ${s.language?.name ?? 'source'} file`)
  if (s.language) {
    const count = `${s.language.files}${s.truncated ? '+' : ''}`
    found.push(`- mostly ${s.language.name}: ${count} \`.${s.language.ext}\` file(s) seen`)
  }
  return found
}

function findingsText(s: Survey): string {
  const found = findings(s)
  return found.length > 0 ? found.join('\n') : '- nothing yet: the folder was empty when the demo looked'
}

/** The note's content depends only on the task and the folder, so a repeat of the same task changes nothing. */
function noteContent({ s, task }: Ctx): string {
  return (
    '# Lanes demo\n\n' +
    'This note was written by the built-in demo of Lanes (a scripted model: no API key was configured).\n\n' +
    (task ? `## The task\n\n${task}\n\n` : '') +
    `## What it looked at\n\n${findingsText(s)}\n\n` +
    'It is safe to delete this file; nothing uses it.\n'
  )
}

function noteTurn({ s }: Ctx, note: string): Scenario['turns'][number] {
  const found = findings(s)
  const command = s.git
    ? { command: 'git status', description: 'Show the working tree, with the new note' }
    : { command: 'ls', description: 'List the folder, with the new note' }
  const summary =
    found.length > 0 ? `Here is what I found:\n\n${findingsText(s)}` : 'The folder is empty so far.'
  if (s.note.content === note) {
    // The note already says exactly this: writing it again would ask the user to approve a change of nothing.
    return {
      blocks: [
        {
          text:
            `${summary}\n\nThe note \`${s.note.path}\` already says exactly this, so there is nothing to change ` +
            `and nothing for you to approve. I will only run \`${command.command}\`, a read-only command that runs ` +
            'without asking.',
        },
        { tool: 'bash', input: command },
      ],
      stop: 'tool_use',
      ...PACE,
    }
  }
  return {
    blocks: [
      {
        text:
          `${summary}\n\n` +
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

function closingTurn(ctx: Ctx, unchanged: boolean): Scenario['turns'][number] {
  const { s } = ctx
  const text =
    'That is the whole demo. What you saw:\n\n' +
    '- the read-only calls (reads, glob, grep) ran **in parallel**, in one lane, without asking;\n' +
    (unchanged
      ? `- the note \`${s.note.path}\` was already up to date, so nothing needed your approval;\n`
      : `- the write of \`${s.note.path}\` **waited for your approval**: if you approved it, the note is in the folder ` +
        '(delete it whenever you like); if you rejected it, nothing was written;\n') +
    '- the command ran **after** the write, in order, because commands and writes never run at the same time.\n\n' +
    'Every step is saved in the session log: open the session from the list to **replay** it. You can also type ' +
    'a follow-up task below.\n\n' +
    SWITCH_TO_CLAUDE[ctx.host]
  return { blocks: [{ text }], stop: 'end_turn', ...PACE }
}

/** What is in the folder, within a fixed budget; any error just means less is known. */
async function surveyWorkspace(root: string): Promise<Survey> {
  const survey: Survey = {
    filesSeen: 0,
    truncated: false,
    git: false,
    note: { path: 'LANES_DEMO.md', exists: false },
    files: [],
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
      const content = await readHead(join(root, name))
      survey.note = { path: name, exists: true, ...(content !== undefined ? { content } : {}) }
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
        survey.files.push(rel)
        const ext = extname(entry.name).slice(1).toLowerCase()
        if (!own(LANGUAGES, ext) || entry.name.startsWith('.')) continue
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
    survey.language = { ext, name: own(LANGUAGES, ext) ?? ext, files }
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
