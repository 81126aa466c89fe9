import { execFileSync } from 'node:child_process'
import { lstat, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { GIT_WORKSPACE_RULES } from '../../sensitive-paths'
import { tree } from '../../../test-fixtures/tree'
import { makeToolContext } from '../../test-fixtures/tool-context'
import { bashTool } from '../bash'
import { sandboxSupport } from '../sandbox/launch'
import type { CommandChanges } from './capture'
import type { HeldVerdict } from './held-review'
import { captureSupport } from './overlay'
import { capturedRuns, script } from './test-fixtures/captured-runs'

const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the capture tests: ${JSON.stringify(captureSupport())}`)

const { setup } = capturedRuns('lanes-capture-test-')

describe.skipIf(!overlay)('an approved command on a copy-on-write layer', { timeout: 30_000 }, () => {
  it('lands edits, removals, renames, modes, links and new folders, keeping what was there', async () => {
    const t = await setup({
      'a.txt': 'a\n',
      'd/b.txt': 'b\n',
      'e/c.txt': 'c\n',
      'e/z.txt': 'z\n',
      'keep.txt': 'k\n',
    })
    const command = await script(t.workspace, 'script.js', [
      'echo more >> a.txt',
      'rm d/b.txt',
      'mv e/z.txt e/y.txt',
      'chmod 755 keep.txt',
      'ln -s a.txt link',
      'mkdir -p n/m && echo q > n/m/q.txt',
      'rm -rf e && mkdir e && echo new > e/c.txt',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    expect(changes?.mode).toBe('overlay')
    expect(await tree(t.workspace)).toEqual({
      'a.txt': '644 a\nmore\n',
      'd/': '755',
      'e/': '755',
      'e/c.txt': '644 new\n',
      'keep.txt': '755 k\n',
      link: '-> a.txt',
      'n/': '755',
      'n/m/': '755',
      'n/m/q.txt': '644 q\n',
      'script.js': '644 ' + (await readFile(join(t.workspace, 'script.js'), 'utf8')),
    })
    expect(changes?.counts).toEqual({ added: 4, changed: 2, removed: 2, modeChanged: 1 })
    // Every change was logged with what was there before, and that content is in the store.
    const pre = t.events.filter((e) => e.type === 'file.preimage')
    const z = pre.find((e) => e.type === 'file.preimage' && e.relPath === 'e/z.txt')
    expect(z).toMatchObject({ after: null })
    const hash = z?.type === 'file.preimage' ? z.hash : null
    expect((await t.store.get(hash as string)).toString()).toBe('z\n')
    expect(t.events.map((e) => e.type).slice(-2)).toEqual(['command.landing', 'command.landed'])
    expect(result.output).toMatch(/changed 2, added 4, removed 2/)
    // The layer is gone, the folders it kept with it.
    expect(await readdir(join(t.session, 'capture'))).toEqual([])
  })

  it('tells what each landed file is: its size, text or binary, its type and lines (the card shows them)', async () => {
    const t = await setup({ 'notes.txt': 'one\n' })
    const png = '89504e470d0a1a0a0000000d49484452'
    await writeFile(
      join(t.workspace, 'make.js'),
      `require('node:fs').writeFileSync('logo.png', Buffer.from('${png}', 'hex'))\n` +
        `require('node:fs').appendFileSync('notes.txt', 'two\\nthree\\n')\n`,
    )
    const { result, changes } = await t.run('node make.js')
    expect(result.isError, result.output).toBe(false)
    const byPath = new Map(changes?.paths.map((p) => [p.relPath, p]))
    expect(byPath.get('logo.png')?.content).toEqual({ bytes: 16, binary: true, mime: 'image/png' })
    expect(byPath.get('notes.txt')?.content).toEqual({ bytes: 14, binary: false, lines: 3 })
  })

  it('leaves the workspace untouched and lands nothing from an unchanged run', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const { changes } = await t.run('cat a.txt')
    expect(changes?.counts).toEqual({ added: 0, changed: 0, removed: 0, modeChanged: 0 })
    expect(changes?.incomplete).toBeUndefined()
    expect(t.events).toEqual([])
    // Its empty layer is gone.
    expect(await readdir(join(t.session, 'capture'))).toEqual([])
  })

  it('leaves nothing running once the call is finished (the layer’s unmount happens beside the landing)', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const { result } = await t.run('cat a.txt')
    expect(result.isError, result.output).toBe(false)
    // The wrapper leaves a holder that unmounts the layer after the call; it ends when the call is finished.
    const running = async (): Promise<string[]> => {
      const found: string[] = []
      for (const pid of await readdir('/proc')) {
        if (!/^\d+$/.test(pid)) continue
        const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
        if (cmdline.includes(t.session)) found.push(pid)
      }
      return found
    }
    let left = await running()
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      left = await running()
    }
    expect(left).toEqual([])
  })

  it('lands nothing from git status, and lands git’s own index refresh as git wrote it', async () => {
    const t = await setup({ 'a.txt': 'a\n', 'src/b.ts': 'export const b = 1\n', 'src/c.ts': 'c\n' })
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', t.workspace, '-c', 'user.email=t@t', '-c', 'user.name=t', ...args], {
        encoding: 'utf8',
        env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
      })
    // Files older than the index: no entry is racily clean, so git has no reason of its own to rewrite the index.
    const past = new Date('2021-01-01T00:00:00Z')
    for (const rel of ['a.txt', 'src/b.ts', 'src/c.ts']) await utimes(join(t.workspace, rel), past, past)
    git('init', '-q')
    git('add', '.')
    git('commit', '-qm', 'one')
    const index = join(t.workspace, '.git', 'index')
    const settled = await readFile(index)

    // The overlay gives every file another device number (and the same inode and times): git does not take
    // that for a change, rehashes nothing and keeps its index; taking and dropping the index's lock copies
    // `.git` into the layer, which is no change and must not be held as `.git` made again.
    const clean = await t.run('git status --porcelain')
    expect(clean.result.isError).toBe(false)
    expect(clean.changes?.mode).toBe('overlay')
    expect(clean.changes?.counts).toEqual({ added: 0, changed: 0, removed: 0, modeChanged: 0 })
    expect(clean.changes?.held).toBeUndefined()
    expect(t.events).toEqual([])
    expect(await readFile(index)).toEqual(settled)

    // A file whose times changed and content did not: git refreshes its entry and writes the index, as it would
    // without capture. That is a change the command made, and it lands (undoable, not held: the index is data
    // git writes as it works).
    const later = new Date('2022-01-01T00:00:00Z')
    await utimes(join(t.workspace, 'src/b.ts'), later, later)
    const refreshed = await t.run('git status --porcelain')
    expect(refreshed.changes?.counts).toEqual({ added: 0, changed: 1, removed: 0, modeChanged: 0 })
    expect(refreshed.changes?.paths.map((p) => p.relPath)).toEqual(['.git/index'])
    expect(refreshed.changes?.held).toBeUndefined()
    expect(refreshed.changes?.undoable).toBe(true)
    // The landed index is one git trusts outside the layer: clean, and nothing for it to refresh.
    expect(git('status', '--porcelain')).toBe('')
    const landed = await readFile(index)
    git('update-index', '--refresh')
    expect(await readFile(index)).toEqual(landed)
    // And the next captured git status has nothing to write again.
    const events = t.events.length
    const again = await t.run('git status --porcelain')
    expect(again.changes?.counts).toEqual({ added: 0, changed: 0, removed: 0, modeChanged: 0 })
    expect(t.events.length).toBe(events)
  })

  it('reads a folder emptied and made again deep in the tree, and a large new tree, exactly', async () => {
    const t = await setup({ 'p/q/old1.txt': '1\n', 'p/q/old2.txt': '2\n', 'p/keep.txt': 'k\n' })
    const command = await script(t.workspace, 'deep.js', [
      'rm -rf p/q && mkdir p/q && echo n > p/q/new.txt',
      'for d in 1 2 3; do mkdir -p made/d$d/e; for f in 1 2 3 4 5; do echo $d$f > made/d$d/e/f$f.txt; done; done',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    const files = await tree(t.workspace)
    expect(Object.keys(files).filter((k) => k.startsWith('p/'))).toEqual([
      'p/',
      'p/keep.txt',
      'p/q/',
      'p/q/new.txt',
    ])
    expect(files['made/d3/e/f5.txt']).toBe('644 35\n')
    // old1, old2 removed; new.txt, 3 x (d, e, 5 files) added.
    expect(changes?.counts).toMatchObject({ removed: 2, added: 1 + 3 * 7 + 1 })
  })

  it('moves a new folder in whole only when everything in it lands', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const command = await script(t.workspace, 'new.js', [
      'mkdir -p whole/in && echo w > whole/in/w.txt',
      'mkdir -p mixed/in && echo m > mixed/in/m.txt && echo SECRET=1 > mixed/in/.env',
      'mkdir -p odd && echo o > odd/o.txt && mkfifo odd/pipe',
    ])
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    const files = await tree(t.workspace)
    expect(files['whole/in/w.txt']).toBe('644 w\n')
    expect(files['mixed/in/m.txt']).toBe('644 m\n')
    expect(files['odd/o.txt']).toBe('644 o\n')
    // The held secret file and the pipe stayed behind with the layer.
    expect(Object.keys(files).filter((k) => /\.env|pipe/.test(k))).toEqual([])
    expect(changes?.held?.paths.map((p) => p.relPath)).toEqual(['mixed/in/.env'])
    // Each landed path was logged with what was there before (nothing), so undo takes them away.
    const logged = t.events.flatMap((e) => (e.type === 'file.preimage' ? [e.relPath] : []))
    expect(logged).toEqual(expect.arrayContaining(['whole', 'whole/in', 'whole/in/w.txt', 'mixed/in/m.txt']))
    expect(logged).not.toContain('mixed/in/.env')
  })

  it('gives the command no way around its layer (the wrapper’s own view of the workspace stays its own)', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    // Everything the command's own process holds open, by identity: the workspace as it is (the layer's lower
    // folder, which the wrapper keeps open) must not be among it, or the command could write there past the
    // capture.
    await writeFile(
      join(t.workspace, 'fds.js'),
      `const fs = require('fs')
const open = []
for (const n of fs.readdirSync('/proc/self/fd')) {
  try {
    const st = fs.statSync('/proc/self/fd/' + n)
    open.push(st.dev + ':' + st.ino)
  } catch {}
}
console.log('FDS ' + open.join(' '))
`,
    )
    const { result } = await t.run('node fds.js')
    expect(result.isError, result.output).toBe(false)
    const real = await stat(t.workspace)
    const open = /FDS (.+)/.exec(result.output)?.[1]?.split(' ') ?? []
    expect(open.length).toBeGreaterThanOrEqual(3)
    expect(open).not.toContain(`${real.dev}:${real.ino}`)
  })

  it('captures what a command changed before it was killed by its timeout', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const command = await script(t.workspace, 'slow.js', ['echo half > a.txt', 'sleep 30'])
    const result = await bashTool.execute(
      { command, timeout: 1 },
      makeToolContext(t.workspace, {
        outputDir: t.session,
        pathRules: GIT_WORKSPACE_RULES,
        approval: { network: false, outsideSandbox: false },
        capture: {
          keep: (p, c) => t.store.put(p, c),
          content: (h) => t.store.get(h),
          log: async (d) => {
            t.events.push(d)
          },
          sync: () => t.store.flush(),
          landProtected: false,
        },
      }),
    )
    expect(result.metadata?.timedOut).toBe(true)
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('half\n')
    expect((result.metadata?.changes as CommandChanges).counts.changed).toBe(1)
  })

  it('lands only the held changes the user accepted, after the review, and leaves no trace of the others', async () => {
    // Protected files that exist are read-only in the sandbox: a command can only add new ones.
    const t = await setup({ 'a.txt': 'a\n' })
    const command = await script(t.workspace, 'script.js', [
      'echo b >> a.txt',
      "echo 'API_KEY=new-secret-5678' > .env",
      "mkdir -p .idea && echo '<x/>' > .idea/x.xml",
      'echo LOCAL=1 > .env.local',
      'mkdir -p .husky && echo hook > .husky/pre-commit',
    ])
    const learned: string[] = []
    let seenAtReview: string | undefined
    const review = async (): Promise<HeldVerdict> => {
      // Nothing of the command has landed while the user looks at it.
      seenAtReview = await readFile(join(t.workspace, 'a.txt'), 'utf8')
      return {
        by: 'user',
        files: [
          { relPath: '.env', decision: 'accepted' },
          // Accepted, but its folder is rejected: it cannot land either.
          { relPath: '.idea', decision: 'rejected' },
          { relPath: '.idea/x.xml', decision: 'accepted' },
          { relPath: '.env.local', decision: 'rejected' },
          { relPath: '.husky', decision: 'accepted' },
          { relPath: '.husky/pre-commit', decision: 'accepted' },
        ],
      }
    }
    const { result, changes } = await t.run(command, {
      review,
      learnSecrets: (rel, text) => learned.push(`${rel}:${text}`),
    })
    expect(result.isError, result.output).toBe(false)
    expect(seenAtReview).toBe('a\n')
    expect(learned.sort()).toEqual(['.env.local:LOCAL=1\n', '.env:API_KEY=new-secret-5678\n'])
    expect(await tree(t.workspace)).toEqual({
      '.env': '644 API_KEY=new-secret-5678\n',
      '.husky/': '755',
      '.husky/pre-commit': '644 hook\n',
      'a.txt': '644 a\nb\n',
      'script.js': '644 ' + (await readFile(join(t.workspace, 'script.js'), 'utf8')),
    })
    // The review showed each held change, with a diff for text files.
    const held = t.events.find((e) => e.type === 'command.held')
    expect(held?.type === 'command.held' && held.review?.map((f) => f.relPath).sort()).toEqual([
      '.env',
      '.env.local',
      '.husky',
      '.husky/pre-commit',
      '.idea',
      '.idea/x.xml',
    ])
    const view = (rel: string) =>
      held?.type === 'command.held' ? held.review?.find((f) => f.relPath === rel) : undefined
    expect(view('.husky/pre-commit')?.diff?.hunks[0]?.lines).toEqual(['+hook'])
    expect(view('.env')?.diff?.hunks[0]?.lines).toEqual(['+API_KEY=new-secret-5678'])
    expect(view('.env')?.reason).toBe('a secret file')
    expect(view('.idea')?.note).toMatch(/becomes a folder/)
    // What was rejected is reported, with why; only what landed is logged with its previous content.
    const reviewed = t.events.find((e) => e.type === 'command.reviewed')
    expect(reviewed).toMatchObject({
      by: 'user',
      accepted: ['.env', '.husky', '.husky/pre-commit'],
      acceptedCount: 3,
      rejectedCount: 3,
    })
    expect(
      reviewed?.type === 'command.reviewed' &&
        Object.fromEntries(reviewed.rejected.map((r) => [r.relPath, r.reason])),
    ).toEqual({
      '.env.local': 'rejected by the user',
      '.idea': 'rejected by the user',
      '.idea/x.xml': 'not landed: its folder .idea was rejected',
    })
    const logged = t.events.flatMap((e) => (e.type === 'file.preimage' ? [e.relPath] : []))
    expect(logged.sort()).toEqual(['.env', '.husky', '.husky/pre-commit', 'a.txt'])
    const types = t.events.map((e) => e.type)
    expect(types.indexOf('command.held')).toBeLessThan(types.indexOf('file.preimage'))
    expect(types.slice(-3)).toEqual(['command.reviewed', 'command.landing', 'command.landed'])
    // An accepted addition is logged as one (undo removes it).
    expect(t.events.find((e) => e.type === 'file.preimage' && e.relPath === '.env')).toMatchObject({
      before: null,
      hash: null,
    })
    expect(changes?.held).toMatchObject({ count: 6, landed: true, accepted: 3, rejectedCount: 3 })
    expect(changes?.undoable).toBe(true)
    expect(result.output).toMatch(/reviewed the 6 held change\(s\).*3 landed; 3 did not/)
  })

  it('lands nothing when a path it would land over was changed while the review waited, and says which', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const command = await script(t.workspace, 'script.js', ['echo b >> a.txt', "echo 'K=v-31337' > .env"])
    const review = async (): Promise<HeldVerdict> => {
      // The user edits the file in an editor while the command's changes wait.
      await writeFile(join(t.workspace, 'a.txt'), 'edited by the user\n')
      return { by: 'user', files: [{ relPath: '.env', decision: 'accepted' }] }
    }
    const { changes } = await t.run(command, { review })
    expect(changes?.error).toMatch(/a\.txt was changed since the command ran/)
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('edited by the user\n')
    await expect(lstat(join(t.workspace, '.env'))).rejects.toThrow()
    expect(t.events.map((e) => e.type)).toContain('command.reviewed')
    expect(t.events.map((e) => e.type)).not.toContain('command.landing')
  })

  it('lands nothing held when the run is stopped during the review', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    const command = await script(t.workspace, 'script.js', ['echo b >> a.txt', 'echo S=1 > .env'])
    const { changes } = await t.run(command, {
      review: async () => ({ by: 'stopped', files: [{ relPath: '.env', decision: 'accepted' }] }),
    })
    await expect(lstat(join(t.workspace, '.env'))).rejects.toThrow()
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('a\nb\n')
    expect(changes?.held?.rejected).toEqual([
      { relPath: '.env', reason: 'the run was stopped before the review was done' },
    ])
  })

  it('holds every change, protected or not, when the review asked to see them first', async () => {
    const t = await setup({ 'a.txt': 'a\n', 'b.txt': 'b\n' })
    const command = await script(t.workspace, 'script.js', [
      'echo A > a.txt',
      'echo B > b.txt',
      'echo n > n.txt',
    ])
    const result = await bashTool.execute(
      { command },
      makeToolContext(t.workspace, {
        outputDir: t.session,
        pathRules: GIT_WORKSPACE_RULES,
        approval: { network: false, outsideSandbox: false, hold: true },
        capture: {
          keep: (p, c) => t.store.put(p, c),
          content: (h) => t.store.get(h),
          log: async (d) => {
            t.events.push(d)
          },
          sync: () => t.store.flush(),
          landProtected: false,
          review: async () => ({
            by: 'user',
            files: [
              { relPath: 'b.txt', decision: 'accepted' },
              { relPath: 'n.txt', decision: 'rejected' },
            ],
          }),
        },
      }),
    )
    expect(result.isError, result.output).toBe(false)
    const held = t.events.find((e) => e.type === 'command.held')
    const review = held?.type === 'command.held' ? (held.review ?? []) : []
    expect(review.map((f) => f.relPath).sort()).toEqual(['a.txt', 'b.txt', 'n.txt'])
    // Not protected: no warning.
    expect(review.every((f) => f.reason === undefined)).toBe(true)
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('a\n')
    expect(await readFile(join(t.workspace, 'b.txt'), 'utf8')).toBe('B\n')
    await expect(lstat(join(t.workspace, 'n.txt'))).rejects.toThrow()
  })

  it('holds every change to git’s configuration surface, whatever its name', async () => {
    const t = await setup({ 'src/a.txt': 'a\n' })
    execFileSync('git', ['init', '-q', t.workspace])
    execFileSync('git', ['-C', t.workspace, 'add', '.'])
    execFileSync('git', [
      '-C',
      t.workspace,
      '-c',
      'user.email=a@b',
      '-c',
      'user.name=a',
      'commit',
      '-qm',
      'one',
    ])
    const planted = join(t.workspace, '..', 'PLANTED')
    const hook = `#!/bin/sh\necho pwned > ${planted}\n`
    const command = await script(
      t.workspace,
      'attack.js',
      [
        // commondir pointing git at another configuration
        `mkdir -p evil/hooks && printf '%s' '${hook}' > evil/hooks/post-checkout && chmod +x evil/hooks/post-checkout`,
        `printf '[core]\\n\\tfsmonitor = "echo pwned > ${planted}"\\n' > evil/config`,
        'echo ../evil > .git/commondir',
        // a submodule's configuration
        `mkdir -p .git/modules/sub && printf '[core]\\n\\tfsmonitor = "echo pwned > ${planted}"\\n' > .git/modules/sub/config`,
        // a hook through another name for the hooks folder
        'ln -s .git/info linkinfo',
        'echo x > linkinfo/attributes',
        'echo ok > src/b.txt',
        '[ -f .gitmodules ] || echo "[submodule \\"s\\"]" > .gitmodules',
        'true',
      ],
      '-c',
    )
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    const held = changes?.held?.paths.map((p) => p.relPath) ?? []
    expect(held).toEqual(expect.arrayContaining(['.git/commondir', '.git/modules/sub/config', '.gitmodules']))
    expect(changes?.held?.landed).toBe(false)
    expect(await readFile(join(t.workspace, 'src/b.txt'), 'utf8')).toBe('ok\n')
    await expect(lstat(join(t.workspace, '.git/commondir'))).rejects.toThrow()
    await expect(lstat(join(t.workspace, '.git/modules'))).rejects.toThrow()
    execFileSync('git', ['-C', t.workspace, 'status'], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } })
    execFileSync('git', ['-C', t.workspace, 'checkout', '-q', '-b', 'other'])
    await expect(lstat(planted)).rejects.toThrow()
  })

  it('holds a .git renamed away and rebuilt with a hook', async () => {
    const t = await setup({ 'a.txt': 'a\n' })
    execFileSync('git', ['init', '-q', t.workspace])
    const planted = join(t.workspace, '..', 'PLANTED2')
    const command = await script(
      t.workspace,
      'attack.js',
      [
        'mv .git .git-old',
        'git init -q .',
        `printf '#!/bin/sh\\necho pwned > ${planted}\\n' > .git/hooks/post-checkout`,
        'chmod +x .git/hooks/post-checkout',
        `printf '[core]\\n\\tfsmonitor = "echo pwned > ${planted}"\\n' >> .git/config`,
        'true',
      ],
      '-c',
    )
    const { result, changes } = await t.run(command)
    expect(result.isError, result.output).toBe(false)
    expect(changes?.held?.count).toBeGreaterThan(0)
    // What the move took from .git and what `git init` made again is held: git finds its repository as it was.
    expect(await readFile(join(t.workspace, '.git/HEAD'), 'utf8')).toMatch(/^ref: refs\/heads\//)
    await expect(lstat(join(t.workspace, '.git/hooks/post-checkout'))).rejects.toThrow()
    execFileSync('git', ['-C', t.workspace, 'status'], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } })
    await expect(lstat(planted)).rejects.toThrow()
  })
})
