import { diffArrays } from 'diff'
import type { DiffHunk } from '../../../shared/events'
import { highlightLine, START, type LineState, type Token } from './highlight'

/**
 * The rows a diff view draws, from jsdiff's structured hunks (the approval preview carries them): unified
 * (one column, old and new numbers) and side by side (deletions paired with the additions that replace them).
 * Tokens are computed here so both layouts share the syntax state of each side across lines.
 */

export type LineKind = 'context' | 'add' | 'del'

export interface DiffLine {
  kind: LineKind
  oldNo?: number
  newNo?: number
  text: string
  tokens: Token[]
  /** jsdiff's "\ No newline at end of file" after this line. */
  noNewline?: boolean
}

/** Every row knows its hunk (`hunk`, 0-based), so a view can mark the parts the user left out. */
export type UnifiedRow =
  | { kind: 'hunk'; header: string; key: string; hunk: number }
  | { kind: 'line'; line: DiffLine; key: string; hunk: number }

export type SplitRow =
  | { kind: 'hunk'; header: string; key: string; hunk: number }
  | { kind: 'pair'; left?: DiffLine; right?: DiffLine; key: string; hunk: number }

export interface DiffStats {
  added: number
  removed: number
}

/**
 * Where a hunk sits, in words a newcomer reads (not `@@ -1,3 +1,4 @@`): its lines in the file after the change;
 * a hunk that only removes lines says where they were. The per-hunk review names its parts the same way.
 */
export function hunkPlace(hunk: DiffHunk): string {
  if (hunk.newLines === 0)
    return `removes line${hunk.oldLines === 1 ? '' : 's'} ${range(hunk.oldStart, hunk.oldLines)}`
  return `line${hunk.newLines === 1 ? '' : 's'} ${range(hunk.newStart, hunk.newLines)}`
}

const range = (start: number, count: number): string =>
  count <= 1 ? `${start}` : `${start}–${start + count - 1}`

export function diffLines(
  hunks: readonly DiffHunk[],
  language: string | undefined,
  /** The index of `hunks[0]` in its change, when the rows of one hunk are made on their own. */
  first = 0,
): UnifiedRow[] {
  const rows: UnifiedRow[] = []
  // Highlighting state per side: hunks are separated by unseen lines, so each hunk starts fresh.
  hunks.forEach((hunk, i) => {
    const h = first + i
    rows.push({
      kind: 'hunk',
      header: `Part ${h + 1} · ${hunkPlace(hunk)}`,
      key: `h${h}`,
      hunk: h,
    })
    let oldNo = hunk.oldStart
    let newNo = hunk.newStart
    let oldState: LineState = START
    let newState: LineState = START
    let previous: DiffLine | undefined
    hunk.lines.forEach((raw, l) => {
      const mark = raw[0]
      const text = raw.slice(1)
      if (mark === '\\') {
        if (previous) previous.noNewline = true
        return
      }
      let line: DiffLine
      if (mark === '+') {
        const out = highlightLine(text, language, newState)
        newState = out.state
        line = { kind: 'add', newNo: newNo++, text, tokens: out.tokens }
      } else if (mark === '-') {
        const out = highlightLine(text, language, oldState)
        oldState = out.state
        line = { kind: 'del', oldNo: oldNo++, text, tokens: out.tokens }
      } else {
        const out = highlightLine(text, language, newState)
        newState = out.state
        oldState = highlightLine(text, language, oldState).state
        line = { kind: 'context', oldNo: oldNo++, newNo: newNo++, text, tokens: out.tokens }
      }
      previous = line
      rows.push({ kind: 'line', line, key: `h${h}l${l}`, hunk: h })
    })
  })
  return rows
}

/** Pairs each run of deletions with the run of additions that follows it, line by line. */
export function splitRows(rows: readonly UnifiedRow[]): SplitRow[] {
  const out: SplitRow[] = []
  let dels: DiffLine[] = []
  let adds: DiffLine[] = []
  let key = ''
  let hunk = 0
  const flush = (): void => {
    const n = Math.max(dels.length, adds.length)
    for (let i = 0; i < n; i++)
      out.push({ kind: 'pair', left: dels[i], right: adds[i], key: `${key}p${i}`, hunk })
    dels = []
    adds = []
  }
  for (const row of rows) {
    if (row.kind === 'hunk') {
      flush()
      hunk = row.hunk
      out.push(row)
      continue
    }
    const { line } = row
    if (line.kind === 'del') {
      if (adds.length > 0) flush()
      if (dels.length === 0 && adds.length === 0) key = row.key
      dels.push(line)
    } else if (line.kind === 'add') {
      if (dels.length === 0 && adds.length === 0) key = row.key
      adds.push(line)
    } else {
      flush()
      out.push({ kind: 'pair', left: line, right: line, key: row.key, hunk })
    }
  }
  flush()
  return out
}

export function diffStats(hunks: readonly DiffHunk[]): DiffStats {
  let added = 0
  let removed = 0
  for (const hunk of hunks) {
    for (const line of hunk.lines) {
      if (line[0] === '+') added++
      else if (line[0] === '-') removed++
    }
  }
  return { added, removed }
}

/**
 * A hunk as the user edited it ("Edit this part": `text` replaces its new side, context and added lines): its old
 * side against the user's lines, so the diff shows what will really be written, not what the agent proposed.
 */
export function editedHunk(hunk: DiffHunk, text: string): DiffHunk {
  const oldSide = hunk.lines
    .filter((l) => l[0] === ' ' || l[0] === '-')
    .map((l) => l.slice(1).replace(/\r$/, ''))
  const newSide = text.split('\n')
  const lines = diffArrays(oldSide, newSide).flatMap((part) =>
    part.value.map((line) => `${part.added ? '+' : part.removed ? '-' : ' '}${line}`),
  )
  return { ...hunk, newLines: newSide.length, lines }
}
