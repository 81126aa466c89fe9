import { structuredPatch } from 'diff'
import type { StructuredPatchHunk } from 'diff'

/**
 * The diff shown for a write or edit (approval preview and timeline): jsdiff's structured hunks, with line
 * counts. Huge diffs are capped so the UI and the session log stay responsive; the counts stay exact.
 */

export type Hunk = StructuredPatchHunk

export interface FileDiff {
  hunks: Hunk[]
  added: number
  removed: number
  /** Characters of the whole diff's lines (a line break each): how large the change is to show. */
  chars: number
  /** Set when hunks were cut to the cap; `added`/`removed` still count the whole diff. */
  truncated?: boolean
}

const CONTEXT_LINES = 3
// Room for a change of 500 small hunks (about 7 lines each), which the user can still review hunk by hunk.
export const MAX_HUNK_LINES = 5000
const MAX_HUNK_CHARS = 512 * 1024
// Myers' diff is O(N·D): past this size or time, a prefix/suffix diff (linear, correct, less minimal) is used.
const MAX_MYERS_CHARS = 4 * 1024 * 1024
const MYERS_TIMEOUT_MS = 1500
const NO_NEWLINE = '\\ No newline at end of file'

/** Every hunk of the change, uncapped: what "open in full" pages through, and what `fileDiff` caps. */
export function allHunks(relPath: string, before: string | null, after: string): Hunk[] {
  const old = before ?? ''
  let hunks: Hunk[] | undefined
  if (old.length + after.length <= MAX_MYERS_CHARS) {
    hunks = structuredPatch(relPath, relPath, old, after, undefined, undefined, {
      context: CONTEXT_LINES,
      timeout: MYERS_TIMEOUT_MS,
    })?.hunks
  }
  return hunks ?? prefixSuffixHunks(old, after)
}

export function fileDiff(relPath: string, before: string | null, after: string): FileDiff {
  const hunks = allHunks(relPath, before, after)

  let added = 0
  let removed = 0
  let chars = 0
  for (const hunk of hunks)
    for (const line of hunk.lines) {
      chars += line.length + 1
      if (line.startsWith('+')) added++
      else if (line.startsWith('-')) removed++
    }

  const kept: Hunk[] = []
  let lineBudget = MAX_HUNK_LINES
  let charBudget = MAX_HUNK_CHARS
  let truncated = false
  for (const hunk of hunks) {
    let take = 0
    while (take < hunk.lines.length && lineBudget > 0) {
      const length = (hunk.lines[take] as string).length
      if (length > charBudget && !(kept.length === 0 && take === 0)) break
      charBudget -= length
      lineBudget--
      take++
    }
    if (take === hunk.lines.length) {
      kept.push(hunk)
      continue
    }
    truncated = true
    if (take > 0) {
      // A cut hunk keeps consistent counts for the lines it still shows.
      const lines = hunk.lines.slice(0, take)
      kept.push({
        oldStart: hunk.oldStart,
        newStart: hunk.newStart,
        oldLines: lines.filter((l) => l.startsWith(' ') || l.startsWith('-')).length,
        newLines: lines.filter((l) => l.startsWith(' ') || l.startsWith('+')).length,
        lines,
      })
    }
    break
  }
  return truncated
    ? { hunks: kept, added, removed, chars, truncated }
    : { hunks: kept, added, removed, chars }
}

/** Lines with their terminator, so "x" at EOF and "x\n" compare different, as in a real diff. */
function splitKeepingNewlines(text: string): string[] {
  const lines = text.split(/(?<=\n)/)
  return lines.length === 1 && lines[0] === '' ? [] : lines
}

/** One hunk: common leading and trailing lines as context, everything between removed then added. */
function prefixSuffixHunks(before: string, after: string): Hunk[] {
  const a = splitKeepingNewlines(before)
  const b = splitKeepingNewlines(after)
  let prefix = 0
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++
  let suffix = 0
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  )
    suffix++
  if (prefix === a.length && prefix === b.length) return []

  const lines: string[] = []
  const emit = (mark: string, line: string, isLastOfFile: boolean): void => {
    lines.push(mark + (line.endsWith('\n') ? line.slice(0, -1) : line))
    if (isLastOfFile && !line.endsWith('\n')) lines.push(NO_NEWLINE)
  }
  const start = Math.max(0, prefix - CONTEXT_LINES)
  for (let i = start; i < prefix; i++) emit(' ', a[i] as string, false)
  for (let i = prefix; i < a.length - suffix; i++) emit('-', a[i] as string, i === a.length - 1)
  for (let i = prefix; i < b.length - suffix; i++) emit('+', b[i] as string, i === b.length - 1)
  const contextEnd = Math.min(a.length, a.length - suffix + CONTEXT_LINES)
  for (let i = a.length - suffix; i < contextEnd; i++) emit(' ', a[i] as string, i === a.length - 1)

  const oldLines = contextEnd - start
  const newLines = oldLines - (a.length - suffix - prefix) + (b.length - suffix - prefix)
  return [
    {
      // Unified-diff convention: an empty range starts at the line before it.
      oldStart: oldLines === 0 ? start : start + 1,
      oldLines,
      newStart: newLines === 0 ? start : start + 1,
      newLines,
      lines,
    },
  ]
}
