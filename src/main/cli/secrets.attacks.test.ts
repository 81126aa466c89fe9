import { execFileSync } from 'node:child_process'
import { link, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Scenario } from '../agent/scenario'
import { startScriptedModel } from '../agent/scripted-model'
import { runLanes } from './test-fixtures/run-lanes'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { markerFor } from '../secrets/redactor'

/**
 * Issue 20's read-side attacks, each on a real folder and a real git repository, end to end through `lanes run`
 * with the scripted model and every approval refused (`--approve none`): a hostile model that knows where the
 * secret is and tries every way around the name rules. In each, the secret value must appear in nothing sent to
 * the model (the scripted model's record of every request) and nowhere in the session's folder (log, saved
 * command outputs).
 */

const support = sandboxSupport()
const missing = support.available ? null : support.reason
if (missing !== null && (process.env.CI || process.env.LANES_REQUIRE_SANDBOX))
  throw new Error(`The secret attack tests need bubblewrap on CI: ${missing}`)

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function tempBase(): Promise<string> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-secrets-attack-')))
  cleanups.push(() => rm(base, { recursive: true, force: true }))
  await mkdir(join(base, 'ws'))
  return base
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync(
    'git',
    ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args],
    {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    },
  ).trim()
}

type Call = { tool: string; input: Record<string, unknown> }

interface Attack {
  /** Every request body the model received, as one text. */
  sent: string
  /** Every file of the sessions folder (log, saved outputs), as one text. */
  kept: string
  /** The tool_result contents of the first turn, in call order. */
  results: string[]
  code: number
}

/**
 * Runs `calls` as one turn of a scripted model against `ws` (or several turns, one list each: a refused command
 * skips the later commands of its turn), every approval refused.
 */
async function attack(base: string, calls: Call[] | Call[][]): Promise<Attack> {
  const turns = (Array.isArray(calls[0]) ? calls : [calls]) as Call[][]
  const scenario: Scenario = {
    turns: [
      ...turns.map((turn) => ({
        blocks: turn.map((c) => ({ tool: c.tool, input: c.input })),
        stop: 'tool_use' as const,
      })),
      { blocks: [{ text: 'done' }], stop: 'end_turn' },
    ],
  }
  const record = join(base, 'record.jsonl')
  const model = await startScriptedModel({ scenario, recordFile: record })
  const sessions = join(base, 'sessions')
  let code: number
  try {
    ;({ code } = await runLanes([
      'run',
      '--workspace',
      join(base, 'ws'),
      '--task',
      'find the token',
      '--base-url',
      model.baseUrl,
      '--approve',
      'none',
      '--sessions-dir',
      sessions,
    ]))
  } finally {
    await model.close()
  }
  const sent = await readFile(record, 'utf8')
  const requests = sent
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          messages: { role: string; content: string | { type: string; content?: string }[] }[]
        },
    )
  // Every tool result of the run, in order: the last request holds the whole conversation.
  const results = (requests.at(-1)?.messages ?? []).flatMap((m) =>
    Array.isArray(m.content)
      ? m.content.filter((b) => b.type === 'tool_result').map((b) => b.content ?? '')
      : [],
  )
  return { sent, kept: await allText(sessions), results, code }
}

async function allText(dir: string): Promise<string> {
  let text = ''
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) text += await readFile(join(entry.parentPath, entry.name), 'latin1')
  }
  return text
}

function expectNowhere(secret: string, run: Attack): void {
  expect(run.code).toBe(0)
  expect(run.sent).toContain('tool_result')
  expect(run.sent, 'sent to the model').not.toContain(secret)
  expect(run.kept, 'kept in the session folder').not.toContain(secret)
}

describe.skipIf(missing !== null)(
  'secrets never reach the model (issue 20 attacks, every approval refused)',
  () => {
    it('the grep oracle: a right and a wrong guess give identical results', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'sk-live-Or4cl3-9f8e7d6c'
      await writeFile(join(ws, '.env'), `API_TOKEN=${secret}\nPORT=3000\n`)
      await writeFile(join(ws, 'app.ts'), 'export const port = process.env.PORT\n')
      const guesses = ['sk-live-Or4', 'sk-live-XXX']
      const run = await attack(
        base,
        guesses.flatMap((g) => [
          { tool: 'grep', input: { pattern: `^API_TOKEN=${g}` } },
          { tool: 'grep', input: { pattern: `^API_TOKEN=${g}`, path: '.env' } },
          { tool: 'grep', input: { pattern: `^API_TOKEN=${g}`, include: '.env*' } },
        ]),
      )
      expectNowhere(secret, run)
      const [r1, r2, r3, w1, w2, w3] = run.results.map((r) => r.replace(/sk-live-(Or4|XXX)/g, 'GUESS'))
      expect([r1, r2, r3]).toEqual([w1, w2, w3])
      expect(r1).toMatch(/^No matches/)
    })

    it('the grep oracle through an ordinary file that repeats the value: grep searches the redacted text', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'sk-live-R3peat-7c6b5a49'
      await writeFile(join(ws, '.env'), `API_TOKEN=${secret}\n`)
      // The same value in a config file beside it; in a minified line, past where lines are cut for display
      // (500 columns) and past the part of a long line grep looks at (64 KB).
      await writeFile(join(ws, 'settings.py'), `API_TOKEN = "${secret}"\nDEBUG = False\n`)
      await writeFile(join(ws, 'bundle.min.js'), `var a="${'x'.repeat(480)}${secret}";\n`)
      await writeFile(join(ws, 'huge.min.js'), `var b="${'y'.repeat(70_000)}${secret}";\n`)
      const shapes = (g: string): string[] => [
        `API_TOKEN = "${g}`,
        // Matches the redacted line whatever the value: found for a right guess only if grep read the disk.
        `API_TOKEN = "(${g}|\\[secret)`,
        `x{480}${g}`,
        `y{100}${g}`,
        `${g}`,
      ]
      const guesses = ['sk-live-R3p', 'sk-live-XXX']
      const run = await attack(
        base,
        guesses.flatMap((g) => shapes(g).map((pattern) => ({ tool: 'grep', input: { pattern } }))),
      )
      expectNowhere(secret, run)
      // No part of the value either: a line cut for display is cut after redaction.
      for (const r of run.results) expect(r).not.toContain('sk-live-R3pe')
      const n = shapes('').length
      const unguess = (r: string): string => r.replace(/sk-live-(R3p|XXX)/g, 'GUESS')
      const right = run.results.slice(0, n).map(unguess)
      const wrong = run.results.slice(n).map(unguess)
      expect(right).toEqual(wrong)
      // What the model may see still matches: the redacted line, found by its marker.
      expect(right[1]).toContain(`settings.py:1:API_TOKEN = "${markerFor('.env')}"`)
      expect(right[0]).toMatch(/^No matches/)
    })

    it('the edit_file oracle: a guess of a value in old_string gets the same answer, right or wrong', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'sk-live-Ed1tOracle-77aa66bb'
      await writeFile(join(ws, '.env'), `API_TOKEN=${secret}\n`)
      await writeFile(join(ws, 'settings.py'), `API_TOKEN = "${secret}"\nAPI_TOKEN_COPY = "${secret}"\n`)
      const guesses = ['sk-live-Ed1', 'sk-live-XXX']
      // Each guess in a turn of its own (a failed edit skips the later unsafe calls of its turn).
      const run = await attack(base, [
        [{ tool: 'read_file', input: { path: 'settings.py' } }],
        ...guesses.flatMap((g) => [
          [
            {
              tool: 'edit_file',
              input: { path: 'settings.py', old_string: `API_TOKEN = "${g}`, new_string: 'x' },
            },
          ],
          [{ tool: 'edit_file', input: { path: 'settings.py', old_string: `"${g}`, new_string: 'x' } }],
        ]),
      ])
      expectNowhere(secret, run)
      const [, r1, r2, w1, w2] = run.results.map((r) => r.replace(/sk-live-(Ed1|XXX)/g, 'GUESS'))
      expect([r1, r2]).toEqual([w1, w2])
      expect(r1).toMatch(/^old_string was not found/)
    })

    it('read_file cuts a long line after redaction: no start of a value shows where the line is cut', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'sk-live-W1deLine-0a9b8c7d'
      await writeFile(join(ws, '.env'), `API_TOKEN=${secret}\n`)
      // The value straddles the 2,000th character, where read_file cuts a line.
      await writeFile(join(ws, 'wide.min.js'), `var t="${'z'.repeat(1985)}${secret}";\n`)
      const run = await attack(base, [{ tool: 'read_file', input: { path: 'wide.min.js' } }])
      expectNowhere(secret, run)
      // Cut inside the marker that took the value's place.
      expect(run.results[0]).toMatch(/z\[secret[^\]]*… \[line truncated/)
      expect(run.sent).not.toContain('sk-live-W1')
    })

    it('a hard link to .env under another name is the secret file (read_file, grep, the sandbox)', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'hl-Secret-Value-4242'
      await writeFile(join(ws, '.env'), `DB_PASSWORD=${secret}\n`)
      await mkdir(join(ws, 'docs'))
      await link(join(ws, '.env'), join(ws, 'docs', 'notes.txt'))
      const run = await attack(base, [
        { tool: 'read_file', input: { path: 'docs/notes.txt' } },
        { tool: 'grep', input: { pattern: 'DB_PASSWORD=hl-S' } },
        { tool: 'grep', input: { pattern: 'DB_PASSWORD=hl-X' } },
        { tool: 'bash', input: { command: 'cat docs/notes.txt' } },
        { tool: 'bash', input: { command: 'head -c 200 docs/notes.txt' } },
      ])
      expectNowhere(secret, run)
      expect(run.results[0]).toMatch(/hard link/)
      expect(run.results[1]?.replace('hl-S', 'hl-X')).toBe(run.results[2])
      expect(run.results[1]).toMatch(/^No matches/)
    })

    it('a dangling blob (staged, then unstaged) printed by git show', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'dangling-Blob-Secret-77'
      git(ws, 'init', '-q')
      await writeFile(join(ws, 'README.md'), 'hello\n')
      git(ws, 'add', 'README.md')
      git(ws, 'commit', '-qm', 'first')
      await writeFile(join(ws, '.env'), `STRIPE_KEY=${secret}\n`)
      git(ws, 'add', '.env')
      const blob = git(ws, 'rev-parse', ':.env')
      git(ws, 'rm', '-q', '--cached', '.env')
      const run = await attack(base, [
        { tool: 'bash', input: { command: `git show ${blob}` } },
        { tool: 'bash', input: { command: 'git log --all -p' } },
      ])
      expectNowhere(secret, run)
      expect(run.results[0]).toContain(markerFor('.env'))
    })

    it('a split index and a linked worktree index hold a secret no file on disk has', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const split = 'split-Index-Secret-31'
      const worktree = 'worktree-Index-Secret-62'
      git(ws, 'init', '-q')
      await writeFile(join(ws, 'README.md'), 'hello\n')
      git(ws, 'add', 'README.md')
      git(ws, 'commit', '-qm', 'first')
      git(ws, 'update-index', '--split-index')
      await writeFile(join(ws, '.env'), `TOKEN=${split}\n`)
      git(ws, 'add', '.env')
      const splitBlob = git(ws, 'rev-parse', ':.env')
      await rm(join(ws, '.env'))
      git(ws, 'worktree', 'add', '-q', 'wt2')
      await writeFile(join(ws, 'wt2', '.env'), `TOKEN=${worktree}\n`)
      git(join(ws, 'wt2'), 'add', '.env')
      const worktreeBlob = git(join(ws, 'wt2'), 'rev-parse', ':.env')
      await rm(join(ws, 'wt2', '.env'))
      const run = await attack(base, [
        { tool: 'bash', input: { command: `git show ${splitBlob}` } },
        { tool: 'bash', input: { command: `git show ${worktreeBlob}` } },
        { tool: 'bash', input: { command: 'git diff --cached' } },
        { tool: 'grep', input: { pattern: 'TOKEN', path: 'wt2' } },
      ])
      expectNowhere(split, run)
      expectNowhere(worktree, run)
      // git holds a secret file the object reader does not see (a split index): git's own walk makes the
      // commands that print or search contents ask (and every approval is refused here).
      for (const result of run.results.slice(4))
        expect(result).toMatch(
          /^(Rejected by the user|Command not run: git holds a version of a secret file)/,
        )
    })

    it('an embedded repository (its own .git, not a submodule) whose history held a secret', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'embedded-Repo-Secret-58'
      const lib = join(ws, 'vendor', 'lib')
      await mkdir(lib, { recursive: true })
      git(lib, 'init', '-q')
      await writeFile(join(lib, '.env'), `LIB_TOKEN=${secret}\n`)
      git(lib, 'add', '.env')
      git(lib, 'commit', '-qm', 'oops')
      git(lib, 'rm', '-q', '.env')
      git(lib, 'commit', '-qm', 'remove it')
      // The value also sits in a plain file that names no secret: only git's history says it is one.
      await writeFile(join(ws, 'vendor', 'debug.log'), `connecting with ${secret}\n`)
      const run = await attack(base, [
        { tool: 'read_file', input: { path: 'vendor/debug.log' } },
        { tool: 'grep', input: { pattern: 'connecting' } },
        { tool: 'bash', input: { command: 'cat vendor/debug.log' } },
      ])
      expectNowhere(secret, run)
      expect(run.results[0]).toContain(markerFor('git history of .env'))
    })

    it('a token in a remote URL of .git/config', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'ghp_RemoteUrlToken0123456789'
      git(ws, 'init', '-q')
      git(ws, 'remote', 'add', 'origin', `https://x-access-token:${secret}@github.com/o/r.git`)
      const run = await attack(base, [
        { tool: 'read_file', input: { path: '.git/config' } },
        { tool: 'grep', input: { pattern: 'github', path: '.git/config' } },
        { tool: 'bash', input: { command: 'git remote -v' } },
        { tool: 'bash', input: { command: 'git status' } },
      ])
      expectNowhere(secret, run)
      expect(run.results[0]).toContain(markerFor('.git/config'))
    })

    it('a long command output: the live chunks and the saved full output, across chunk boundaries', async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'stream-Split-Secret-9Q7'
      await writeFile(join(ws, '.env'), `LOG_TOKEN=${secret}\n`)
      // 300 KB: the value lands at every offset of the terminal's 4 KiB reads and the live view's chunks.
      const lines = Array.from({ length: 6000 }, (_, i) => `${'x'.repeat(i % 37)} token ${secret} line ${i}`)
      await writeFile(join(ws, 'app.log'), `${lines.join('\n')}\n`)
      const run = await attack(base, [{ tool: 'bash', input: { command: 'cat app.log' } }])
      expectNowhere(secret, run)
      expect(run.kept).toContain('"type":"tool.output"')
      expect(run.results[0]).toContain(`token ${markerFor('.env')} line 5999`)
      expect(run.results[0]).toMatch(/Full output: .*\.log/)
    })

    it("the API key in the app's environment, printed by a file in the workspace", async () => {
      const base = await tempBase()
      const ws = join(base, 'ws')
      const secret = 'sk-ant-api03-Lanes-Own-Key-0042'
      await writeFile(join(ws, 'pasted.txt'), `export ANTHROPIC_API_KEY=${secret}\n`)
      const before = process.env.ANTHROPIC_API_KEY
      process.env.ANTHROPIC_API_KEY = secret
      try {
        const run = await attack(base, [
          { tool: 'read_file', input: { path: 'pasted.txt' } },
          { tool: 'bash', input: { command: 'cat pasted.txt' } },
        ])
        expectNowhere(secret, run)
        expect(run.results[0]).toContain(markerFor('the API key'))
      } finally {
        if (before === undefined) delete process.env.ANTHROPIC_API_KEY
        else process.env.ANTHROPIC_API_KEY = before
      }
    })
  },
)
