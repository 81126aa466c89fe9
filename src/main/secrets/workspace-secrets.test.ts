import { execFileSync } from 'node:child_process'
import { link, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { grepTool } from '../tools/grep'
import { readFileTool } from '../tools/read-file'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { makeToolContext } from '../tools/test-fixtures/tool-context'
import { markerFor } from './redactor'
import { MAX_SECRET_FILE_BYTES, WorkspaceSecrets, workspaceSecrets } from './workspace-secrets'

const dirs: string[] = []
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

async function workspace(files: Record<string, string | Buffer>): Promise<string> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'lanes-ws-secrets-')))
  dirs.push(root)
  for (const [name, content] of Object.entries(files)) {
    await mkdir(join(root, name, '..'), { recursive: true })
    await writeFile(join(root, name), content)
  }
  return root
}

describe('WorkspaceSecrets', () => {
  it('knows the values of every kind of secret file, and not the common ones', async () => {
    const root = await workspace({
      '.env': 'API_KEY=sk-live-4f9a8b7c6d5e\nPORT=3000\nHOST=localhost\nDEBUG=true\n',
      'app/.env.local': 'export SESSION_SECRET="s3ss10n-Secret-x"\n',
      '.npmrc': '//registry.npmjs.org/:_authToken=npm_AbCdEf0123456789\n',
      '.aws/credentials': '[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY\n',
      '.env.example': 'API_KEY=placeholder-Value-123\n',
      'src/app.ts': 'export const port = 3000\n',
    })
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    const r = secrets.redactor()
    const text =
      'sk-live-4f9a8b7c6d5e s3ss10n-Secret-x npm_AbCdEf0123456789 wJalrXUtnFEMI/K7MDENG/bPxRfiCY port 3000 on localhost true'
    expect(r.redactText(text)).toBe(
      `${markerFor('.env')} ${markerFor('app/.env.local')} ${markerFor('.npmrc')} ${markerFor('.aws/credentials')} port 3000 on localhost true`,
    )
    // A template is not a secret file: its placeholder stays visible.
    expect(r.redactText('placeholder-Value-123')).toBe('placeholder-Value-123')
  })

  it('learns changed and new secret values incrementally', async () => {
    const root = await workspace({ '.env': 'A=first-Value-0001\n' })
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    expect(secrets.redactor().holdsSecret('first-Value-0001')).toBe(true)
    await writeFile(join(root, '.env'), 'A=second-Value-0002\n')
    await writeFile(join(root, '.env.prod'), 'B=third-Value-0003\n')
    await secrets.refresh()
    expect(secrets.redactor().holdsSecret('first-Value-0001')).toBe(false)
    expect(secrets.redactor().holdsSecret('second-Value-0002')).toBe(true)
    expect(secrets.redactor().holdsSecret('third-Value-0003')).toBe(true)
  })

  it('reads a secret file over the cap only up to it, and says so; a binary one is hidden and noted', async () => {
    const big = `FIRST=early-Value-0001\n${'# padding\n'.repeat(MAX_SECRET_FILE_BYTES / 10 + 10)}LATE=late-Value-0002\n`
    const root = await workspace({
      '.env': big,
      'certs/store.p12': Buffer.from([0x30, 0x82, 0x00, 0x01, 0x02, 0x00, 0x41, 0x42]),
    })
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    expect(secrets.redactor().holdsSecret('early-Value-0001')).toBe(true)
    expect(secrets.redactor().holdsSecret('late-Value-0002')).toBe(false)
    const notes = secrets.notes().join('\n')
    expect(notes).toMatch(/The secret file \.env is \d+ bytes, more than the 1 MiB read/)
    expect(notes).toMatch(/certs\/store\.p12 is binary: it stays hidden/)
  })

  it('masks every other name of a secret file (a hard link), also one made after the first scan', async () => {
    const root = await workspace({ '.env': 'K=hard-Link-Value-1\n', 'docs/readme.md': 'hi\n' })
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    expect(secrets.hasLinkedSecrets()).toBe(false)
    await link(join(root, '.env'), join(root, 'docs', 'notes.txt'))
    const masks = secrets.masks()
    expect(masks.secrets.map((m) => m.path)).toEqual(
      expect.arrayContaining([join(root, '.env'), join(root, 'docs', 'notes.txt')]),
    )
    expect(masks.secrets.map((m) => m.path)).not.toContain(join(root, 'docs', 'readme.md'))
    expect(secrets.hasLinkedSecrets()).toBe(true)
  })

  it('masks a hard link made after the last command in the masks a command gets (the watched index)', async () => {
    const root = await workspace({ '.env': 'K=hard-Link-Value-2\n', 'docs/readme.md': 'hi\n' })
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    expect((await secrets.freshMasks()).secrets.map((m) => m.path)).toEqual([join(root, '.env')])
    await link(join(root, '.env'), join(root, 'docs', 'notes.txt'))
    expect((await secrets.freshMasks()).secrets.map((m) => m.path).sort()).toEqual(
      [join(root, '.env'), join(root, 'docs', 'notes.txt')].sort(),
    )
    secrets.close()
  })

  it("never lets a tool read Lanes' own data inside the workspace", async () => {
    const root = await workspace({
      'lanes-data/sessions/s1.jsonl': '{"type":"session.created","needle":1}\n',
      'src/a.ts': 'needle\n',
    })
    const secrets = workspaceSecrets(root)
    secrets.addOwnFolder(join(root, 'lanes-data'))
    const ctx = makeToolContext(root)
    const read = await readFileTool.execute({ path: 'lanes-data/sessions/s1.jsonl' }, ctx)
    expect(read.isError).toBe(true)
    expect(read.output).toMatch(/Lanes' own data/)
    const found = await grepTool.execute({ pattern: 'needle' }, ctx)
    expect(found.output).toBe('src/a.ts:1:needle')
    expect(secrets.masks().secrets).toContainEqual({ path: join(root, 'lanes-data'), kind: 'dir' })
  })
})

describe.skipIf(!sandboxSupport().available)('what git keeps of secret files', () => {
  const git = (cwd: string, ...args: string[]): string =>
    execFileSync(
      'git',
      ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args],
      {
        cwd,
        encoding: 'utf8',
        env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      },
    )

  it('finds a secret in a commit that no ref or reflog names any more', async () => {
    const root = await workspace({ 'README.md': 'hi\n' })
    git(root, 'init', '-q')
    git(root, 'add', 'README.md')
    git(root, 'commit', '-qm', 'one')
    await writeFile(join(root, '.env'), 'TOKEN=orphan-Commit-Value-5\n')
    git(root, 'add', '.env')
    git(root, 'commit', '-qm', 'oops')
    git(root, 'reset', '-q', '--hard', 'HEAD~1')
    git(root, 'reflog', 'expire', '--expire=now', '--all')
    expect(git(root, 'rev-list', '--all', '--reflog', '--objects')).not.toContain('.env')
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    expect(secrets.redactor().redactText('orphan-Commit-Value-5')).toBe(markerFor('git history of .env'))
    expect(secrets.notes()).toEqual([])
  })

  it('an empty repository and a folder without git give no values and no notes', async () => {
    const root = await workspace({ 'a.txt': 'x\n' })
    git(root, 'init', '-q')
    const secrets = new WorkspaceSecrets(root)
    await secrets.ready()
    expect(secrets.redactor().size).toBe(0)
    expect(secrets.notes()).toEqual([])
  })
})
