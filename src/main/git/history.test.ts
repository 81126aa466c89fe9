import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bashTool } from '../tools/bash/bash'
import { isReadOnlyCommand, loadBashGrammar } from '../tools/bash/validate'
import { findInHistory, type PathJudge } from './history'
import {
  GIT_WORKSPACE_RULES,
  isSecretPath,
  loadSensitivePathRules,
  secretFolderContext,
} from '../tools/sensitive-paths'
import { SENSITIVE_PATH_TABLE } from '../tools/sensitive-paths.table'
import { makeWorkspace, putFile, removeWorkspaces } from '../tools/test-fixtures/workspace'

// Real repositories made by the real git in temp folders; the code under test reads their objects as bytes.

const git = (cwd: string, ...args: string[]): string =>
  execFileSync(
    'git',
    ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', ...args],
    { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  )

const commitAll = (root: string, message: string): void => {
  git(root, 'add', '-A')
  git(root, 'commit', '-qm', message)
}

/** A repository with a few harmless files, one commit; `src/secrets.ts` is code, not a secret. */
async function repo(init: string[] = []): Promise<string> {
  const root = await makeWorkspace('lanes-git-history-')
  git(root, 'init', '-q', ...init)
  await putFile(root, 'README.md', '# demo\n')
  await putFile(root, 'src/secrets.ts', 'export const secrets = process.env\n')
  await putFile(root, 'src/credentials.ts', 'export {}\n')
  await putFile(root, 'docs/secrets.md', 'Where secrets live\n')
  commitAll(root, 'first')
  return root
}

/** Commits `file`, then deletes it in the next commit: the index is clean, the history is not. */
async function commitAndDelete(root: string, file: string): Promise<void> {
  await putFile(root, file, 'TOKEN=hunter2\n')
  commitAll(root, `add ${file}`)
  git(root, 'rm', '-q', file)
  git(root, 'commit', '-qm', `remove ${file}`)
}

/** Whatever the walk finds, judged by the one rule. */
const SECRETS: PathJudge = { matches: isSecretPath, folderKey: secretFolderContext }
const verdict = (root: string, budget?: { timeMs: number; maxObjects: number }) =>
  findInHistory(root, SECRETS, budget)

const trackedNow = (root: string): string[] => git(root, 'ls-files', '-z').split('\0').filter(Boolean)

afterAll(removeWorkspaces)

describe('findInHistory', () => {
  it('finds a secret committed and deleted, in loose objects, after git gc, and after an aggressive repack', async () => {
    const root = await repo()
    // A loose object larger than what is read to learn its type.
    await putFile(root, 'assets/noise.bin', randomBytes(20_000))
    commitAll(root, 'noise')
    await commitAndDelete(root, '.env')
    // Later history: a folder of many files edited one by one, so a repack stores its trees as deltas.
    for (let i = 0; i < 40; i++) await putFile(root, `lib/file-${i}.ts`, `export const n = ${i}\n`)
    commitAll(root, 'lib')
    for (let i = 0; i < 30; i++) {
      await putFile(root, `lib/file-${i}.ts`, `export const n = ${i + 100}\n`)
      commitAll(root, `edit ${i}`)
    }
    expect(trackedNow(root)).not.toContain('.env')
    const blob = git(root, 'rev-parse', 'HEAD:assets/noise.bin').trim()
    const blobFile = path.join(root, '.git', 'objects', blob.slice(0, 2), blob.slice(2))
    expect((await fs.stat(blobFile)).size).toBeGreaterThan(20_000)
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.env' })

    git(root, 'gc', '-q')
    expect(await fs.readdir(path.join(root, '.git', 'objects', 'pack'))).toContainEqual(
      expect.stringMatching(/\.pack$/),
    )
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.env' })

    git(root, 'gc', '-q', '--aggressive')
    const packs = (await fs.readdir(path.join(root, '.git', 'objects', 'pack'))).filter((f) =>
      f.endsWith('.idx'),
    )
    const listing = git(root, 'verify-pack', '-v', path.join('.git', 'objects', 'pack', packs[0] as string))
    // Lines of deltified entries end with their depth and base: the trees are stored as deltas.
    expect(listing).toMatch(/^[0-9a-f]{40} tree +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/m)
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.env' })

    // Deltas naming their base by id (REF_DELTA) instead of by offset.
    git(root, '-c', 'repack.useDeltaBaseOffset=false', 'repack', '-q', '-a', '-d', '-f')
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.env' })
  })

  it('reads a pack kept from a fetch, whose deltas build on bases named by id', async () => {
    const upstream = await repo()
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}`)
    await putFile(upstream, 'big.txt', lines.join('\n'))
    commitAll(upstream, 'big')
    const clone = path.join(await makeWorkspace('lanes-git-fetch-'), 'clone')
    git(upstream, 'clone', '-q', `file://${upstream}`, clone)
    await commitAndDelete(upstream, '.env')
    for (let i = 1; i <= 6; i++) {
      lines[i * 100] = `changed ${i}`
      await putFile(upstream, 'big.txt', lines.join('\n'))
      commitAll(upstream, `edit ${i}`)
    }
    // A thin pack completed on arrival and kept as it came: the versions of big.txt are deltas on a REF_DELTA
    // against the version the clone had, with OFS_DELTAs on top of it.
    git(clone, '-c', 'fetch.unpackLimit=1', 'fetch', '-q', 'origin')
    const packs = (await fs.readdir(path.join(clone, '.git', 'objects', 'pack'))).filter((f) =>
      f.endsWith('.pack'),
    )
    expect(packs.length).toBe(2)
    expect(await verdict(clone)).toEqual({ kind: 'found', path: '.env' })
  })

  it('judges a partial clone by what it holds: blobless is read, treeless is unknown', async () => {
    const upstream = await repo()
    await commitAndDelete(upstream, '.env')
    git(upstream, 'config', 'uploadpack.allowFilter', 'true')
    const base = await makeWorkspace('lanes-git-partial-')
    const blobless = path.join(base, 'blobless')
    git(base, 'clone', '-q', '--filter=blob:none', `file://${upstream}`, blobless)
    const packDir = path.join(blobless, '.git', 'objects', 'pack')
    expect(await fs.readdir(packDir)).toContainEqual(expect.stringMatching(/\.promisor$/))
    // The deleted file's blob never came, but its name is in the trees, and fetching it needs the network that
    // auto-run commands do not have.
    expect(await verdict(blobless)).toEqual({ kind: 'found', path: '.env' })

    const treeless = path.join(base, 'treeless')
    git(base, 'clone', '-q', '--filter=tree:0', `file://${upstream}`, treeless)
    expect(await verdict(treeless)).toMatchObject({
      kind: 'unknown',
      reason: expect.stringMatching(/is missing$/),
    })
  })

  it('finds a secret only on another branch, only in a stash, only in a reflog after git reset --hard', async () => {
    const branch = await repo()
    git(branch, 'checkout', '-q', '-b', 'leak')
    await putFile(branch, 'deploy/.env.production', 'TOKEN=1\n')
    commitAll(branch, 'oops')
    git(branch, 'checkout', '-q', 'main')
    expect(await verdict(branch)).toEqual({ kind: 'found', path: 'deploy/.env.production' })

    const stash = await repo()
    await putFile(stash, '.npmrc', '//registry/:_authToken=x\n')
    git(stash, 'add', '.npmrc')
    git(stash, 'stash', '-q')
    expect(trackedNow(stash)).not.toContain('.npmrc')
    expect(git(stash, 'stash', 'list')).not.toBe('')
    expect(await verdict(stash)).toEqual({ kind: 'found', path: '.npmrc' })

    const reset = await repo()
    await putFile(reset, 'keys/deploy.pem', '-----BEGIN PRIVATE KEY-----\n')
    commitAll(reset, 'key')
    git(reset, 'reset', '-q', '--hard', 'HEAD~1')
    expect(git(reset, 'log', '--all', '--format=%s')).not.toContain('key')
    expect(await verdict(reset)).toEqual({ kind: 'found', path: 'keys/deploy.pem' })
  })

  it('judges nested secret paths by their whole path, also where an equal tree was judged harmless elsewhere', async () => {
    for (const secret of [
      '.ssh/id_rsa',
      '.config/gh/hosts.yml',
      'home/.aws/credentials',
      '.docker/config.json',
    ]) {
      const root = await repo()
      await commitAndDelete(root, secret)
      expect(await verdict(root)).toEqual({ kind: 'found', path: secret })
    }
    // `a/gh` and `.config/gh` are the same tree object (same content), and so are `a/keys` and `.ssh/keys`; the
    // harmless copies are walked first.
    const twins = await repo()
    await putFile(twins, 'a/gh/hosts.yml', 'github.com:\n')
    await putFile(twins, 'a/keys/notes.txt', 'notes\n')
    commitAll(twins, 'harmless twins')
    expect(await verdict(twins)).toEqual({ kind: 'clean' })
    await putFile(twins, '.config/gh/hosts.yml', 'github.com:\n')
    commitAll(twins, 'gh login')
    expect(git(twins, 'rev-parse', 'HEAD:a/gh')).toBe(git(twins, 'rev-parse', 'HEAD:.config/gh'))
    expect(await verdict(twins)).toEqual({ kind: 'found', path: '.config/gh/hosts.yml' })

    const keys = await repo()
    await putFile(keys, 'a/keys/notes.txt', 'notes\n')
    await putFile(keys, '.ssh/keys/notes.txt', 'notes\n')
    commitAll(keys, 'keys')
    git(keys, 'rm', '-rq', '.ssh')
    commitAll(keys, 'no keys')
    expect(await verdict(keys)).toEqual({ kind: 'found', path: '.ssh/keys/notes.txt' })
  })

  it('flags every secret path of the shared table once it is in history, and no other path', async () => {
    const root = await repo()
    const rows = SENSITIVE_PATH_TABLE.filter((row) => !row.path.startsWith('.git/'))
    for (const row of rows) await putFile(root, row.path, `${row.path}\n`)
    commitAll(root, 'every table path')
    git(root, 'rm', '-rq', '.')
    git(root, 'commit', '-qm', 'none left')
    git(root, 'gc', '-q')
    expect(trackedNow(root)).toEqual([])
    for (const row of rows) {
      // Only this row's path may match: the walk must build it whole and judge it by the one rule.
      const judge: PathJudge = {
        matches: (file) => file === row.path && isSecretPath(file),
        folderKey: secretFolderContext,
      }
      const expected = row.secret ? { kind: 'found', path: row.path } : { kind: 'clean' }
      expect({ path: row.path, verdict: await findInHistory(root, judge) }).toEqual({
        path: row.path,
        verdict: expected,
      })
    }
  })

  it('finds nothing in a clean repository, with harmless names close to secret ones', async () => {
    const root = await repo()
    await putFile(root, '.env.example', 'TOKEN=\n')
    await putFile(root, 'id_rsa.pub', 'ssh-ed25519 AAAA\n')
    await putFile(root, '.docker/Dockerfile', 'FROM node\n')
    commitAll(root, 'more')
    expect(await verdict(root)).toEqual({ kind: 'clean' })
    git(root, 'gc', '-q')
    expect(await verdict(root)).toEqual({ kind: 'clean' })
    // No repository, or an empty one: nothing in history.
    expect(await verdict(await makeWorkspace('lanes-git-history-'))).toEqual({ kind: 'clean' })
  })

  it('reads a SHA-256 repository, loose and packed', async () => {
    const root = await repo(['--object-format=sha256'])
    expect(await verdict(root)).toEqual({ kind: 'clean' })
    await commitAndDelete(root, '.aws/config')
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.aws/config' })
    git(root, 'gc', '-q', '--aggressive')
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.aws/config' })
  })

  it("reads a linked worktree's shared objects, and objects borrowed through alternates", async () => {
    const main = await repo()
    await commitAndDelete(main, '.env')
    const worktree = path.join(await makeWorkspace('lanes-git-wt-'), 'wt')
    git(main, 'worktree', 'add', '-q', worktree)
    expect((await fs.lstat(path.join(worktree, '.git'))).isFile()).toBe(true)
    expect(await verdict(worktree)).toEqual({ kind: 'found', path: '.env' })

    git(main, 'gc', '-q')
    const shared = path.join(await makeWorkspace('lanes-git-shared-'), 'clone')
    git(main, 'clone', '-q', '--shared', main, shared)
    expect(await fs.readFile(path.join(shared, '.git', 'objects', 'info', 'alternates'), 'utf8')).toContain(
      main,
    )
    expect(await verdict(shared)).toEqual({ kind: 'found', path: '.env' })
  })

  it("reads the submodules' repositories kept in the repository's folder", async () => {
    const library = await repo()
    await commitAndDelete(library, 'config/.env')
    const top = await repo()
    expect(await verdict(top)).toEqual({ kind: 'clean' })
    git(top, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', library, 'vendor/lib')
    commitAll(top, 'vendor lib')
    expect(await fs.readdir(path.join(top, '.git', 'modules', 'vendor'))).toEqual(['lib'])
    // The top repository's own history is clean; git prints the submodule's files too (`git diff
    // --submodule=diff`), so its history counts.
    expect(await verdict(top)).toEqual({ kind: 'found', path: 'vendor/lib/config/.env' })
    // Opened as a workspace of its own, the submodule's `.git` file names that same repository.
    expect(await verdict(path.join(top, 'vendor', 'lib'))).toEqual({ kind: 'found', path: 'config/.env' })
  })

  it('reads a pack whose idx is in the version 1 format', async () => {
    const root = await repo()
    await commitAndDelete(root, '.env')
    git(root, 'gc', '-q')
    const packDir = path.join(root, '.git', 'objects', 'pack')
    const pack = (await fs.readdir(packDir)).find((f) => f.endsWith('.pack')) as string
    const idx = path.join(packDir, pack.replace(/\.pack$/, '.idx'))
    await fs.rm(idx)
    git(root, 'index-pack', '--index-version=1', '-o', idx, path.join(packDir, pack))
    expect((await fs.readFile(idx)).readUInt32BE(0)).not.toBe(0xff744f63)
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.env' })
  })

  it('answers unknown (fail closed) for a corrupt pack, a missing tree, or when the budget runs out', async () => {
    const cut = await repo()
    git(cut, 'gc', '-q')
    const packDir = path.join(cut, '.git', 'objects', 'pack')
    const pack = path.join(packDir, (await fs.readdir(packDir)).find((f) => f.endsWith('.pack')) as string)
    const bytes = await fs.readFile(pack)
    await fs.chmod(pack, 0o644)
    await fs.writeFile(pack, bytes.subarray(0, bytes.length - 40))
    expect(await verdict(cut)).toMatchObject({ kind: 'unknown' })
    // Same length, its entries overwritten.
    bytes.fill(0x5a, 12, bytes.length - 20)
    await fs.writeFile(pack, bytes)
    expect(await verdict(cut)).toMatchObject({ kind: 'unknown' })

    const missing = await repo()
    const tree = git(missing, 'rev-parse', 'HEAD:src').trim()
    await fs.rm(path.join(missing, '.git', 'objects', tree.slice(0, 2), tree.slice(2)), { force: true })
    expect(await verdict(missing)).toEqual({ kind: 'unknown', reason: `object ${tree} is missing` })

    const big = await repo()
    expect(await verdict(big, { timeMs: 60_000, maxObjects: 5 })).toEqual({
      kind: 'unknown',
      reason: 'more than 5 objects',
    })
    expect(await verdict(big, { timeMs: 0, maxObjects: 1000 })).toMatchObject({ kind: 'unknown' })
    expect(await verdict(big)).toEqual({ kind: 'clean' })
  })

  it('keeps an answer while the objects stay the same, and reads again once they change', async () => {
    const root = await repo()
    expect(await verdict(root)).toEqual({ kind: 'clean' })
    // Git never rewrites an object file in place; here one is, to show the answer is not read again while the
    // store's folders and packs are unchanged...
    const tree = git(root, 'rev-parse', 'HEAD:src').trim()
    const file = path.join(root, '.git', 'objects', tree.slice(0, 2), tree.slice(2))
    const original = await fs.readFile(file)
    await fs.chmod(file, 0o644)
    await fs.writeFile(file, 'not zlib')
    expect(await verdict(root)).toEqual({ kind: 'clean' })
    // ...and is once an object is added.
    await putFile(root, 'more.txt', 'more\n')
    commitAll(root, 'more')
    expect(await verdict(root)).toEqual({ kind: 'unknown', reason: `${file} is not a loose object` })
    // Unknown answers are kept too (a large store would pay its whole budget at every session), until the
    // objects change again.
    await fs.writeFile(file, original)
    expect(await verdict(root)).toMatchObject({ kind: 'unknown' })
    await commitAndDelete(root, '.pgpass')
    expect(await verdict(root)).toEqual({ kind: 'found', path: '.pgpass' })
  })

  it('finds a tree a tag names, and reads packs beside a multi-pack-index; a pack without its idx is unknown', async () => {
    const tagged = await repo()
    await putFile(tagged, '.netrc', 'machine x password y\n')
    git(tagged, 'add', '.netrc')
    const tree = git(tagged, 'write-tree').trim()
    git(tagged, 'rm', '-q', '--cached', '.netrc')
    await fs.rm(path.join(tagged, '.netrc'))
    git(tagged, 'tag', '-a', 'snapshot', '-m', 'a tree', tree)
    expect(await verdict(tagged)).toEqual({ kind: 'found', path: '.netrc' })

    const midx = await repo()
    await commitAndDelete(midx, '.env.local')
    git(midx, 'repack', '-q', '-d')
    await putFile(midx, 'later.md', 'later\n')
    commitAll(midx, 'later')
    git(midx, 'repack', '-q', '-d')
    git(midx, 'multi-pack-index', 'write')
    const packDir = path.join(midx, '.git', 'objects', 'pack')
    expect(await fs.readdir(packDir)).toContain('multi-pack-index')
    expect(await verdict(midx)).toEqual({ kind: 'found', path: '.env.local' })
    const idx = (await fs.readdir(packDir)).find((f) => f.endsWith('.idx')) as string
    await fs.rm(path.join(packDir, idx))
    expect(await verdict(midx)).toMatchObject({
      kind: 'unknown',
      reason: expect.stringContaining('has no idx'),
    })
  })
})

describe('a repository whose history holds a secret', () => {
  beforeAll(loadBashGrammar)

  it('asks before git prints file contents, and a clean one still runs them at once', async () => {
    const clean = await repo()
    const cleanRules = await loadSensitivePathRules(clean)
    expect(cleanRules).toEqual(GIT_WORKSPACE_RULES)

    const leaky = await repo()
    await commitAndDelete(leaky, 'config/.env.production')
    git(leaky, 'gc', '-q')
    const rules = await loadSensitivePathRules(leaky)
    expect(rules).toEqual({ bareRepoAtRoot: false, gitTracksSecrets: true })
    // A history that cannot be read within the budget is assumed to hold a secret.
    const other = await repo()
    expect((await loadSensitivePathRules(other, { timeMs: 60_000, maxObjects: 3 })).gitTracksSecrets).toBe(
      true,
    )

    const printsHistory = [
      'git log -p',
      'git log --all -p',
      'git log -g -p',
      'git show HEAD',
      'git show HEAD~1',
      'git show HEAD~1:config',
      'git diff HEAD~2',
      'git diff HEAD~2 HEAD',
      'git log --check',
      'git log --binary',
      'git log --dd',
      'git status -v',
      'git status --verbose',
    ]
    for (const command of printsHistory) {
      expect({ command, auto: isReadOnlyCommand(command, rules) }).toEqual({ command, auto: false })
      expect({ command, auto: isReadOnlyCommand(command, cleanRules) }).toEqual({ command, auto: true })
    }
    for (const command of ['git log --oneline --all', 'git log --stat', 'git status', 'git blame README.md'])
      expect({ command, auto: isReadOnlyCommand(command, rules) }).toEqual({ command, auto: true })
    // blame prints only the file it names, in any revision: a deleted secret's name is judged like any other.
    for (const command of [
      'git blame HEAD~1 -- config/.env.production',
      'git blame HEAD~1 -- ./config/.env.production',
      'git show HEAD~1:config/.env.production',
    ])
      expect({ command, auto: isReadOnlyCommand(command, cleanRules) }).toEqual({ command, auto: false })

    const policy = (workspace: string, pathRules: typeof rules) =>
      bashTool.policy?.(
        { command: 'git log -p', description: 'Read the history' },
        { workspace, pathRules, alwaysAllow: [], autoApproveEdits: false, sandbox: true },
      )
    expect(policy(leaky, rules)).toEqual({ kind: 'ask', protected: false })
    expect(policy(clean, cleanRules)).toEqual({ kind: 'allow' })
  })
})
