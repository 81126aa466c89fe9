import { existsSync, promises as fs } from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { editFileTool } from './edit-file'
import { readFileTool } from './read-file'
import { SnapshotStore } from './snapshots'
import type { FileSnapshot } from './snapshots'
import type { ToolContext } from './tool'
import { planWrite, writeFileTool } from './write-file'
import { STRICT_RULES } from './sensitive-paths'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, putFile, removeWorkspaces, sha } from './test-fixtures/workspace'
import { applyCorpusSetup, casePath, loadPathCases, makeCorpusLayout } from './test-fixtures/path-corpus'

let base: string
let root: string
let ctx: ToolContext
let recorded: FileSnapshot[]

beforeEach(async () => {
  root = await makeWorkspace('lanes-write-')
  base = path.dirname(root)
  recorded = []
  ctx = makeToolContext(root, { snapshots: new SnapshotStore({ onRecord: (s) => recorded.push(s) }) })
})

afterEach(removeWorkspaces)

const put = (rel: string, content: string | Buffer): Promise<string> => putFile(root, rel, content)

const write = (p: string, content: string) => writeFileTool.execute({ path: p, content }, ctx)
const read = (p: string) => readFileTool.execute({ path: p }, ctx)

/** An edit by the user in their editor: new content and a later mtime. */
async function externalChange(file: string, content: string): Promise<void> {
  const at = new Date((await fs.stat(file)).mtimeMs + 2000)
  await fs.writeFile(file, content)
  await fs.utimes(file, at, at)
}

describe('write_file', () => {
  it('refuses a harmless name that links into a protected place, and names the real path', async () => {
    await put('.git/hooks/pre-commit.sample', '#!/bin/sh\n')
    await fs.symlink(path.join(root, '.git/hooks'), path.join(root, 'hooks'))
    await put('.env', 'A=1\n')
    await fs.symlink(path.join(root, '.env'), path.join(root, 'settings.txt'))
    await read('settings.txt').catch(() => undefined)
    for (const [p, real] of [
      ['hooks/pre-commit', '.git/hooks/pre-commit'],
      ['settings.txt', '.env'],
    ] as const) {
      const result = await write(p, 'rm -rf ~\n')
      expect(result.isError, p).toBe(true)
      expect(result.output).toContain(`Use its real path, "${real}"`)
    }
    expect(existsSync(path.join(root, '.git/hooks/pre-commit'))).toBe(false)
    expect(await fs.readFile(path.join(root, '.env'), 'utf8')).toBe('A=1\n')
    const edit = await editFileTool.execute(
      { path: 'settings.txt', old_string: 'A=1', new_string: 'A=2' },
      ctx,
    )
    expect(edit.isError).toBe(true)
    expect(edit.output).toContain('Use its real path, ".env"')
  })

  it('creates a file with its parent folders and says so with the line count', async () => {
    const result = await write('src/deep/new/mod.ts', 'export const x = 1\nexport const y = 2\n')
    expect(result.isError).toBe(false)
    expect(result.output).toBe('Created src/deep/new/mod.ts (2 lines).')
    expect(await fs.readFile(path.join(root, 'src/deep/new/mod.ts'), 'utf8')).toBe(
      'export const x = 1\nexport const y = 2\n',
    )
    expect(result.metadata).toMatchObject({ created: true, lines: 2, added: 2, removed: 0 })
    expect((await fs.stat(path.join(root, 'src/deep/new/mod.ts'))).mode & 0o777).toBe(
      0o666 & ~process.umask(),
    )
  })

  it('refuses to overwrite a file that was not read first, leaving it untouched', async () => {
    const file = await put('a.txt', 'precious\n')
    const result = await write('a.txt', 'clobbered\n')
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/a\.txt already exists and has not been read.*read_file/)
    expect(await fs.readFile(file, 'utf8')).toBe('precious\n')
  })

  it('overwrites a file read before, keeps its mode and gives the diff', async () => {
    const file = await put('run.sh', '#!/bin/sh\necho one\n')
    await fs.chmod(file, 0o755)
    await read('run.sh')
    const result = await write('run.sh', '#!/bin/sh\necho two\necho three\n')
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/^Overwrote run\.sh: now 3 lines \(\+2 -1\)\.$/)
    expect(await fs.readFile(file, 'utf8')).toBe('#!/bin/sh\necho two\necho three\n')
    expect((await fs.stat(file)).mode & 0o7777).toBe(0o755)
    expect(result.metadata).toMatchObject({ created: false, added: 2, removed: 1 })
    expect(result.metadata?.diff).toEqual([
      {
        oldStart: 1,
        oldLines: 2,
        newStart: 1,
        newLines: 3,
        lines: [' #!/bin/sh', '-echo one', '+echo two', '+echo three'],
      },
    ])
  })

  it('refreshes the snapshot after writing, so a second write needs no re-read', async () => {
    await write('notes.md', 'v1\n')
    const second = await write('notes.md', 'v2\n')
    expect(second.isError).toBe(false)
    const file = path.join(root, 'notes.md')
    expect(ctx.snapshots.get(file)).toEqual({
      path: file,
      mtimeMs: (await fs.stat(file)).mtimeMs,
      hash: sha('v2\n'),
    })
    expect(recorded.map((s) => s.hash)).toEqual([sha('v1\n'), sha('v2\n')])
  })

  it('refuses a write when the file changed on disk since it was read, leaving the change alone', async () => {
    const file = await put('conf.json', '{"a": 1}\n')
    await read('conf.json')
    await externalChange(file, '{"a": 1, "user": true}\n')
    const result = await write('conf.json', '{"a": 2}\n')
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/conf\.json has changed on disk since you last read it.*read_file/)
    expect(await fs.readFile(file, 'utf8')).toBe('{"a": 1, "user": true}\n')
    // Reading again clears the way.
    await read('conf.json')
    expect((await write('conf.json', '{"a": 2}\n')).isError).toBe(false)
  })

  it('does not treat a touch or a same-content rewrite as a conflict', async () => {
    const file = await put('t.txt', 'same\n')
    await read('t.txt')
    await externalChange(file, 'same\n')
    expect((await write('t.txt', 'first\n')).isError).toBe(false)
    const later = new Date(Date.now() + 10_000)
    await fs.utimes(file, later, later)
    expect((await write('t.txt', 'second\n')).isError).toBe(false)
    expect(await fs.readFile(file, 'utf8')).toBe('second\n')
  })

  it('keeps CRLF line endings and the BOM of the file it replaces', async () => {
    const file = await put('win.txt', Buffer.from('\uFEFFone\r\ntwo\r\n'))
    await read('win.txt')
    const result = await write('win.txt', 'one\nthree\n')
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/CRLF line endings were kept; its UTF-8 BOM was kept/)
    expect(await fs.readFile(file, 'utf8')).toBe('\uFEFFone\r\nthree\r\n')
    expect(result.metadata).toMatchObject({ added: 1, removed: 1 })
  })

  it('writes nothing when the content is already there', async () => {
    const file = await put('same.txt', 'x\n')
    await read('same.txt')
    const before = (await fs.stat(file)).mtimeMs
    await new Promise((r) => setTimeout(r, 20))
    const result = await write('same.txt', 'x\n')
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/already has exactly this content/)
    expect((await fs.stat(file)).mtimeMs).toBe(before)
  })

  it('refuses a directory and a path outside the workspace', async () => {
    await fs.mkdir(path.join(root, 'dir'))
    expect((await write('dir', 'x')).output).toMatch(/dir is a directory/)
    const escape = await write('../escaped.txt', 'x')
    expect(escape.isError).toBe(true)
    await expect(fs.access(path.join(base, 'escaped.txt'))).rejects.toThrow()
  })

  it('refuses to write through a hard link', async () => {
    const outside = path.join(base, 'outside.txt')
    await fs.writeFile(outside, 'shared inode\n')
    await fs.link(outside, path.join(root, 'linked.txt'))
    const result = await write('linked.txt', 'changed\n')
    expect(result.isError).toBe(true)
    expect(await fs.readFile(outside, 'utf8')).toBe('shared inode\n')
  })

  it('refuses to replace a read-only file', async () => {
    const file = await put('locked.txt', 'keep\n')
    await fs.chmod(file, 0o444)
    await read('locked.txt')
    const result = await write('locked.txt', 'nope\n')
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/locked\.txt is read-only/)
    expect(await fs.readFile(file, 'utf8')).toBe('keep\n')
  })
})

describe('planWrite', () => {
  it('plans without writing: before and after, while the tool policy flags a protected path', async () => {
    await put('.env', 'A=1\n')
    await readFileTool.execute({ path: '.env' }, ctx)
    const plan = await planWrite(ctx, { path: '.env', content: 'A=2\n' })
    expect(plan).toMatchObject({
      ok: true,
      relPath: '.env',
      before: 'A=1\n',
      after: 'A=2\n',
    })
    const policy = {
      workspace: root,
      pathRules: STRICT_RULES,
      alwaysAllow: [],
      autoApproveEdits: true,
      sandbox: true,
    }
    expect(writeFileTool.policy?.({ path: '.env', content: 'A=2\n' }, policy)).toEqual({
      kind: 'ask',
      protected: true,
    })
    expect(await fs.readFile(path.join(root, '.env'), 'utf8')).toBe('A=1\n')

    const fresh = await planWrite(ctx, { path: 'new/dir/file.ts', content: 'x' })
    expect(fresh).toMatchObject({ ok: true, before: null, after: 'x' })
    expect(writeFileTool.policy?.({ path: 'new/dir/file.ts', content: 'x' }, policy)).toEqual({
      kind: 'allow',
    })
    await expect(fs.access(path.join(root, 'new'))).rejects.toThrow()
  })

  it('builds on the content an earlier call of the turn will leave (approval preview)', async () => {
    const plan = await planWrite(ctx, { path: 'a.ts', content: 'two\n' }, { path: 'a.ts', content: 'one\n' })
    expect(plan).toMatchObject({ ok: true, before: 'one\n', after: 'two\n' })
  })
})

// The hostile path sample (src/main/test-fixtures/corpus): every tool refuses what lies outside and never touches it.
describe('file tools on the hostile path sample', () => {
  const cases = loadPathCases()
  it('refuse every outside path without touching it, and work on inside paths', async () => {
    for (const [index, c] of cases.filter((c) => c.tool === undefined || c.tool !== 'glob').entries()) {
      const caseBase = path.join(base, `case-${index}`)
      await fs.mkdir(caseBase)
      const layout = await makeCorpusLayout(caseBase, {
        rootName: 'project',
        rootFiles: { 'src/index.ts': 'export {}\n', 'README.md': '# readme\n' },
        secrets: { outside: 'secret', evil: 'secret' },
      })
      const { root: caseRoot, out } = layout
      await applyCorpusSetup(layout, c.setup_ops)
      // Configured through the root's symlink where the case says so, unlike the app (which passes the
      // real root): the tools must hold even then.
      const workspace = layout.configuredRoot
      const raw = casePath(c, layout)
      const caseCtx = { ...ctx, workspace, snapshots: new SnapshotStore() }
      const label = `${c.category}: ${raw.slice(0, 80)}`

      const results = [
        await readFileTool.execute({ path: raw }, caseCtx),
        await writeFileTool.execute({ path: raw, content: 'written by the test\n' }, caseCtx),
        await editFileTool.execute({ path: raw, old_string: 'secret', new_string: 'pwned' }, caseCtx),
      ]
      for (const secret of [path.join(out, 'secret.txt'), path.join(`${caseRoot}-evil`, 'secret.txt')])
        expect(await fs.readFile(secret, 'utf8'), label).toBe('secret')
      if (c.expect === 'outside') {
        for (const r of results) {
          expect(r.isError, label).toBe(true)
          expect(r.output, label).not.toContain('written by the test')
        }
        expect((await fs.readdir(out)).sort(), label).toEqual(['secret.txt'])
      } else if (c.category === 'long') {
        // Inside, but longer than PATH_MAX: an error result, not a crash.
        for (const r of results) expect(r.isError, label).toBe(true)
      } else {
        // Inside: write_file creates or (after the read) overwrites it.
        const readFirst = await readFileTool.execute({ path: raw }, caseCtx)
        const second = await writeFileTool.execute({ path: raw, content: 'second\n' }, caseCtx)
        expect(second.isError, `${label}: ${second.output}`).toBe(false)
        expect(readFirst.output.length, label).toBeGreaterThan(0)
      }
    }
  })
})
