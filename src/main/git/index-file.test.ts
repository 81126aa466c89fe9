import { execFileSync } from 'node:child_process'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { GitIndexError, parseIndex, trackedPaths } from './index-file'
import { bashTool } from '../tools/bash/bash'
import { isReadOnlyCommand, loadBashGrammar } from '../tools/bash/validate'
import { GIT_WORKSPACE_RULES, loadSensitivePathRules, STRICT_RULES } from '../tools/sensitive-paths'
import { makeWorkspace, removeWorkspaces } from '../tools/test-fixtures/workspace'

// The index is read as bytes (Lanes never runs git on a folder it does not know); these repositories are made by
// the real git, in every index format it writes.

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })

const FILES = [
  'README.md',
  'src/a.ts',
  'src/deep/ünïcode name.txt',
  `long/${'d'.repeat(200)}/${'e'.repeat(200)}.txt`,
]

async function repo(opts: { init?: string[]; files?: string[] } = {}): Promise<string> {
  const root = await makeWorkspace('lanes-git-index-')
  git(root, 'init', '-q', ...(opts.init ?? []))
  for (const file of opts.files ?? FILES) {
    await fs.mkdir(path.dirname(path.join(root, file)), { recursive: true })
    await fs.writeFile(path.join(root, file), `${file}\n`)
  }
  git(root, 'add', '-A')
  return root
}

afterAll(removeWorkspaces)

describe('trackedPaths', () => {
  it.each([
    ['version 2', []],
    ['version 3 (an intent-to-add entry has the extended flags)', ['v3']],
    ['version 4 (paths prefix-compressed)', ['v4']],
  ] as const)('reads every path of an index in %s', async (_label, how) => {
    const root = await repo()
    if (how.includes('v3' as never)) {
      await fs.writeFile(path.join(root, 'later.txt'), 'later\n')
      git(root, 'add', '-N', 'later.txt')
    }
    if (how.includes('v4' as never)) git(root, 'update-index', '--index-version', '4')
    const expected = git(root, 'ls-files', '-z').split('\0').filter(Boolean)
    expect(await trackedPaths(root)).toEqual(expected)
    expect(expected).toEqual(expect.arrayContaining(FILES))
  })

  it('reads a SHA-256 repository and a linked worktree', async () => {
    const sha256 = await repo({ init: ['--object-format=sha256'] })
    expect(await trackedPaths(sha256)).toEqual(git(sha256, 'ls-files', '-z').split('\0').filter(Boolean))

    const main = await repo()
    git(main, 'commit', '-qm', 'first')
    const worktree = path.join(await makeWorkspace('lanes-git-wt-'), 'wt')
    git(main, 'worktree', 'add', '-q', worktree)
    expect((await fs.lstat(path.join(worktree, '.git'))).isFile()).toBe(true)
    expect(await trackedPaths(worktree)).toEqual(git(worktree, 'ls-files', '-z').split('\0').filter(Boolean))
  })

  it('is null without a repository or without an index, and refuses what is not an index', async () => {
    const plain = await makeWorkspace('lanes-git-index-')
    expect(await trackedPaths(plain)).toBeNull()
    git(plain, 'init', '-q')
    expect(await trackedPaths(plain)).toBeNull()
    await fs.writeFile(path.join(plain, '.git', 'index'), 'DIRC\0\0\0\u0009\0\0\0\u0001')
    await expect(trackedPaths(plain)).rejects.toThrow(GitIndexError)
    expect(() => parseIndex(Buffer.from('not an index'), 20)).toThrow(/not a git index/)
    // An entry count the file cannot hold: cut short, not read past its end.
    const root = await repo()
    const index = await fs.readFile(path.join(root, '.git', 'index'))
    index.writeUInt32BE(1000, 8)
    expect(() => parseIndex(index, 20)).toThrow(GitIndexError)
  })
})

describe('a repository that tracks a secret file', () => {
  it('is known when the workspace is opened, and git then asks before printing file contents', async () => {
    await loadBashGrammar()
    const clean = await repo()
    // An ignored .env is not in git's objects: nothing changes.
    await fs.writeFile(path.join(clean, '.gitignore'), '.env\n')
    await fs.writeFile(path.join(clean, '.env'), 'TOKEN=1\n')
    git(clean, 'add', '-A')
    expect(await loadSensitivePathRules(clean)).toEqual(GIT_WORKSPACE_RULES)

    const leaky = await repo({ files: ['src/a.ts', 'config/.env.production'] })
    const rules = await loadSensitivePathRules(leaky)
    expect(rules).toEqual({ bareRepoAtRoot: false, gitTracksSecrets: true })

    // An index that cannot be read: assume the worst.
    const broken = await repo()
    await fs.writeFile(path.join(broken, '.git', 'index'), 'garbage')
    expect((await loadSensitivePathRules(broken)).gitTracksSecrets).toBe(true)
    expect(STRICT_RULES.gitTracksSecrets).toBe(true)

    const printsContent = [
      'git diff',
      'git diff HEAD~1',
      'git diff --cached',
      'git show',
      'git show HEAD --stat',
      'git log -p',
      'git log --patch -n 3',
      'git log -U5',
      'git log -pn3',
      'git log --word-diff',
      'git log -L1,5:src/a.ts',
      "git log -S'TOKEN' --oneline",
      'git log -GTOKEN',
      'git log --cc',
      'git --no-pager log -p',
    ]
    const printsNone = [
      'git status',
      'git log --oneline -n 20',
      'git log --stat',
      'git log --name-only',
      'git rev-parse HEAD',
      'git branch -a',
      'git ls-files',
      'git blame src/a.ts',
    ]
    for (const command of printsContent) {
      expect({ command, auto: isReadOnlyCommand(command, rules) }).toEqual({ command, auto: false })
      // Where the repository tracks no secret, they run at once as before (DESIGN 5: `git diff` is read-only).
      expect({ command, auto: isReadOnlyCommand(command, GIT_WORKSPACE_RULES) }).toEqual({
        command,
        auto: true,
      })
    }
    for (const command of printsNone)
      expect({ command, auto: isReadOnlyCommand(command, rules) }).toEqual({ command, auto: true })

    // The bash tool's approval policy judges with the session's rules.
    const policy = (pathRules: typeof rules) =>
      bashTool.policy?.(
        { command: 'git diff', description: 'See the changes' },
        { workspace: leaky, pathRules, alwaysAllow: [], autoApproveEdits: false, sandbox: true },
      )
    expect(policy(rules)).toEqual({ kind: 'ask', protected: false })
    expect(policy(GIT_WORKSPACE_RULES)).toEqual({ kind: 'allow' })
  })
})
