import { canReviewByHunk } from '../../shared/events'
import type { ApprovalPreview, HunkDecision, WritePreview } from '../../shared/events'
import { NOT_APPLIED_TEXT, UTF8_BOM, type ChangePlan } from './file-change'
import { applyHunkDecisions, describeReview } from './hunk-review'
import { fail, type PreviewResult, type ToolContext, type ToolResult } from './tool'
import { writeFileTool } from './write-file'

/**
 * A write or edit the user approved only in part (per-hunk review, issue 14): the file gets exactly the
 * accepted (and user-edited) hunks, written like any write_file (atomically, with the conflict check, its
 * previous content kept for undo), and the model is told which hunks applied and what the changed regions
 * now read. The snapshot is refreshed by that write, so the model's next edit of the file needs no re-read:
 * the answer tells it the file as it is.
 */

/**
 * Why per-hunk decisions cannot be taken for this preview (undefined: they can). Checked when the decision is
 * given, so a bad one is refused at once and the call keeps waiting, rather than failing when it runs.
 */
export function hunkDecisionError(
  preview: ApprovalPreview,
  hunks: readonly HunkDecision[],
): string | undefined {
  if (preview.kind !== 'write') return 'Per-hunk decisions apply only to a write or an edit.'
  if (!canReviewByHunk(preview))
    return preview.show === 'binary'
      ? `${preview.path} is a binary file, not lines of text; approve or reject it whole.`
      : `${preview.path} is too large a change to apply hunk by hunk; approve or reject it whole.`
  const seen = new Set<number>()
  for (const h of hunks) {
    if (h.index >= preview.hunks.length)
      return `There is no hunk ${h.index + 1}: the change to ${preview.path} has ${preview.hunks.length}.`
    if (seen.has(h.index)) return `Hunk ${h.index + 1} is decided twice.`
    seen.add(h.index)
    if (h.decision === 'edited' && h.text === undefined)
      return `Hunk ${h.index + 1} is marked edited but has no text.`
  }
  return undefined
}

/**
 * `approved`: the preview the user reviewed (its hunks are the ones the decisions name). `current`: the same
 * call previewed again just now, from the disk. Only when the file is still exactly the one reviewed (same text
 * before, same proposed text after) are the decisions applied, to the hunks the user saw.
 */
export async function executeReviewed(
  approved: WritePreview,
  current: PreviewResult<unknown>,
  hunks: readonly HunkDecision[],
  ctx: ToolContext,
): Promise<ToolResult> {
  const title = `Write ${approved.path} (reviewed by hunk)`
  if (!canReviewByHunk(approved))
    return fail(
      `Not applied: ${approved.path} is too large a change to apply hunk by hunk; approve or reject it whole.`,
      { title },
    )
  const plan = current.ok ? (current.plan as ChangePlan | undefined) : undefined
  if (
    !current.ok ||
    current.preview.kind !== 'write' ||
    !plan?.ok ||
    !sameChange(approved, current.preview, plan)
  )
    return fail(NOT_APPLIED_TEXT, { title })
  const before = plan.before ?? ''
  if (!roundTrips(before, plan))
    return fail(
      `Not applied: ${approved.path} holds bytes that are not valid UTF-8 text, which a change made hunk by hunk would replace; approve or reject the change whole.`,
      { title },
    )
  const reviewed = applyHunkDecisions(before, approved.hunks, hunks)
  if (!reviewed.ok) return fail(`Not applied: ${reviewed.error}`, { title })
  const written = await writeFileTool.execute({ path: approved.path, content: reviewed.after }, ctx)
  if (written.isError) return written
  return {
    output: describeReview(approved.path, reviewed),
    isError: false,
    title: written.title,
    metadata: {
      ...written.metadata,
      hunks: reviewed.outcomes.map((o) => ({ index: o.index, decision: o.decision })),
    },
  }
}

/**
 * The change planned now is the one reviewed: the same texts, where the preview kept them; where they were too
 * large to keep, the same hunks (the conflict check already refused a file changed since the model read it).
 */
function sameChange(approved: WritePreview, now: WritePreview, plan: ChangePlan & { ok: true }): boolean {
  if (approved.before !== undefined && approved.before !== plan.before) return false
  if (approved.after !== undefined && approved.after !== plan.after) return false
  if (approved.before === undefined || approved.after === undefined)
    return JSON.stringify(approved.hunks) === JSON.stringify(now.hunks)
  return true
}

/** The text the review was made on is the file's exact bytes (a decoded invalid byte would not write back). */
function roundTrips(before: string, plan: ChangePlan & { ok: true }): boolean {
  const previous = plan.previous
  if (!previous) return true
  const body = Buffer.from(before, 'utf8')
  const bom = previous.content.subarray(0, 3).equals(UTF8_BOM)
  return (bom ? Buffer.concat([UTF8_BOM, body]) : body).equals(previous.content)
}
