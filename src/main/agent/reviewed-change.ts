import type { HunkDecision, WritePreview } from '../../shared/events'
import { applyHunkDecisions, describeReview } from '../tools/hunk-review'
import { fail, type ToolContext, type ToolResult } from '../tools/tool'
import { writeFileTool } from '../tools/write-file'

/**
 * A write or edit the user approved only in part (per-hunk review, issue 14): the file gets exactly the
 * accepted (and user-edited) hunks, written like any write_file (atomically, with the conflict check, its
 * previous content kept for undo), and the model is told which hunks applied and what the changed regions
 * now read.
 */

/** True when the decisions change anything compared with approving the whole change. */
export function isPartial(hunks: readonly HunkDecision[] | undefined): hunks is readonly HunkDecision[] {
  return hunks !== undefined && hunks.some((h) => h.decision !== 'accepted')
}

/**
 * `preview` is the change as it is on disk now, already checked to be the one the user approved, so its hunks
 * are the ones the decisions name.
 */
export async function executeReviewed(
  preview: WritePreview,
  hunks: readonly HunkDecision[],
  ctx: ToolContext,
): Promise<ToolResult> {
  const title = `Write ${preview.path} (reviewed by hunk)`
  if (preview.truncated || preview.before === undefined)
    return fail(
      `Not applied: ${preview.path} is too large a change to apply hunk by hunk; approve or reject it whole.`,
      { title },
    )
  const before = preview.before ?? ''
  const reviewed = applyHunkDecisions(before, preview.hunks, hunks)
  if (!reviewed.ok) return fail(`Not applied: ${reviewed.error}`, { title })
  const hunkMeta = reviewed.outcomes.map((o) => ({ index: o.index, decision: o.decision }))
  if (reviewed.after === before) {
    const notes = reviewed.outcomes.filter((o) => o.note).map((o) => `hunk ${o.index + 1}: ${o.note}`)
    return fail(
      `The user rejected every hunk of the change to ${preview.path}; nothing was written.` +
        (notes.length > 0 ? ` The user wrote: ${notes.join('; ')}` : ''),
      { title, metadata: { path: preview.path, rejected: true, hunks: hunkMeta } },
    )
  }
  const written = await writeFileTool.execute({ path: preview.path, content: reviewed.after }, ctx)
  if (written.isError) return written
  return {
    output: describeReview(preview.path, reviewed),
    isError: false,
    title: written.title,
    metadata: { ...written.metadata, hunks: hunkMeta },
  }
}
