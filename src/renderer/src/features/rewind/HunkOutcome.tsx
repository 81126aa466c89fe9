import type { ToolCallState } from '../../../../shared/tool-call'

/**
 * On a finished (or replayed) write or edit reviewed part by part: which parts were applied, left out (with the
 * user's note) or edited, as the log recorded each decision. Shown in place of the card's plain "Approved".
 */
export function HunkOutcome({ call }: { call: ToolCallState }) {
  const approval = call.approval
  if (approval?.decision !== 'approved' || !approval.hunks) return null
  const total = approval.preview?.kind === 'write' ? approval.preview.hunks.length : undefined
  const left = approval.hunks.filter((h) => h.decision === 'rejected')
  const applied = total === undefined ? undefined : total - left.length
  const summary =
    applied === 0
      ? 'You left out every part of this change: nothing was written'
      : `Approved in parts${applied !== undefined && total !== undefined ? `: ${applied} of ${total} applied` : ''}`
  return (
    <div className="decision-note approved hunk-outcome" data-testid="hunk-outcome">
      {summary}
      {approval.note ? ` (“${approval.note}”)` : ''}.
      <ul className="hunk-outcome-list">
        {approval.hunks.map((h) => (
          <li key={h.index} data-testid="hunk-outcome-item" data-hunk={h.index} data-decision={h.decision}>
            Part {h.index + 1}:{' '}
            {h.decision === 'rejected' ? 'left out' : h.decision === 'edited' ? 'edited by you' : 'applied'}
            {h.note ? ` — “${h.note}”` : ''}
          </li>
        ))}
      </ul>
      {total !== undefined && approval.hunks.length < total && (
        <span className="muted small">Every other part was applied as proposed.</span>
      )}
    </div>
  )
}
