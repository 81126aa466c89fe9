import { HiddenView, unhide } from '../secrets/hidden-view'
import { workspaceSecrets } from '../secrets/workspace-secrets'
import { cutLongLine, MAX_LINE_CHARS, numberedLine } from './read-file/line-collector'
import { z } from 'zod'
import { pathField, toolInput } from './input-fields'
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

export const EditFileInput = toolInput('Replace exact text in a file that was read before.', {
  path: pathField('Path of the file to edit, relative to the workspace root.'),
  old_string: z
    .string()
    .min(1, 'must not be empty: quote the exact text to replace (use write_file to create a file)')
    .describe(
      'Exact text to replace, including whitespace and indentation. Must occur exactly once unless replace_all is true.',
    ),
  new_string: z.string().describe('Text to put in its place (may be empty to delete old_string).'),
  replace_all: z
    .boolean()
    .optional()
    .describe('Replace every occurrence of old_string instead of requiring exactly one. Default false.'),
})
export type EditFileInput = z.infer<typeof EditFileInput>

/**
 * edit_file (DESIGN 2): exact-text replacement. Matching is done on the file's bytes, so bytes that are not
 * valid UTF-8 elsewhere in the file survive an edit untouched (a decode/re-encode round trip would turn them
 * into U+FFFD). UTF-8 is self-synchronizing, so a byte match of a UTF-8 needle is a character match.
 */

const LF = 10
const MAX_LISTED_LINES = 10
const EXCERPT_CONTEXT = 3
const MAX_EXCERPT_LINES = 40
// The "did you mean" search for near matches reads every line; past this size it is skipped.
const MAX_HINT_SEARCH_CHARS = 8 * 1024 * 1024

export interface EditPlanExtra {
  /** Number of replacements made. */
  replacements: number
  /** 1-based line (in the new text) where the first replacement starts. */
  firstLine: number
}

export type EditPlan =
  (Extract<ChangePlan, { ok: true }> & EditPlanExtra) | Extract<ChangePlan, { ok: false }>

export async function planEdit(ctx: ToolContext, input: EditFileInput, base?: PlanBase): Promise<EditPlan> {
  try {
    if (input.old_string.length === 0)
      return {
        ok: false,
        error: 'old_string is empty: quote the exact text to replace (use write_file to create a file).',
      }
    if (input.old_string === input.new_string)
      return {
        ok: false,
        error:
          'old_string and new_string are identical, so the edit would change nothing. Give the new text in new_string.',
      }
    const loaded = await loadForChange(ctx, input.path, base)
    if (!loaded.ok) return loaded
    const rel = loaded.relPath
    const current = loaded.current
    if (current === null)
      return {
        ok: false,
        error: `File not found: ${rel}. edit_file changes existing files: use glob to find the right path, or write_file to create a new file.`,
      }

    // old_string is matched against the file as the model saw it, its secret values hidden (HiddenView): no
    // answer below (found, not found, found twice, a near match) may depend on a value it was never shown.
    const secrets = workspaceSecrets(ctx.workspace)
    await secrets.ready()
    const view = HiddenView.of(current.body, secrets.redactor())
    const seen = view.plain ? current.body : view.bytes
    const seenText = view.plain ? current.text : seen.toString('utf8')

    // read_file shows CRLF files without their CRs, so the model quotes them with LF: match and replace in the
    // file's own line ending first, then as written (a file with mixed endings may hold either).
    const crlf = lineEnding(current.text) === 'crlf'
    const convert = (s: string): string => (crlf ? s.replace(/\r?\n/g, '\r\n') : s.replace(/\r\n/g, '\n'))
    const attempts: Array<[string, string]> = [[convert(input.old_string), convert(input.new_string)]]
    if (attempts[0]?.[0] !== input.old_string) attempts.push([input.old_string, input.new_string])

    let matched: { needle: Buffer; replacement: Buffer; positions: number[]; converted: boolean } | null =
      null
    for (const [index, [oldText, newText]] of attempts.entries()) {
      const needle = Buffer.from(oldText, 'utf8')
      const positions: number[] = []
      for (let at = seen.indexOf(needle); at !== -1; at = seen.indexOf(needle, at + needle.length))
        positions.push(at)
      if (positions.length > 0) {
        const converted = index === 0 && (oldText !== input.old_string || newText !== input.new_string)
        matched = { needle, replacement: Buffer.from(newText, 'utf8'), positions, converted }
        break
      }
    }
    if (matched === null) return { ok: false, error: notFoundMessage(rel, seenText, input.old_string) }

    const { needle, replacement, positions } = matched
    if (positions.length > 1 && input.replace_all !== true) {
      const lines = lineNumbersOf(seen, positions.slice(0, MAX_LISTED_LINES))
      const more = positions.length > MAX_LISTED_LINES ? ', ...' : ''
      return {
        ok: false,
        error:
          `old_string occurs ${positions.length} times in ${rel} (at lines ${lines.join(', ')}${more}). ` +
          'Include more surrounding lines in old_string so that it matches exactly one place, or set ' +
          'replace_all to true to replace every occurrence.',
      }
    }

    const parts: Buffer[] = []
    let from = 0
    const starts: number[] = []
    for (const at of positions) {
      // Back to the bytes on disk: a marker quoted whole stands for its value, in new_string too.
      const range = view.toOriginal(at, at + needle.length)
      if ('partial' in range)
        return {
          ok: false,
          error: `old_string covers part of ${range.partial}, a secret value hidden from you. Quote the whole marker, or none of it.`,
        }
      const unhidden = unhide(replacement, range.values, seen.subarray(at, at + needle.length))
      if ('error' in unhidden) return { ok: false, error: unhidden.error }
      parts.push(current.body.subarray(from, range.start), unhidden.bytes)
      starts.push(range.start)
      from = range.end
    }
    parts.push(current.body.subarray(from))
    const body = Buffer.concat(parts)
    if (body.equals(current.body))
      return {
        ok: false,
        error:
          'old_string and new_string differ only in line endings, which edit_file keeps as the file has them: ' +
          'the edit would change nothing.',
      }
    return {
      ...plannedChange(loaded, {
        after: body.toString('utf8'),
        body,
        bom: current.bom,
        notes: matched.converted ? [`the file's ${crlf ? 'CRLF' : 'LF'} line endings were kept`] : [],
      }),
      replacements: positions.length,
      firstLine: lineNumbersOf(body, [starts[0] as number])[0] as number,
    }
  } catch (error) {
    return { ok: false, error: `Could not prepare the edit: ${(error as Error).message}` }
  }
}

/** 1-based line numbers of ascending byte offsets, in one pass. */
function lineNumbersOf(body: Buffer, offsets: number[]): number[] {
  const out: number[] = []
  let line = 1
  let pos = 0
  for (const offset of offsets) {
    for (let nl = body.indexOf(LF, pos); nl !== -1 && nl < offset; nl = body.indexOf(LF, nl + 1)) {
      line++
      pos = nl + 1
    }
    out.push(line)
  }
  return out
}

/** Why old_string may not have matched, in the terms of the mistakes models actually make. */
function notFoundMessage(rel: string, text: string, oldString: string): string {
  const parts = [
    `old_string was not found in ${rel}. Re-read the file with read_file and copy the text exactly, ` +
      'including whitespace, indentation and line breaks.',
  ]
  const oldLines = oldString.split(/\r?\n/)
  if (oldLines.filter((l) => /^\s*\d+\|/.test(l)).length >= Math.max(1, Math.ceil(oldLines.length / 2)))
    parts.push(
      'It seems to include the line-number prefixes that read_file shows (like "    12|"): they are not part of the file; remove them.',
    )
  if (oldString.includes('\uFFFD'))
    parts.push(
      'It contains "\uFFFD", which read_file shows for bytes that are not valid UTF-8: such bytes cannot be quoted; choose old_string next to them.',
    )
  if (text.length <= MAX_HINT_SEARCH_CHARS) {
    const near = looseMatchLine(text, oldLines)
    if (near !== null)
      parts.push(
        `Text matching it when whitespace is ignored starts at line ${near}: the indentation or spacing differs (tabs vs spaces?).`,
      )
  }
  return parts.join(' ')
}

/** First line where `oldLines` match the file with runs of whitespace ignored, or null. */
function looseMatchLine(text: string, oldLines: string[]): number | null {
  const squash = (s: string): string => s.replace(/\s+/g, ' ').trim()
  const wanted = oldLines.map(squash)
  while (wanted.length > 0 && wanted[0] === '') wanted.shift()
  while (wanted.length > 0 && wanted[wanted.length - 1] === '') wanted.pop()
  if (wanted.length === 0 || wanted.join('').length < 3) return null
  const fileLines = text.split(/\r?\n/)
  const lastStart = fileLines.length - wanted.length
  for (let i = 0; i <= lastStart; i++) {
    const first = squash(fileLines[i] as string)
    if (wanted.length === 1) {
      if (first.includes(wanted[0] as string)) return i + 1
      continue
    }
    if (!first.endsWith(wanted[0] as string)) continue
    let all = true
    for (let j = 1; j < wanted.length && all; j++) {
      const line = squash(fileLines[i + j] as string)
      const want = wanted[j] as string
      all = j === wanted.length - 1 ? line.startsWith(want) : line === want
    }
    if (all) return i + 1
  }
  return null
}

export const editFileTool = defineChangeTool({
  name: 'edit_file',
  description:
    'Replace exact text in an existing file of the workspace. old_string must match the file exactly ' +
    '(whitespace and indentation included, without the line-number prefixes read_file shows) and occur ' +
    'exactly once, unless replace_all is true. Read the file with read_file first; the edit is refused if ' +
    'the file changed on disk since. CRLF line endings and a UTF-8 BOM are kept.',
  input: EditFileInput,
  verb: 'Edit',
  plan: planEdit,
  async land(ctx, input, plan) {
    const rel = plan.relPath
    const committed = await commitChange(ctx, plan, `Edit ${rel}`)
    if (!committed.ok) return committed.result
    const { diff } = committed
    const count = plan.replacements
    const secrets = workspaceSecrets(ctx.workspace)
    await secrets.ready()
    const redactor = secrets.redactor()
    const excerpt = excerptAround(plan.after, plan.firstLine, countLines(input.new_string) || 1, (text) =>
      redactor.redactText(text),
    )
    const what = count === 1 ? 'replaced 1 occurrence' : `replaced ${count} occurrences`
    const kept = notesSuffix(plan)
    return ok(
      `Edited ${rel}: ${what} (+${diff.added} -${diff.removed} lines)${kept}. ` +
        `${count > 1 ? 'The first one' : 'It'} now reads:\n${excerpt}`,
      {
        title: `Edit ${rel} (+${diff.added} -${diff.removed})`,
        metadata: { path: rel, replacements: count, ...diffMetadata(diff) },
      },
    )
  },
})

/** Numbered lines around an edit, so the model can check the result without reading the file again. */
function excerptAround(
  text: string,
  firstLine: number,
  spanned: number,
  /** Hides secret values in each line, before a long one is cut (a cut through a value would show its start). */
  redact: (line: string) => string,
): string {
  const start = Math.max(1, firstLine - EXCERPT_CONTEXT)
  const end = firstLine + spanned - 1 + EXCERPT_CONTEXT
  // Walk to the start line without splitting the whole (possibly large) text.
  let pos = 0
  for (let line = 1; line < start; line++) {
    const nl = text.indexOf('\n', pos)
    if (nl === -1) return ''
    pos = nl + 1
  }
  const out: string[] = []
  for (let line = start; line <= end && pos <= text.length; line++) {
    if (out.length === MAX_EXCERPT_LINES) {
      out.push('     …|')
      break
    }
    const nl = text.indexOf('\n', pos)
    let content = text.slice(pos, nl === -1 ? text.length : nl)
    if (content.endsWith('\r')) content = content.slice(0, -1)
    if (nl === -1 && content === '') break
    const chars = content.length > MAX_LINE_CHARS ? [...content].length : content.length
    out.push(
      numberedLine(line, chars > MAX_LINE_CHARS ? cutLongLine(redact(content), chars) : redact(content)),
    )
    if (nl === -1) break
    pos = nl + 1
  }
  return out.join('\n')
}
