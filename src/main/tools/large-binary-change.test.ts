import { promises as fs } from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { WritePreview } from '../../shared/events'
import { editFileTool } from './edit-file'
import { fullDiffLines, NOT_APPLIED_TEXT, type ChangePlan } from './file-change'
import { readFileTool } from './read-file'
import { SnapshotStore } from './snapshots'
import type { PreviewResult, ToolContext } from './tool'
import { writeFileTool, type WriteFileInput } from './write-file'
import { makeToolContext } from './test-fixtures/tool-context'
import { makeWorkspace, putFile, removeWorkspaces, sha } from './test-fixtures/workspace'

/**
 * Large and binary changes (issue 23, item 3), through the real tools on a real folder: what the review is given
 * (the preview) and what lands (the bytes on disk) must be the same change, byte for byte.
 */

let root: string
let ctx: ToolContext

beforeEach(async () => {
  root = await makeWorkspace('lanes-large-binary-')
  ctx = makeToolContext(root, { snapshots: new SnapshotStore() })
})
afterEach(removeWorkspaces)

// A real 1x1 PNG (red pixel).
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
)

async function preview(input: unknown): Promise<PreviewResult<ChangePlan>> {
  const result = await writeFileTool.preview!(input as WriteFileInput, ctx, { protected: false })
  return result as PreviewResult<ChangePlan>
}

describe('a binary write', () => {
  it('is reviewed as binary (size, type, image) and lands as exactly the bytes reviewed', async () => {
    const input = { path: 'img/dot.png', content: PNG.toString('base64'), encoding: 'base64' }
    const reviewed = await preview(input)
    if (!reviewed.ok) throw new Error(reviewed.error)
    const shown = WritePreview.parse(JSON.parse(JSON.stringify(reviewed.preview)))
    expect(shown).toMatchObject({ show: 'binary', hunks: [], files: { before: null } })
    expect(shown.files?.after).toMatchObject({ bytes: PNG.length, binary: true, mime: 'image/png' })
    expect(Buffer.from(shown.files?.after.image ?? '', 'base64').equals(PNG)).toBe(true)
    // Never its bytes as text: no `after` to diff or edit.
    expect(shown.after).toBeUndefined()
    expect(shown.before).toBeUndefined()

    const result = await writeFileTool.execute(input as WriteFileInput, ctx, reviewed)
    expect(result.isError, result.output).toBe(false)
    expect(result.output).toBe(`Created img/dot.png (${PNG.length} bytes, PNG image).`)
    expect(result.title).toBe(`Create img/dot.png (${PNG.length} bytes, PNG image)`)
    const onDisk = await fs.readFile(path.join(root, 'img/dot.png'))
    expect(onDisk.equals(PNG)).toBe(true)
    expect(sha(onDisk)).toBe(shown.files?.after.sha256)
  })

  it('refuses bytes sent as text (a NUL) and an unpaired surrogate, which would not land as reviewed', async () => {
    const latin1 = PNG.toString('latin1')
    const nul = await writeFileTool.execute({ path: 'broken.png', content: latin1 }, ctx)
    expect(nul.isError).toBe(true)
    expect(nul.output).toContain('"encoding": "base64"')
    const lone = await writeFileTool.execute({ path: 'x.txt', content: 'a\uD800b' }, ctx)
    expect(lone.isError).toBe(true)
    expect(lone.output).toContain('unpaired UTF-16 surrogate')
    await expect(fs.readdir(root)).resolves.toEqual([])
  })

  it('refuses content that is not strict base64', async () => {
    for (const content of ['abc', 'ab$=', 'YQ=a', 'YR=='])
      expect(
        (await writeFileTool.execute({ path: 'x.bin', content, encoding: 'base64' }, ctx)).isError,
        content,
      ).toBe(true)
    const ok = await writeFileTool.execute({ path: 'x.bin', content: 'YQ==\n', encoding: 'base64' }, ctx)
    expect(ok.isError).toBe(false)
    expect(await fs.readFile(path.join(root, 'x.bin'), 'utf8')).toBe('a')
  })

  it('replaces a binary file once read_file saw it, and never lands other bytes than the ones reviewed', async () => {
    await putFile(root, 'logo.png', PNG)
    const refused = await readFileTool.execute({ path: 'logo.png' }, ctx)
    expect(refused.output).toContain(`It is ${PNG.length} bytes (PNG image)`)
    const other = Buffer.concat([PNG, Buffer.from([0, 1, 2, 255])])
    const input = { path: 'logo.png', content: other.toString('base64'), encoding: 'base64' } as const
    const reviewed = await preview(input)
    if (!reviewed.ok) throw new Error(reviewed.error)
    expect(reviewed.preview).toMatchObject({
      show: 'binary',
      files: { before: { bytes: PNG.length, mime: 'image/png' }, after: { bytes: other.length } },
    })
    // After a restart only the logged preview is left: a call whose bytes differ from it does not land.
    const logged = { preview: reviewed.preview }
    const tampered = { ...input, content: Buffer.concat([other, Buffer.from([7])]).toString('base64') }
    const wrong = await writeFileTool.execute(tampered, ctx, logged)
    expect(wrong).toMatchObject({ isError: true, output: NOT_APPLIED_TEXT })
    expect((await fs.readFile(path.join(root, 'logo.png'))).equals(PNG)).toBe(true)
    const right = await writeFileTool.execute(input, ctx, logged)
    expect(right.isError, right.output).toBe(false)
    expect((await fs.readFile(path.join(root, 'logo.png'))).equals(other)).toBe(true)
  })

  it('shows an edit of a text file with invalid bytes as binary, and keeps those bytes', async () => {
    const bytes = Buffer.concat([Buffer.from('name = old\n'), Buffer.from([0xff, 0xfe, 0x0a])])
    await putFile(root, 'data.cfg', bytes)
    // read_file takes a few stray bytes as text: the edit goes through its check.
    await readFileTool.execute({ path: 'data.cfg' }, ctx)
    const input = { path: 'data.cfg', old_string: 'old', new_string: 'new' }
    const reviewed = await editFileTool.preview!(input, ctx, { protected: false })
    if (!reviewed.ok) throw new Error(reviewed.error)
    expect(reviewed.preview).toMatchObject({ show: 'binary', hunks: [] })
    const result = await editFileTool.execute(input, ctx, reviewed as never)
    expect(result.isError, result.output).toBe(false)
    const expected = Buffer.concat([Buffer.from('name = new\n'), Buffer.from([0xff, 0xfe, 0x0a])])
    expect((await fs.readFile(path.join(root, 'data.cfg'))).equals(expected)).toBe(true)
  })
})

describe('a large write', () => {
  it('replacing a 5 MB file with 600 KB says the true sizes and line counts, and pages the full diff', async () => {
    const old = Array.from({ length: 100_000 }, (_, i) => `old line ${i} ${'o'.repeat(36)}`).join('\n') + '\n'
    const next = Array.from({ length: 11_000 }, (_, i) => `new line ${i} ${'n'.repeat(40)}`).join('\n') + '\n'
    expect(old.length).toBeGreaterThan(5_000_000)
    expect(next.length).toBeGreaterThan(590_000)
    await putFile(root, 'big.txt', old)
    await readFileTool.execute({ path: 'big.txt', limit: 1 }, ctx)
    const input = { path: 'big.txt', content: next }
    const reviewed = await preview(input)
    if (!reviewed.ok) throw new Error(reviewed.error)
    const shown = WritePreview.parse(reviewed.preview)
    expect(shown).toMatchObject({
      show: 'large',
      added: 11_000,
      removed: 100_000,
      hunks: [],
      files: {
        before: { bytes: old.length, lines: 100_000, binary: false },
        after: { bytes: next.length, lines: 11_000, binary: false },
      },
    })
    expect(shown.excerpt?.head[0]).toMatch(/^new line 0 /)
    expect(shown.excerpt?.tail.at(-1)).toMatch(/^new line 10999 /)
    expect(shown.excerpt?.tailFrom).toBe(11_000 - (shown.excerpt?.tail.length ?? 0) + 1)
    // The logged preview stays small: no full texts, no hunks.
    expect(JSON.stringify(shown).length).toBeLessThan(16_000)

    const plan = reviewed.plan as ChangePlan & { ok: true }
    const lines = fullDiffLines(plan)
    expect(lines[0]).toBe('@@ -1,100000 +1,11000 @@')
    expect(lines.filter((l) => l.startsWith('+')).length).toBe(11_000)
    expect(lines.filter((l) => l.startsWith('-')).length).toBe(100_000)

    const result = await writeFileTool.execute(input, ctx, reviewed)
    expect(result.isError, result.output).toBe(false)
    expect(await fs.readFile(path.join(root, 'big.txt'), 'utf8')).toBe(next)
  })

  it('keeps a change of a few lines in a large file a diff with parts', async () => {
    const old = Array.from({ length: 50_000 }, (_, i) => `line ${i}`).join('\n') + '\n'
    await putFile(root, 'log.txt', old)
    await readFileTool.execute({ path: 'log.txt', limit: 1 }, ctx)
    const reviewed = await preview({ path: 'log.txt', content: old.replace('line 25000\n', 'changed\n') })
    if (!reviewed.ok) throw new Error(reviewed.error)
    expect(reviewed.preview).toMatchObject({ show: 'diff', added: 1, removed: 1 })
    expect((reviewed.preview as WritePreview).hunks).toHaveLength(1)
  })
})
