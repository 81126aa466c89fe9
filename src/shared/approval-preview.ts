import { z } from 'zod'
import { ContentFacts, Excerpt } from './file-content'
import { Count } from './schema-units'

/**
 * What an approval shows before a write or a command runs (DESIGN 6 `approval.requested`), and the cap that
 * keeps a preview small enough to log and replay. Exported again by events.ts.
 */

/** jsdiff's `structuredPatch` hunk, as is: `lines` start with ' ', '-', '+' or '\'. */
export const DiffHunk = z.object({
  oldStart: Count,
  oldLines: Count,
  newStart: Count,
  newLines: Count,
  lines: z.array(z.string()),
})
export type DiffHunk = z.infer<typeof DiffHunk>

/**
 * Full file texts are embedded in a write preview only up to this many characters per side, and hunks only up
 * to this many characters in total: one preview is logged and replayed with every approval, so a 50 MB file
 * must not put 100 MB into the log and the renderer. Past the cap the side is left out (the UI shows the
 * hunks) and `truncated` is set.
 */
export const PREVIEW_MAX_CHARS = 256 * 1024

export const WritePreview = z.object({
  kind: z.literal('write'),
  /** Workspace-relative path, as the user should read it. */
  path: z.string(),
  /**
   * The file before the write: null when it does not exist yet; absent when larger than PREVIEW_MAX_CHARS.
   */
  before: z.string().nullable().optional(),
  /** The file after the write; absent when larger than PREVIEW_MAX_CHARS. */
  after: z.string().optional(),
  hunks: z.array(DiffHunk),
  /** Some of before/after/hunks were left out to respect PREVIEW_MAX_CHARS. */
  truncated: z.boolean().optional(),
  /**
   * Set with `truncated`: whether hunks were left out (true) or only the full texts (false), in which case
   * every hunk is here and the change can still be reviewed hunk by hunk. Absent in older logs.
   */
  hunksCut: z.boolean().optional(),
  /**
   * A protected path (.git/, .env*, editor and shell config): always asked, whatever the approval settings.
   */
  protected: z.boolean(),
  /**
   * How the change is reviewed (file-content.ts `reviewMode`): its diff with parts, a summary of a large change,
   * or the facts of a binary one (never its bytes as text). Absent in older logs: `diff`.
   */
  show: z.enum(['diff', 'large', 'binary']).optional(),
  /** The file before (null: it does not exist yet) and after, as bytes: sizes, lines, type, an image preview. */
  files: z.object({ before: ContentFacts.nullable(), after: ContentFacts }).optional(),
  /** Lines added and removed by the whole change (the hunks here may be cut); text changes only. */
  added: Count.optional(),
  removed: Count.optional(),
  /** A large change: the first and last lines of the new content. */
  excerpt: Excerpt.optional(),
})
export type WritePreview = z.infer<typeof WritePreview>

export const BashPreview = z.object({
  kind: z.literal('bash'),
  command: z.string(),
  description: z.string().optional(),
  cwd: z.string(),
})
export type BashPreview = z.infer<typeof BashPreview>

export const OtherPreview = z.object({
  kind: z.literal('other'),
  summary: z.string(),
  /** What "always allow" would cover for this call ("every call of files: write in this folder"); absent: none. */
  alwaysAllow: z.string().optional(),
})
export type OtherPreview = z.infer<typeof OtherPreview>

export const ApprovalPreview = z.discriminatedUnion('kind', [WritePreview, BashPreview, OtherPreview])
export type ApprovalPreview = z.infer<typeof ApprovalPreview>

/**
 * Applies PREVIEW_MAX_CHARS to a write preview built from full texts: oversized sides are dropped and hunks
 * are kept whole up to the budget (a hunk cut in the middle would render as a wrong diff).
 */
export function capWritePreview(preview: WritePreview): WritePreview {
  let truncated = preview.truncated === true
  let hunksCut = preview.hunksCut === true
  const capped: WritePreview = { ...preview }
  if (typeof capped.before === 'string' && capped.before.length > PREVIEW_MAX_CHARS) {
    delete capped.before
    truncated = true
  }
  if (capped.after !== undefined && capped.after.length > PREVIEW_MAX_CHARS) {
    delete capped.after
    truncated = true
  }
  let budget = PREVIEW_MAX_CHARS
  const hunks: DiffHunk[] = []
  for (const hunk of preview.hunks) {
    let size = 0
    for (const line of hunk.lines) size += line.length + 1
    if (size > budget) {
      truncated = true
      hunksCut = true
      break
    }
    budget -= size
    hunks.push(hunk)
  }
  capped.hunks = hunks
  if (truncated) {
    capped.truncated = true
    capped.hunksCut = hunksCut
  }
  return capped
}

/**
 * The user's decision on one hunk of a write or edit (per-hunk review, issue 14), by the hunk's index in the
 * preview. `edited`: the hunk's new side (its context and added lines) replaced by `text`.
 */
export const HunkDecision = z.object({
  index: Count,
  decision: z.enum(['accepted', 'rejected', 'edited']),
  note: z.string().max(10_000).optional(),
  text: z.string().max(1_000_000).optional(),
})
export type HunkDecision = z.infer<typeof HunkDecision>

/** Whether the user can accept or reject each hunk of this change: it has hunks, and all of them are here. */
export function canReviewByHunk(preview: WritePreview): boolean {
  if (preview.show === 'large' || preview.show === 'binary') return false
  return preview.hunks.length > 0 && (preview.truncated !== true || preview.hunksCut === false)
}

/** True when the decisions change anything compared with approving the whole change. */
export function isPartialReview(
  hunks: readonly HunkDecision[] | undefined,
): hunks is readonly HunkDecision[] {
  return hunks !== undefined && hunks.some((h) => h.decision !== 'accepted')
}

/**
 * An approval whose per-hunk decisions leave out every hunk of the change: nothing would be written, so it is
 * a rejection (the call does not run, and its failure does not skip the turn's later calls).
 */
export function rejectsEveryHunk(
  preview: ApprovalPreview | undefined,
  hunks: readonly HunkDecision[] | undefined,
): boolean {
  if (preview?.kind !== 'write' || !canReviewByHunk(preview) || hunks === undefined) return false
  const rejected = new Set(hunks.filter((h) => h.decision === 'rejected').map((h) => h.index))
  return preview.hunks.every((_, i) => rejected.has(i))
}
