import { z } from 'zod'
import { pathField } from './input-fields'
import {
  commitChange,
  countLines,
  defineChangeTool,
  diffMetadata,
  lineEnding,
  loadForChange,
  notesSuffix,
  plannedChange,
  type ChangePlan,
} from './file-change'
import { ok } from './tool'
import type { PlanBase, ToolContext } from './tool'

export const WriteFileInput = z
  .object({
    path: pathField(
      'Path of the file to create or overwrite, relative to the workspace root. Missing parent folders are created.',
    ),
    content: z.string().describe('The complete new content of the file.'),
  })
  .strict()
  .describe('Create a file or replace its whole content. An existing file must have been read first.')
export type WriteFileInput = z.infer<typeof WriteFileInput>

/** write_file (DESIGN 2): create a file or replace its whole content, keeping its line endings and BOM. */

export async function planWrite(
  ctx: ToolContext,
  input: WriteFileInput,
  base?: PlanBase,
): Promise<ChangePlan> {
  try {
    const loaded = await loadForChange(ctx, input.path, base)
    if (!loaded.ok) return loaded
    const current = loaded.current
    const notes: string[] = []
    let content = input.content
    // read_file shows CRLF files without their CRs; writing back what was read must not flip every line
    // ending of the file. Content that has CRs of its own is taken as the model meant it.
    if (
      current !== null &&
      lineEnding(current.text) === 'crlf' &&
      !content.includes('\r') &&
      content.includes('\n')
    ) {
      content = content.replace(/\n/g, '\r\n')
      notes.push('its CRLF line endings were kept')
    }
    // A BOM is kept when the file had one, or added when the content brings its own (`after` never shows it,
    // like `before`).
    const ownBom = content.startsWith('\uFEFF')
    const after = ownBom ? content.slice(1) : content
    const body = Buffer.from(after, 'utf8')
    const bom = ownBom || current?.bom === true
    if (current?.bom === true && !ownBom) notes.push('its UTF-8 BOM was kept')
    return plannedChange(loaded, { after, body, bom, notes })
  } catch (error) {
    return { ok: false, error: `Could not prepare the write: ${(error as Error).message}` }
  }
}

export const writeFileTool = defineChangeTool({
  name: 'write_file',
  description:
    'Create a file, or replace the whole content of an existing one, in the workspace. Missing parent ' +
    'folders are created. Overwriting an existing file requires having read it with read_file in this ' +
    'session, and is refused if it changed on disk since. To change part of a file prefer edit_file. ' +
    'Line endings (CRLF) and a UTF-8 BOM of an existing file are kept.',
  input: WriteFileInput,
  verb: 'Write',
  plan: planWrite,
  async land(ctx, _input, plan) {
    const rel = plan.relPath
    const lines = countLines(plan.after)
    if (plan.unchanged) {
      return ok(`${rel} already has exactly this content; nothing was written.`, {
        title: `Write ${rel} (unchanged)`,
        metadata: { path: rel, created: false, lines, unchanged: true, diff: [], added: 0, removed: 0 },
      })
    }
    const committed = await commitChange(ctx, plan, `Write ${rel}`)
    if (!committed.ok) return committed.result
    const { diff, created } = committed
    const kept = notesSuffix(plan)
    const output = created
      ? `Created ${rel} (${lines} ${lines === 1 ? 'line' : 'lines'}).`
      : `Overwrote ${rel}: now ${lines} ${lines === 1 ? 'line' : 'lines'} (+${diff.added} -${diff.removed})${kept}.`
    return ok(output, {
      title: `${created ? 'Create' : 'Write'} ${rel} (+${diff.added} -${diff.removed})`,
      metadata: { path: rel, created, lines, ...diffMetadata(diff) },
    })
  },
})
