import { promises as fs } from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { editFileTool, planEdit } from './edit-file'
import { readFileTool } from './read-file'
import type { ToolContext } from './tool'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, putFile, removeWorkspaces } from './test-fixtures/workspace'

let root: string
let ctx: ToolContext

beforeEach(async () => {
  root = await makeWorkspace('lanes-edit-')
  ctx = makeToolContext(root)
})

afterEach(removeWorkspaces)

/** Creates the file and reads it through read_file, as the model must before editing. */
async function readyFile(rel: string, content: string | Buffer): Promise<string> {
  const file = await putFile(root, rel, content)
  const read = await readFileTool.execute({ path: rel }, ctx)
  expect(read.isError).toBe(false)
  return file
}

const edit = (input: { path: string; old_string: string; new_string: string; replace_all?: boolean }) =>
  editFileTool.execute(input, ctx)

const SOURCE = 'function add(a, b) {\n  return a + b\n}\n\nfunction sub(a, b) {\n  return a - b\n}\n'

describe('edit_file', () => {
  it('replaces a unique occurrence, gives the diff and an excerpt of the result', async () => {
    const file = await readyFile('src/math.js', SOURCE)
    const result = await edit({
      path: 'src/math.js',
      old_string: '  return a - b',
      new_string: '  return a - b // minus',
    })
    expect(result.isError).toBe(false)
    expect(await fs.readFile(file, 'utf8')).toBe(SOURCE.replace('return a - b', 'return a - b // minus'))
    expect(result.output).toMatch(
      /^Edited src\/math\.js: replaced 1 occurrence \(\+1 -1 lines\)\. It now reads:/,
    )
    expect(result.output).toContain('     6|  return a - b // minus')
    expect(result.output).toContain('     5|function sub(a, b) {')
    expect(result.metadata).toMatchObject({ added: 1, removed: 1, replacements: 1 })
    expect(result.title).toBe('Edit src/math.js (+1 -1)')
  })

  it('its excerpt cuts a long line only after hiding secret values (no start of a value where it is cut)', async () => {
    const secret = 'sk-live-Ed1tCut-44aa55bb'
    await putFile(root, '.env', `API_TOKEN=${secret}\n`)
    await readyFile('min.js', `var t="${'z'.repeat(1985)}${secret}";\nconst a = 1\n`)
    const result = await edit({ path: 'min.js', old_string: 'const a = 1', new_string: 'const a = 2' })
    expect(result.isError).toBe(false)
    expect(result.output).toContain('     2|const a = 2')
    expect(result.output).not.toContain('sk-live')
    expect(result.output).toMatch(/z\[secret[^\]]*… \[line truncated/)
  })

  describe('a file that holds a secret value is matched as the model saw it (the value hidden)', () => {
    const secret = 'sk-live-Ed1tOracle-1a2b3c'
    const marker = '[secret from .env hidden]'
    beforeEach(async () => {
      await putFile(root, '.env', `API_TOKEN=${secret}\n`)
      await readyFile('settings.py', `API_TOKEN = "${secret}"\nDEBUG = True\n`)
    })

    it('a right and a wrong guess of the value get the same answer', async () => {
      const answer = async (guess: string): Promise<string> =>
        (await edit({ path: 'settings.py', old_string: `API_TOKEN = "${guess}`, new_string: 'x' })).output
      const right = await answer('sk-live-Ed1')
      expect(right).toBe(await answer('sk-live-XXX'))
      expect(right).toMatch(/^old_string was not found/)
    })

    it('a line quoted with its marker is edited, the value kept where the marker stays', async () => {
      const result = await edit({
        path: 'settings.py',
        old_string: `API_TOKEN = "${marker}"`,
        new_string: `API_TOKEN = "${marker}"  # from the vault`,
      })
      expect(result.isError).toBe(false)
      expect(await fs.readFile(path.join(root, 'settings.py'), 'utf8')).toBe(
        `API_TOKEN = "${secret}"  # from the vault\nDEBUG = True\n`,
      )
      expect(result.output).not.toContain(secret)
    })

    it('the text around a value is edited without touching it', async () => {
      const result = await edit({
        path: 'settings.py',
        old_string: 'DEBUG = True',
        new_string: 'DEBUG = False',
      })
      expect(result.isError).toBe(false)
      expect(await fs.readFile(path.join(root, 'settings.py'), 'utf8')).toBe(
        `API_TOKEN = "${secret}"\nDEBUG = False\n`,
      )
    })

    it('refuses part of a marker, and a marker new_string invents', async () => {
      const partial = await edit({ path: 'settings.py', old_string: 'API_TOKEN = "[secret', new_string: 'x' })
      expect(partial.output).toMatch(/covers part of \[secret from \.env hidden\]/)
      const invented = await edit({
        path: 'settings.py',
        old_string: 'DEBUG = True',
        new_string: `DEBUG = "${marker}"`,
      })
      expect(invented.output).toMatch(/old_string covers no value behind it/)
      expect(await fs.readFile(path.join(root, 'settings.py'), 'utf8')).toBe(
        `API_TOKEN = "${secret}"\nDEBUG = True\n`,
      )
    })
  })

  it('refuses when old_string occurs twice, giving the count and the lines', async () => {
    const file = await readyFile('m.js', SOURCE)
    const result = await edit({ path: 'm.js', old_string: '(a, b) {', new_string: '(x, y) {' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(
      /occurs 2 times in m\.js \(at lines 1, 5\).*more surrounding lines.*replace_all/,
    )
    expect(await fs.readFile(file, 'utf8')).toBe(SOURCE)
  })

  it('replaces every occurrence with replace_all', async () => {
    const file = await readyFile('m.js', SOURCE)
    const result = await edit({ path: 'm.js', old_string: '(a, b)', new_string: '(x, y)', replace_all: true })
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/replaced 2 occurrences/)
    expect(await fs.readFile(file, 'utf8')).toBe(SOURCE.replaceAll('(a, b)', '(x, y)'))
  })

  it('refuses when old_string is not found and says how to fix it', async () => {
    const file = await readyFile('m.js', SOURCE)
    const result = await edit({ path: 'm.js', old_string: 'return a * b', new_string: 'x' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(
      /old_string was not found in m\.js\. Re-read the file with read_file.*whitespace, indentation/,
    )
    expect(await fs.readFile(file, 'utf8')).toBe(SOURCE)
  })

  it('points at text that matches when whitespace is ignored', async () => {
    await readyFile('m.js', SOURCE)
    const result = await edit({
      path: 'm.js',
      old_string: 'function sub(a, b) {\n    return a - b\n}',
      new_string: 'x',
    })
    expect(result.output).toMatch(/whitespace is ignored starts at line 5/)
  })

  it('notices line-number prefixes copied from read_file', async () => {
    await readyFile('m.js', SOURCE)
    const result = await edit({
      path: 'm.js',
      old_string: '     2|  return a + b\n     3|}',
      new_string: 'x',
    })
    expect(result.output).toMatch(/line-number prefixes/)
  })

  it('refuses identical old_string and new_string', async () => {
    await readyFile('m.js', SOURCE)
    const result = await edit({ path: 'm.js', old_string: 'add', new_string: 'add' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/identical/)
  })

  it('deletes text when new_string is empty', async () => {
    const file = await readyFile('m.js', SOURCE)
    expect(
      (
        await edit({
          path: 'm.js',
          old_string: '\nfunction sub(a, b) {\n  return a - b\n}\n',
          new_string: '',
        })
      ).isError,
    ).toBe(false)
    expect(await fs.readFile(file, 'utf8')).toBe('function add(a, b) {\n  return a + b\n}\n')
  })

  it('keeps CRLF line endings when the model sends LF strings', async () => {
    const crlf = SOURCE.replace(/\n/g, '\r\n')
    const file = await readyFile('win.js', crlf)
    const result = await edit({
      path: 'win.js',
      old_string: 'function sub(a, b) {\n  return a - b\n}',
      new_string: 'function sub(a, b) {\n  // subtract\n  return a - b\n}',
    })
    expect(result.isError).toBe(false)
    expect(result.output).toMatch(/CRLF line endings were kept/)
    expect(await fs.readFile(file, 'utf8')).toBe(
      crlf.replace('{\r\n  return a - b', '{\r\n  // subtract\r\n  return a - b'),
    )
  })

  it('keeps a UTF-8 BOM', async () => {
    const file = await readyFile('bom.txt', '\uFEFFhello world\n')
    expect((await edit({ path: 'bom.txt', old_string: 'world', new_string: 'there' })).isError).toBe(false)
    expect([...(await fs.readFile(file)).subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
    expect(await fs.readFile(file, 'utf8')).toBe('\uFEFFhello there\n')
  })

  it('keeps the file mode', async () => {
    const file = await readyFile('tool.sh', '#!/bin/sh\necho a\n')
    await fs.chmod(file, 0o750)
    expect((await edit({ path: 'tool.sh', old_string: 'echo a', new_string: 'echo b' })).isError).toBe(false)
    expect((await fs.stat(file)).mode & 0o7777).toBe(0o750)
  })

  it('leaves bytes that are not valid UTF-8 elsewhere in the file untouched', async () => {
    const original = Buffer.concat([
      Buffer.from('name: caf'),
      Buffer.from([0xe9]),
      Buffer.from('\nvalue: 1\n'),
    ])
    const file = await readyFile('latin1.txt', original)
    expect((await edit({ path: 'latin1.txt', old_string: 'value: 1', new_string: 'value: 2' })).isError).toBe(
      false,
    )
    const expected = Buffer.concat([
      Buffer.from('name: caf'),
      Buffer.from([0xe9]),
      Buffer.from('\nvalue: 2\n'),
    ])
    expect((await fs.readFile(file)).equals(expected)).toBe(true)
  })

  it('requires the file to have been read first', async () => {
    const file = path.join(root, 'unread.txt')
    await fs.writeFile(file, 'abc\n')
    const result = await edit({ path: 'unread.txt', old_string: 'abc', new_string: 'xyz' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/not been read.*read_file/)
    expect(await fs.readFile(file, 'utf8')).toBe('abc\n')
  })

  it('refuses an edit after the file changed on disk since it was read, leaving it untouched', async () => {
    const file = await readyFile('c.txt', 'alpha\nbeta\n')
    const later = new Date((await fs.stat(file)).mtimeMs + 2000)
    await fs.writeFile(file, 'alpha\nbeta\ngamma (user)\n')
    await fs.utimes(file, later, later)
    const result = await edit({ path: 'c.txt', old_string: 'beta', new_string: 'BETA' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/changed on disk since you last read it/)
    expect(await fs.readFile(file, 'utf8')).toBe('alpha\nbeta\ngamma (user)\n')
  })

  it('allows consecutive edits without re-reading', async () => {
    const file = await readyFile('seq.txt', 'one two three\n')
    expect((await edit({ path: 'seq.txt', old_string: 'one', new_string: '1' })).isError).toBe(false)
    expect((await edit({ path: 'seq.txt', old_string: 'two', new_string: '2' })).isError).toBe(false)
    expect(await fs.readFile(file, 'utf8')).toBe('1 2 three\n')
  })

  it('tells the model to use write_file for a file that does not exist', async () => {
    const result = await edit({ path: 'missing.ts', old_string: 'a', new_string: 'b' })
    expect(result.isError).toBe(true)
    expect(result.output).toMatch(/File not found: missing\.ts.*write_file/)
  })
})

describe('planEdit', () => {
  it('plans without writing', async () => {
    const file = await readyFile('p.txt', 'before\n')
    const plan = await planEdit(ctx, { path: 'p.txt', old_string: 'before', new_string: 'after' })
    expect(plan).toMatchObject({
      ok: true,
      relPath: 'p.txt',
      before: 'before\n',
      after: 'after\n',
      replacements: 1,
    })
    expect(await fs.readFile(file, 'utf8')).toBe('before\n')
  })

  it('plans on top of an earlier call of the same turn', async () => {
    await readyFile('p.txt', 'one\n')
    const plan = await planEdit(
      ctx,
      { path: 'p.txt', old_string: 'two', new_string: 'three' },
      { path: 'p.txt', content: 'two\n' },
    )
    expect(plan).toMatchObject({ ok: true, before: 'two\n', after: 'three\n' })
  })
})
