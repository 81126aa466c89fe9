import { z } from 'zod'
import { CommandChangeCounts, CommandChangedPath } from '../../../../shared/events'
import type { ToolCallState } from '../../../../shared/tool-call'
import { describeContent, isLargeText } from '../approval/ChangeSummary'

/** What the bash tool puts in `metadata.changes` (issue 20); anything else is not shown. */
const Changes = z.object({
  mode: z.enum(['overlay', 'scan']),
  counts: CommandChangeCounts,
  paths: z.array(CommandChangedPath),
  truncated: z.boolean(),
  undoable: z.boolean(),
  error: z.string().optional(),
  reason: z.string().optional(),
})

export const PATHS_SHOWN = 12

/** "changed 3, added 1" and the paths, under a command's card; held protected changes with a warning. */
export function CommandChanges({ call }: { call: ToolCallState }) {
  const parsed = Changes.safeParse(call.metadata?.changes)
  const held = call.held
  if (!parsed.success && !held) return null
  const changes = parsed.success ? parsed.data : undefined
  const counts = changes?.counts
  const parts = counts
    ? [
        counts.changed ? `changed ${counts.changed}` : '',
        counts.added ? `added ${counts.added}` : '',
        counts.removed ? `removed ${counts.removed}` : '',
        counts.modeChanged ? `mode of ${counts.modeChanged}` : '',
      ].filter(Boolean)
    : []
  return (
    <div className="command-changes" data-testid="command-changes">
      {changes?.error !== undefined && changes.mode === 'overlay' && (
        <p className="failure-line">Nothing the command changed was kept: {changes.error}</p>
      )}
      {parts.length > 0 && changes && (
        <p className="muted small" data-testid="command-changes-summary">
          {parts.join(', ')}
          {changes.mode === 'scan' ? ' (found by comparing before and after: cannot be undone)' : ''}
        </p>
      )}
      {changes && changes.paths.length > 0 && (
        <ul className="command-changes-paths small">
          {changes.paths.slice(0, PATHS_SHOWN).map((p) => (
            <li key={`${p.change}:${p.relPath}`} data-testid="command-changed-path">
              <span className={`change-${p.change}`}>{p.change}</span> <code>{p.relPath}</code>
              {p.content && (
                // What a write's review would show of it: a binary file by its type and size, never as text.
                <span className="muted" data-testid="command-changed-content">
                  {' '}
                  ({p.content.binary ? 'binary: ' : isLargeText(p.content) ? 'large: ' : ''}
                  {describeContent(p.content)})
                </span>
              )}
            </li>
          ))}
          {(changes.paths.length > PATHS_SHOWN || changes.truncated) && <li className="muted">and more</li>}
        </ul>
      )}
      {held && held.pending === true && (
        <p className="decision-note rejected" role="note" data-testid="command-held">
          Changes wait for your review ({held.count}): nothing of this command is applied yet.
        </p>
      )}
      {held && held.pending === false && (
        <div className="decision-note" role="note" data-testid="command-held">
          <p>
            You reviewed the {held.count} held change{held.count === 1 ? '' : 's'}: {held.acceptedCount ?? 0}{' '}
            applied, {held.rejectedCount ?? 0} not applied.
          </p>
          {(held.rejected ?? []).length > 0 && (
            <ul className="command-changes-paths small" data-testid="command-held-rejected">
              {(held.rejected ?? []).slice(0, PATHS_SHOWN).map((p) => (
                <li key={p.relPath}>
                  <code>{p.relPath}</code> <span className="muted">{p.reason}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {held && held.pending === undefined && (
        <p className="decision-note rejected" role="note" data-testid="command-held">
          {held.landed
            ? `Protected changes landed as allowed (${held.count}): `
            : `Protected changes were held back and not applied (${held.count}): `}
          {held.paths
            .slice(0, PATHS_SHOWN)
            .map((p) => p.relPath)
            .join(', ')}
          {held.count > PATHS_SHOWN ? ', …' : ''}
        </p>
      )}
    </div>
  )
}
