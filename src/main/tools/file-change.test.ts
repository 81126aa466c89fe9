import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { editFileTool, type EditPlan } from './edit-file'
import { NOT_APPLIED_TEXT } from './file-change'
import { readFileTool } from './read-file'
import { makeToolContext } from './test-fixtures/tool-context'
import type { ToolContext } from './tool'
import { writeFileTool } from './write-file'

let base: string
let root: string
let ctx: ToolContext

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'lanes-change-')))
  root = path.join(base, 'ws')
  await fs.mkdir(root)
  ctx = makeToolContext(root)
})

afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true })
})

const onDisk = (rel: string): Promise<string> => fs.readFile(path.join(root, rel), 'utf8')

/** A file the session has read, as a write needs. */
async function readFileOf(rel: string, content: string): Promise<void> {
  await fs.writeFile(path.join(root, rel), content)
  await readFileTool.execute({ path: rel }, ctx)
}

/** write_file's preview of `input`, as the user would see it (the test stops if it could not be built). */
async function writePreviewOf(input: { path: string; content: string }) {
  const preview = await writeFileTool.preview?.(input, ctx, { protected: false })
  if (!preview?.ok) throw new Error('no preview')
  return preview
}

/** What the user approved: the preview the tool built, with its plan. */
async function approvedEdit(input: { path: string; old_string: string; new_string: string }) {
  const preview = await editFileTool.preview?.(input, ctx, { protected: false })
  if (!preview?.ok || preview.plan === undefined) throw new Error('no plan')
  return { preview: preview.preview, plan: preview.plan }
}

/** a.ts holding "one\ntwo\n", read; the edit of "two" into "2" previewed and approved. */
async function approvedTwoEdit() {
  await readFileOf('a.ts', 'one\ntwo\n')
  const input = { path: 'a.ts', old_string: 'two', new_string: '2' }
  return { input, approved: await approvedEdit(input) }
}

describe('an approved change', () => {
  it('is carried out as planned by its preview, not planned again', async () => {
    const { approved } = await approvedTwoEdit()
    // The plan is what runs: a plan whose bytes say something else proves execute did not re-plan.
    const plan = approved.plan as EditPlan & { ok: true }
    const forged = { ...plan, data: Buffer.from('one\nplanned\n'), after: 'one\nplanned\n' }
    const result = await editFileTool.execute({ path: 'a.ts', old_string: 'two', new_string: '2' }, ctx, {
      preview: approved.preview,
      plan: forged,
    })
    expect(result.isError).toBe(false)
    expect(await onDisk('a.ts')).toBe('one\nplanned\n')
  })

  it('applies when the file was only touched during the review (same content)', async () => {
    const { input, approved } = await approvedTwoEdit()
    const later = new Date(Date.now() + 5000)
    await fs.utimes(path.join(root, 'a.ts'), later, later)
    const result = await editFileTool.execute(input, ctx, approved)
    expect(result.isError).toBe(false)
    expect(await onDisk('a.ts')).toBe('one\n2\n')
  })

  it('is refused when the file changed during the review, and the other change is kept', async () => {
    const { input, approved } = await approvedTwoEdit()
    await fs.writeFile(path.join(root, 'a.ts'), 'one\ntwo\nthree\n')
    const result = await editFileTool.execute(input, ctx, approved)
    expect(result).toMatchObject({ isError: true, output: NOT_APPLIED_TEXT })
    expect(await onDisk('a.ts')).toBe('one\ntwo\nthree\n')
  })

  it('refuses a new file that someone created during the review', async () => {
    const input = { path: 'new.ts', content: 'mine\n' }
    const preview = await writePreviewOf(input)
    await fs.writeFile(path.join(root, 'new.ts'), 'theirs\n')
    const result = await writeFileTool.execute(input, ctx, { preview: preview.preview, plan: preview.plan })
    expect(result.isError).toBe(true)
    expect(await onDisk('new.ts')).toBe('theirs\n')
  })

  it('after a restart (only the logged preview), lands only the content the user saw', async () => {
    await readFileOf('a.ts', 'one\ntwo\n')
    const input = { path: 'a.ts', content: 'one\n2\n' }
    const preview = await writePreviewOf(input)
    const logged = { preview: preview.preview }
    expect(await writeFileTool.execute(input, ctx, logged)).toMatchObject({ isError: false })
    expect(await onDisk('a.ts')).toBe('one\n2\n')

    const other = { path: 'a.ts', content: 'something else\n' }
    expect(await writeFileTool.execute(other, ctx, logged)).toMatchObject({
      isError: true,
      output: NOT_APPLIED_TEXT,
    })
    expect(await onDisk('a.ts')).toBe('one\n2\n')
  })

  it('built on an earlier call of the turn, is planned again once that call has run', async () => {
    await readFileOf('a.ts', 'one\n')
    const first = { path: 'a.ts', content: 'one\ntwo\n' }
    const firstPreview = await writePreviewOf(first)
    const second = { path: 'a.ts', old_string: 'two', new_string: 'three' }
    const secondPreview = await editFileTool.preview?.(second, ctx, {
      protected: false,
      base: { path: 'a.ts', content: firstPreview.after ?? null },
    })
    if (!secondPreview?.ok) throw new Error('no preview')
    expect(secondPreview.preview).toMatchObject({ before: 'one\ntwo\n', after: 'one\nthree\n' })
    await writeFileTool.execute(first, ctx, { preview: firstPreview.preview, plan: firstPreview.plan })
    const result = await editFileTool.execute(second, ctx, {
      preview: secondPreview.preview,
      plan: secondPreview.plan,
    })
    expect(result.isError).toBe(false)
    expect(await onDisk('a.ts')).toBe('one\nthree\n')
  })

  it('built on an earlier call that was rejected, is not applied', async () => {
    await readFileOf('a.ts', 'one\n')
    const second = { path: 'a.ts', old_string: 'two', new_string: 'three' }
    const secondPreview = await editFileTool.preview?.(second, ctx, {
      protected: false,
      base: { path: 'a.ts', content: 'one\ntwo\n' },
    })
    if (!secondPreview?.ok) throw new Error('no preview')
    const result = await editFileTool.execute(second, ctx, {
      preview: secondPreview.preview,
      plan: secondPreview.plan,
    })
    expect(result).toMatchObject({ isError: true, output: NOT_APPLIED_TEXT })
    expect(await onDisk('a.ts')).toBe('one\n')
  })
})

describe('tool titles', () => {
  it('are defined by each tool from its arguments', () => {
    expect(writeFileTool.title?.({ path: 'a.ts', content: '' })).toBe('Write a.ts')
    expect(editFileTool.title?.({ path: 'a.ts', old_string: 'x', new_string: 'y' })).toBe('Edit a.ts')
    expect(readFileTool.title?.({ path: 'a.ts' })).toBe('Read a.ts')
    expect(readFileTool.title?.({ path: 'a.ts', offset: 10, limit: 5 })).toBe('Read a.ts, lines 10-14')
  })
})
