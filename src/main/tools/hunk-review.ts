import type { HunkDecision } from '../../shared/events'
import type { Hunk } from './file-diff'

/**
 * Per-hunk review (issue 14): the user accepts or rejects each hunk of a write or edit on its own, or edits a
 * hunk's new lines. This turns those decisions into the exact text to write, and into what the model is told,
 * so its next step starts from the file as it really is.
 *
 * The hunks are the preview's (jsdiff's structured hunks of the file before and after the change). Any subset
 * of a diff's hunks applies to the text it was made from; each hunk's old lines are checked against that text,
 * so a preview that no longer matches is refused rather than applied in the wrong place.
 */

export interface HunkOutcome {
  index: number
  decision: 'accepted' | 'rejected' | 'edited'
  note?: string
  /** 1-based lines of the hunk's region in the resulting text (empty region: `to` < `from`). */
  from: number
  to: number
}

export type ReviewedChange =
  { ok: true; after: string; outcomes: HunkOutcome[]; lines: string[] } | { ok: false; error: string }

const NO_NEWLINE = '\\'

/** Lines with their terminators, so the last line without one stays without one. */
function splitLines(text: string): string[] {
  const lines = text.split(/(?<=\n)/)
  return lines.length === 1 && lines[0] === '' ? [] : lines
}

const withoutTerminator = (line: string): string => (line.endsWith('\n') ? line.slice(0, -1) : line)

/**
 * The text `before` becomes when only the accepted (and edited) hunks are applied. `decisions` are by hunk
 * index; a hunk without a decision is accepted.
 */
export function applyHunkDecisions(
  before: string,
  hunks: readonly Hunk[],
  decisions: readonly HunkDecision[],
): ReviewedChange {
  const byIndex = new Map(decisions.map((d) => [d.index, d]))
  for (const d of decisions) {
    if (!Number.isInteger(d.index) || d.index < 0 || d.index >= hunks.length)
      return { ok: false, error: `There is no hunk ${d.index + 1}: the change has ${hunks.length}.` }
  }
  const old = splitLines(before)
  const out: string[] = []
  const outcomes: HunkOutcome[] = []
  let pos = 0
  for (const [index, hunk] of hunks.entries()) {
    // 0-based line where the hunk's old side starts. jsdiff numbers an empty old side by the line it goes before
    // (a new file's one hunk: 1); the unified-diff convention, used by the linear fallback, by the line after
    // it (0). They differ only for an empty file, where both mean "at the start".
    const start = Math.max(0, hunk.oldStart - 1)
    if (start < pos || start > old.length)
      return { ok: false, error: `Hunk ${index + 1} does not fit the file; review the change again.` }
    while (pos < start) out.push(old[pos++] as string)
    const decision = byIndex.get(index)
    const kind = decision?.decision ?? 'accepted'
    const regionStart = out.length
    // The hunk's new side as the preview has it: context and added lines, with terminators.
    const newSide: string[] = []
    const added: string[] = []
    const lines = hunk.lines
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string
      const mark = line[0]
      // The marker after a line means the text ends there without a newline.
      const bare = lines[i + 1]?.startsWith(NO_NEWLINE) === true
      if (mark === ' ' || mark === '-') {
        const have = old[pos]
        if (have === undefined || withoutTerminator(have) !== line.slice(1))
          return {
            ok: false,
            error: `Hunk ${index + 1} no longer matches the file at line ${pos + 1}; review the change again.`,
          }
        if (mark === ' ') newSide.push(have)
        if (kind !== 'edited' && (mark === ' ' || kind === 'rejected')) {
          // Added lines go where the hunk has them: before the line that follows them.
          if (kind === 'accepted') out.push(...added)
          added.length = 0
          out.push(have)
        }
        pos++
      } else if (mark === '+') {
        const text = bare ? line.slice(1) : `${line.slice(1)}\n`
        newSide.push(text)
        added.push(text)
      }
      // Lines starting with '\' only qualify the line before them.
    }
    if (kind === 'accepted') out.push(...added)
    if (kind === 'edited') out.push(...editedLines(decision?.text ?? '', newSide))
    outcomes.push({
      index,
      decision: kind,
      ...(decision?.note?.trim() ? { note: decision.note.trim() } : {}),
      from: regionStart + 1,
      to: out.length,
    })
  }
  while (pos < old.length) out.push(old[pos++] as string)
  return { ok: true, after: out.join(''), outcomes, lines: out }
}

/**
 * The user's text for a hunk's new side, with the file's line endings (CRLF when the lines it replaces had
 * them) and a final newline unless the hunk's own new side ended without one.
 */
function editedLines(text: string, replaced: readonly string[]): string[] {
  if (text === '') return []
  // Judged on the lines that end with a line break: the file's last line may have none.
  const ended = replaced.filter((l) => l.endsWith('\n'))
  const crlf = ended.length > 0 && ended.every((l) => l.endsWith('\r\n'))
  const endsBare = replaced.length > 0 && !(replaced.at(-1) as string).endsWith('\n')
  let body = text.replace(/\r\n/g, '\n')
  if (!endsBare && !body.endsWith('\n')) body += '\n'
  if (crlf) body = body.replace(/\n/g, '\r\n')
  return splitLines(body)
}

// What the model is shown of the changed regions: a few lines per hunk, and a budget for the whole review, so a
// change of 500 hunks gives a readable answer rather than thousands of lines.
const MAX_REGION_LINES = 40
const MAX_SHOWN_LINES = 400

/**
 * What the model is told about a reviewed change: which hunks were applied, which rejected (with the user's
 * note), and the resulting text of each changed region with its line numbers. Past the budget, hunks applied
 * as proposed are only counted; every rejected or edited hunk and every note is still named.
 */
export function describeReview(relPath: string, review: ReviewedChange & { ok: true }): string {
  const count = review.outcomes.length
  const applied = review.outcomes.filter((o) => o.decision !== 'rejected').length
  const parts = [
    `The user reviewed the change to ${relPath} hunk by hunk: ${applied} of ${count} ${count === 1 ? 'hunk was' : 'hunks were'} applied. Line numbers below are those of the file as it is now.`,
  ]
  let budget = MAX_SHOWN_LINES
  const unshown: number[] = []
  for (const o of review.outcomes) {
    const label = `Hunk ${o.index + 1}`
    const where = o.to >= o.from ? `lines ${o.from}-${o.to}` : `at line ${o.from}`
    const note = o.note ? `; the user wrote: ${o.note}` : ''
    const size = Math.max(0, o.to - o.from + 1)
    if (budget <= 0) {
      if (o.decision === 'accepted' && !o.note) unshown.push(o.index + 1)
      else parts.push(`${label}: ${outcomeText(o.decision)}${note} (${where}).`)
      continue
    }
    parts.push(
      o.decision === 'rejected'
        ? `${label}: ${outcomeText(o.decision)}${note}. The file keeps its old text (${where}):`
        : `${label}: ${outcomeText(o.decision)}${note}. It now reads (${where}):`,
    )
    const shown = review.lines.slice(o.from - 1, o.from - 1 + Math.min(size, MAX_REGION_LINES, budget))
    budget -= shown.length
    shown.forEach((line, i) =>
      parts.push(`${String(o.from + i).padStart(6)}|${withoutTerminator(line).replace(/\r$/, '')}`),
    )
    if (size > shown.length) parts.push(`(${size - shown.length} more lines; read the file to see them)`)
  }
  if (unshown.length > 0)
    parts.push(
      `${unshown.length} more ${unshown.length === 1 ? 'hunk was' : 'hunks were'} applied as proposed (${ranges(unshown)}); read the file to see them.`,
    )
  return parts.join('\n')
}

function outcomeText(decision: HunkOutcome['decision']): string {
  switch (decision) {
    case 'accepted':
      return 'applied'
    case 'edited':
      return 'applied as edited by the user'
    case 'rejected':
      return 'rejected, not applied'
  }
}

/** `hunks 3-7, 9`: consecutive numbers as ranges. */
function ranges(numbers: readonly number[]): string {
  const out: string[] = []
  for (let i = 0; i < numbers.length;) {
    let j = i
    while (j + 1 < numbers.length && numbers[j + 1] === (numbers[j] as number) + 1) j++
    out.push(i === j ? `${numbers[i]}` : `${numbers[i]}-${numbers[j]}`)
    i = j + 1
  }
  return `${numbers.length === 1 ? 'hunk' : 'hunks'} ${out.join(', ')}`
}

/** What the model is told when the user left out every hunk: nothing was written, and the notes, if any. */
export function describeEveryHunkRejected(
  relPath: string,
  decisions: readonly HunkDecision[],
  callNote: string | undefined,
): string {
  const notes = decisions.filter((d) => d.note?.trim()).map((d) => `hunk ${d.index + 1}: ${d.note?.trim()}`)
  if (callNote) notes.unshift(callNote)
  return (
    `Rejected by the user: every hunk of the change to ${relPath} was left out, so nothing was written and the file is as it was.` +
    (notes.length > 0
      ? ` The user wrote: ${notes.join('; ')}`
      : ' Do not retry it unchanged; ask the user or take another approach.')
  )
}
