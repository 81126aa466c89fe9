import { promises as fs } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hooksPathIn } from '../git/hooks-path'
import { isReadOnlyCommand, loadBashGrammar } from './bash/validate'
import { editFileTool } from './edit-file'
import { globTool } from './glob'
import { grepTool } from './grep'
import { readFileTool } from './read-file'
import {
  GIT_WORKSPACE_RULES,
  isProtectedPath,
  isSecretPath,
  loadSensitivePathRules,
  secretFolderContext,
  STRICT_RULES,
  type SensitivePathRules,
} from './sensitive-paths'
import { expectedProtected, SENSITIVE_PATH_TABLE } from './sensitive-paths.table'
import { writeFileTool } from './write-file'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, removeWorkspaces } from './test-fixtures/workspace'

const tempWorkspace = (): Promise<string> => makeWorkspace('lanes-sensitive-')

const context = (workspace: string, pathRules: SensitivePathRules) =>
  makeToolContext(workspace, { pathRules })

/** What each table file holds: a marker no other row's marker contains. */
const marker = (rel: string): string => `needle[${rel}]`

afterAll(removeWorkspaces)

describe('isSecretPath and isProtectedPath', () => {
  it.each(SENSITIVE_PATH_TABLE)('judge $path', (row) => {
    expect(isSecretPath(row.path)).toBe(row.secret)
    expect(isProtectedPath(row.path, GIT_WORKSPACE_RULES)).toBe(expectedProtected(row, true))
    expect(isProtectedPath(row.path, STRICT_RULES)).toBe(expectedProtected(row, false))
    // Every secret is protected; the same name with `./`, doubled, trailing or Windows separators is judged alike.
    if (row.secret) expect(isProtectedPath(row.path, GIT_WORKSPACE_RULES)).toBe(true)
    expect(isSecretPath(`./${row.path.replace(/\//g, '//')}`)).toBe(row.secret)
    expect(isSecretPath(row.path.replace(/\//g, '\\'))).toBe(row.secret)
    expect(isSecretPath(`${row.path}/`)).toBe(row.secret)
    for (const variant of [row.path.replace(/\//g, '\\'), `${row.path}/`])
      expect(isProtectedPath(variant, GIT_WORKSPACE_RULES)).toBe(expectedProtected(row, true))
    expect(isProtectedPath(row.path.replace(/\//g, '\\'), STRICT_RULES)).toBe(expectedProtected(row, false))
  })

  it.each([
    ['src\\keys\\id_rsa', true, true],
    ['keys//server.PEM//', true, true],
    ['a/b\\CREDENTIALS.JSON', true, true],
    ['home\\.ssh\\notes.txt', true, true],
    ['x/.SSH/', true, true],
    ['deploy\\.ENV.example', false, true],
    ['ci\\.github\\deploy.yml', false, true],
    ['lib//.GITMODULES/', false, true],
    ['src/env.ts/', false, false],
    ['keys/id_rsa.pub', false, false],
    ['', false, false],
    ['/', false, false],
    ['\\\\', false, false],
  ])(
    'judge %j by its last segment and its dotted folders, whatever the separators',
    (name, secret, protect) => {
      expect(isSecretPath(name)).toBe(secret)
      expect(isProtectedPath(name, GIT_WORKSPACE_RULES)).toBe(protect)
    },
  )

  it('protect git-like root files only as themselves, and folders with their content', () => {
    expect(isProtectedPath('config/database.yml', STRICT_RULES)).toBe(false)
    expect(isProtectedPath('HEAD/x', STRICT_RULES)).toBe(false)
    expect(isProtectedPath('refs', STRICT_RULES)).toBe(true)
    expect(isProtectedPath('objects', STRICT_RULES)).toBe(true)
    expect(isProtectedPath('.', STRICT_RULES)).toBe(false)
    expect(isProtectedPath('', STRICT_RULES)).toBe(false)
  })

  it('read a name as Windows and a Mac would where git may look (.git., .git::$INDEX_ALLOCATION, git~1)', () => {
    for (const name of [
      '.git./hooks/pre-commit',
      '.git /config',
      '.git::$INDEX_ALLOCATION/config',
      'GIT~1/config',
      '.g\u200cit/hooks/x',
      'sub/.gitmodules.',
      '.vscode../tasks.json',
    ])
      expect(isProtectedPath(name, GIT_WORKSPACE_RULES), name).toBe(true)
    for (const name of ['.env.', '.env:stream', '.e\u200dnv', 'keys/id_rsa '])
      expect(isSecretPath(name), name).toBe(true)
    for (const name of ['a.', '...', 'notes~1.txt', 'git~2/config', 'src/a:b.ts', '.gitx/x'])
      expect(isProtectedPath(name, GIT_WORKSPACE_RULES), name).toBe(false)
  })

  it('protect the folder the repository’s config names for its hooks, and only it', () => {
    const rules = { ...GIT_WORKSPACE_RULES, hooksPath: 'scripts/hooks' }
    expect(isProtectedPath('scripts/hooks/pre-commit', rules)).toBe(true)
    expect(isProtectedPath('Scripts/Hooks/lib/common.sh', rules)).toBe(true)
    expect(isProtectedPath('scripts/hooks', rules)).toBe(false)
    expect(isProtectedPath('scripts/build.sh', rules)).toBe(false)
    expect(isProtectedPath('scripts/hooks/pre-commit', GIT_WORKSPACE_RULES)).toBe(false)
    const atRoot = { ...GIT_WORKSPACE_RULES, hooksPath: '' }
    expect(isProtectedPath('pre-push', atRoot)).toBe(true)
    expect(isProtectedPath('src/a.ts', atRoot)).toBe(false)
    expect(hooksPathIn('[core]\n\thooksPath = .githooks\n[core "x"]\n\thooksPath = no\n')).toBe('.githooks')
    expect(hooksPathIn('[Core] HooksPath = "scripts/my hooks" ; a comment\n')).toBe('scripts/my hooks')
    expect(hooksPathIn('[user]\n\thooksPath = no\n')).toBeNull()
  })

  it('give two folders the same context only when every name below them is judged alike', () => {
    const folders = [
      '',
      'a',
      'a/b',
      'gh',
      '.config',
      'x/.config',
      '.config/gh',
      'x/.config/gh',
      '.config/app',
      '.config/gh/extra',
      '.ssh',
      'home/.ssh/keys',
      '.docker',
      'y/.docker',
      '.kube',
      '.config/gcloud',
      '.config/gcloud/legacy',
      '.cargo',
      '.gem',
    ]
    // Every table path, and every tail of one (`gh/hosts.yml`, `hosts.yml`), below every folder.
    const rests = new Set(
      SENSITIVE_PATH_TABLE.flatMap((row) => row.path.split('/').map((_, i, all) => all.slice(i).join('/'))),
    )
    const byContext = new Map<string, string[]>()
    for (const folder of folders) {
      const context = secretFolderContext(folder)
      byContext.set(context, [...(byContext.get(context) ?? []), folder])
    }
    for (const group of byContext.values()) {
      for (const rest of rests) {
        const judged = group.map((folder) => isSecretPath(folder === '' ? rest : `${folder}/${rest}`))
        expect({ group, rest, judged }).toEqual({ group, rest, judged: judged.map(() => judged[0]) })
      }
    }
    // The contexts tell apart what must be told apart, and nothing more.
    expect(secretFolderContext('a/b')).toBe(secretFolderContext(''))
    expect(secretFolderContext('x/.config')).toBe(secretFolderContext('.config'))
    expect(secretFolderContext('.config')).not.toBe(secretFolderContext(''))
    expect(secretFolderContext('.config/gh')).not.toBe(secretFolderContext('.config'))
    expect(secretFolderContext('home/.ssh/keys')).toBe(secretFolderContext('.config/gcloud'))
  })

  it('learn from the workspace whether it has a .git of its own, folder or file', async () => {
    const plain = await tempWorkspace()
    expect(await loadSensitivePathRules(plain)).toEqual(STRICT_RULES)
    const repo = await tempWorkspace()
    await fs.mkdir(path.join(repo, '.git'))
    expect(await loadSensitivePathRules(repo)).toEqual(GIT_WORKSPACE_RULES)
    const worktree = await tempWorkspace()
    await fs.writeFile(path.join(worktree, '.git'), 'gitdir: /elsewhere\n')
    expect(await loadSensitivePathRules(worktree)).toEqual(GIT_WORKSPACE_RULES)
    expect(await loadSensitivePathRules(path.join(plain, 'missing'))).toEqual(STRICT_RULES)
  })
})

describe('every tool judges the table the same way', () => {
  let ws: string
  let rules: SensitivePathRules
  beforeAll(async () => {
    await loadBashGrammar()
    ws = await tempWorkspace()
    await fs.mkdir(path.join(ws, 'links'))
    for (const [i, row] of SENSITIVE_PATH_TABLE.entries()) {
      const file = path.join(ws, row.path)
      await fs.mkdir(path.dirname(file), { recursive: true })
      await fs.writeFile(file, `${marker(row.path)}\n`)
      // A harmless-looking name leading to the row's file, relative so the link stays inside.
      await fs.symlink(path.relative(path.join(ws, 'links'), file), path.join(ws, 'links', `link-${i}`))
    }
    // The table holds `.git/config`, so this is a workspace with its own .git.
    rules = await loadSensitivePathRules(ws)
  })

  it('grep never shows a secret line, and shows every other file outside .git/', async () => {
    const result = await grepTool.execute({ pattern: 'needle' }, context(ws, rules))
    expect(result.isError).toBe(false)
    for (const row of SENSITIVE_PATH_TABLE) {
      const shown = result.output.includes(marker(row.path))
      if (row.secret) expect(shown, row.path).toBe(false)
      else if (!row.path.startsWith('.git/')) expect(shown, row.path).toBe(true)
    }
    // No trace of the secret files: they are not counted either.
    expect(result.metadata).not.toHaveProperty('withheld')
    const shownLines = result.output.split('\n').filter((l) => l.includes('needle['))
    expect(result.metadata).toMatchObject({ matches: shownLines.length })
  })

  it('grep judges files by their name in the workspace, also when it searches inside a secret folder', async () => {
    for (const folder of ['.aws', '.ssh', 'home/.ssh', '.gnupg']) {
      const result = await grepTool.execute({ pattern: 'needle', path: folder }, context(ws, rules))
      expect(result.output, folder).not.toContain('needle[')
      expect(result.metadata, folder).toMatchObject({ matches: 0 })
    }
  })

  it('glob lists the names of secret files (never their content), like any other file', async () => {
    const result = await globTool.execute({ pattern: '**/*' }, context(ws, rules))
    const listed = new Set(result.output.split('\n\n')[0]?.split('\n'))
    for (const row of SENSITIVE_PATH_TABLE) {
      if (!row.path.startsWith('.git/')) expect(listed.has(row.path), row.path).toBe(true)
    }
    expect(result.output).not.toContain('needle[')
  })

  it('read_file refuses a link that hides a secret, and reads through any other link', async () => {
    for (const [i, row] of SENSITIVE_PATH_TABLE.entries()) {
      const result = await readFileTool.execute({ path: `links/link-${i}` }, context(ws, rules))
      if (row.secret) {
        expect(result.isError, row.path).toBe(true)
        expect(result.output, row.path).toContain('symbolic link')
        expect(result.output, row.path).not.toContain('needle[')
      } else {
        expect(result.output, row.path).toContain(marker(row.path))
      }
    }
  })

  it('write_file and edit_file refuse a link that hides a protected path', async () => {
    for (const [i, row] of SENSITIVE_PATH_TABLE.entries()) {
      const link = `links/link-${i}`
      const ctx = context(ws, rules)
      await readFileTool.execute({ path: link }, ctx)
      const written = await writeFileTool.execute({ path: link, content: 'x\n' }, ctx)
      const edited = await editFileTool.execute({ path: link, old_string: 'needle', new_string: 'pin' }, ctx)
      for (const result of [written, edited]) {
        const refused = result.isError && result.output.includes('symbolic link')
        expect(refused, `${row.path}: ${result.output}`).toBe(expectedProtected(row, true))
      }
    }
  })

  it("write_file refuses a link to a bare repository's config in a workspace without .git", async () => {
    const plain = await tempWorkspace()
    await fs.symlink('config', path.join(plain, 'notes.txt'))
    const ctx = context(plain, await loadSensitivePathRules(plain))
    const result = await writeFileTool.execute({ path: 'notes.txt', content: '[core]\n' }, ctx)
    expect(result.isError).toBe(true)
    expect(result.output).toContain('protected path')
    await expect(fs.access(path.join(plain, 'config'))).rejects.toThrow()
  })

  it('bash treats reading a protected path as needing approval, and any other file as read-only', () => {
    for (const row of SENSITIVE_PATH_TABLE) {
      expect(isReadOnlyCommand(`cat ${row.path}`), row.path).toBe(!expectedProtected(row, true))
    }
  })
})
