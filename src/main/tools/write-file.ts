import { z } from 'zod'
import { pathField, toolInput } from './input-fields'
import {
  commitChange,
  countLines,
  defineChangeTool,
  diffMetadata,
  isBinaryChange,
  lineEnding,
  loadForChange,
  notesSuffix,
  plannedChange,
  UTF8_BOM,
  type ChangePlan,
} from './file-change'
import { formatBytes, isBinary, sniffType, typeLabel } from '../../shared/file-content'
import { ok } from './tool'
import type { PlanBase, ToolContext } from './tool'

export const WriteFileInput = toolInput(
  'Create a file or replace its whole content. An existing file must have been read first.',
  {
    path: pathField(
      'Path of the file to create or overwrite, relative to the workspace root. Missing parent folders are created.',
    ),
    content: z
      .string()
      .describe(
        'The complete new content of the file: its text, or with encoding "base64" its bytes base64-encoded.',
      ),
    encoding: z
      .enum(['utf8', 'base64'])
      .optional()
      .describe(
        'How content is given: "utf8" (the default) for text; "base64" for a binary file such as an image, whose bytes are written exactly.',
      ),
  },
)
export type WriteFileInput = z.infer<typeof WriteFileInput>

/** write_file (DESIGN 2): create a file or replace its whole content, keeping its line endings and BOM. */

export async function planWrite(
  ctx: ToolContext,
  input: WriteFileInput,
  base?: PlanBase,
): Promise<ChangePlan> {
  try {
    if (input.encoding === 'base64') {
      const bytes = decodeBase64(input.content)
      if (bytes === null)
        return {
          ok: false,
          error:
            'content is not valid base64 (with encoding "base64" it must be the bytes in standard base64: A-Z a-z 0-9 + /, padded with =, whitespace allowed between groups).',
        }
      return planBytes(ctx, input.path, bytes, base)
    }
    const unwritable = notText(input.content)
    if (unwritable) return { ok: false, error: unwritable }
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

/**
 * Why a text content cannot be written as the text it is (null: it can). Only text that UTF-8 encodes exactly may
 * be written from a string: a lone surrogate would land as U+FFFD, not as reviewed; a NUL is binary data sent as
 * text, whose bytes above 127 would each land as two bytes (a PNG sent this way is a broken PNG).
 */
function notText(content: string): string | null {
  if (content.includes('\0'))
    return 'content holds NUL characters: binary data cannot be written as text (every byte above 127 would be written as two bytes). Send the file\'s bytes base64-encoded, with "encoding": "base64".'
  if (LONE_SURROGATE.test(content))
    return 'content holds an unpaired UTF-16 surrogate, which is not text and cannot be written as UTF-8. Remove it, or send binary content base64-encoded with "encoding": "base64".'
  return null
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Strict standard base64 (whitespace between groups allowed); null when it is not. */
function decodeBase64(content: string): Buffer | null {
  const compact = content.replace(/\s+/g, '')
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) return null
  const bytes = Buffer.from(compact, 'base64')
  // Node decodes leniently: only an exact round trip is the bytes the model meant.
  return bytes.toString('base64') === compact ? bytes : null
}

/** A write of exact bytes (encoding base64): nothing is converted, line endings and BOM included. */
async function planBytes(
  ctx: ToolContext,
  path: string,
  bytes: Buffer,
  base?: PlanBase,
): Promise<ChangePlan> {
  const loaded = await loadForChange(ctx, path, base)
  if (!loaded.ok) return loaded
  const bom = bytes.subarray(0, 3).equals(UTF8_BOM)
  const body = bom ? bytes.subarray(3) : bytes
  // For a binary content this text is never shown or diffed (isBinaryChange); the bytes are `data`.
  return plannedChange(loaded, { after: body.toString('utf8'), body, bom, notes: [] })
}

export const writeFileTool = defineChangeTool({
  name: 'write_file',
  description:
    'Create a file, or replace the whole content of an existing one, in the workspace. Missing parent ' +
    'folders are created. Overwriting an existing file requires having read it with read_file in this ' +
    'session, and is refused if it changed on disk since. To change part of a file prefer edit_file. ' +
    'Line endings (CRLF) and a UTF-8 BOM of an existing file are kept. For a binary file (an image, say) send ' +
    'its bytes base64-encoded with encoding "base64": they are written exactly.',
  input: WriteFileInput,
  verb: 'Write',
  plan: planWrite,
  async land(ctx, _input, plan) {
    const rel = plan.relPath
    const binary = isBinaryChange(plan) && isBinary(plan.data)
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
    if (binary) {
      const type = typeLabel(sniffType(plan.data))
      return ok(`${created ? 'Created' : 'Overwrote'} ${rel} (${plan.data.length} bytes, ${type}).`, {
        title: `${created ? 'Create' : 'Write'} ${rel} (${formatBytes(plan.data.length)}, ${type})`,
        metadata: { path: rel, created, bytes: plan.data.length, binary: true },
      })
    }
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
