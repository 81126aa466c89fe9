import type { DiffHunk, HunkDecision, WritePreview } from '../../../../shared/events'

/**
 * Per-hunk review of a write or edit: a checkbox per hunk (Tab to it, Space toggles), a note for a hunk left
 * out, and "Edit this hunk" for a small correction of its new lines. Reports the decisions that differ from
 * "apply it all"; approving with none is approving the whole change. The choices themselves are the caller's
 * (the review keeps them in its drafts, so they outlive a call streaming in and a reload).
 */

export interface HunkState {
  apply: boolean
  note: string
  /** The user's text for the hunk's new side, once they edit it. */
  text?: string
}

/** The hunk's new side as text: its context and added lines. */
export function newSideOf(hunk: DiffHunk): string {
  return hunk.lines
    .filter((l) => l.startsWith(' ') || l.startsWith('+'))
    .map((l) => l.slice(1).replace(/\r$/, ''))
    .join('\n')
}

/** Per hunk index, the choices made so far; a hunk not in it is applied as proposed. */
export type HunkChoices = Readonly<Record<number, HunkState>>

export function decisionsOf(hunks: readonly DiffHunk[], state: HunkChoices): HunkDecision[] {
  const out: HunkDecision[] = []
  hunks.forEach((hunk, index) => {
    const s = state[index]
    if (!s) return
    const note = s.note.trim() ? { note: s.note.trim() } : {}
    if (!s.apply) out.push({ index, decision: 'rejected', ...note })
    else if (s.text !== undefined && s.text !== newSideOf(hunk))
      out.push({ index, decision: 'edited', text: s.text, ...note })
  })
  return out
}

export function HunkReview({
  preview,
  value: state,
  onChange,
}: {
  preview: WritePreview
  value: HunkChoices
  onChange(next: HunkChoices): void
}) {
  // A change shown in part cannot be applied in part; an unchanged file has no hunks to choose.
  if (preview.truncated || preview.before === undefined || preview.hunks.length === 0) return null
  const update = (index: number, patch: Partial<HunkState>): void => {
    onChange({ ...state, [index]: { apply: true, note: '', ...state[index], ...patch } })
  }
  const applied = preview.hunks.filter((_, i) => state[i]?.apply !== false).length
  return (
    <fieldset className="hunk-review" data-testid="hunk-review">
      <legend className="small">
        Review by hunk: {applied} of {preview.hunks.length} will be applied
      </legend>
      <ol className="hunk-list">
        {preview.hunks.map((hunk, index) => {
          const s = state[index] ?? { apply: true, note: '' }
          const first = hunk.lines.find((l) => l.startsWith('+') || l.startsWith('-')) ?? ''
          return (
            <li
              key={index}
              className={`hunk-item ${s.apply ? '' : 'left-out'}`}
              data-testid="hunk-item"
              data-hunk={index}
            >
              <label className="checkbox">
                <input
                  type="checkbox"
                  data-testid="hunk-apply"
                  checked={s.apply}
                  onChange={(e) => update(index, { apply: e.target.checked })}
                />
                Hunk {index + 1}{' '}
                <span className="muted small">
                  (lines {hunk.newStart}–{hunk.newStart + Math.max(0, hunk.newLines - 1)}){' '}
                  <span className="mono">{first.slice(0, 80)}</span>
                </span>
              </label>
              {s.apply && (
                <button
                  type="button"
                  className="link-button"
                  data-testid="hunk-edit"
                  onClick={() => update(index, { text: s.text === undefined ? newSideOf(hunk) : undefined })}
                >
                  {s.text === undefined ? 'Edit this hunk' : 'Drop my edit'}
                </button>
              )}
              {s.apply && s.text !== undefined && (
                <textarea
                  className="text-input mono hunk-text"
                  data-testid="hunk-text"
                  aria-label={`New text of hunk ${index + 1}`}
                  rows={Math.min(12, s.text.split('\n').length + 1)}
                  value={s.text}
                  onChange={(e) => update(index, { text: e.target.value })}
                />
              )}
              {!s.apply && (
                <input
                  className="text-input hunk-note"
                  data-testid="hunk-note"
                  placeholder="Why leave it out? (sent to the agent)"
                  aria-label={`Note about hunk ${index + 1}`}
                  value={s.note}
                  onChange={(e) => update(index, { note: e.target.value })}
                />
              )}
            </li>
          )
        })}
      </ol>
    </fieldset>
  )
}
