import { memo, useCallback, useEffect, useLayoutEffect, useRef, type KeyboardEvent } from 'react'
import { canReviewByHunk } from '../../../../shared/events'
import type { DiffHunk, HunkDecision, WritePreview } from '../../../../shared/events'
import { hunkPlace } from '../../lib/diff-rows'

/**
 * Per-hunk review of a write or edit: a checkbox per hunk, a note for a hunk left out, and "Edit this part" for a
 * small correction of its new lines. All of it works from the keyboard (the keys are listed on screen):
 * ↑/↓ or J/K move between hunks, Space or X applies or leaves out, E edits, N writes a note, Esc comes back
 * (from a field to its part, from a part to the review).
 * Reports the decisions that differ from "apply it all"; approving with none is approving the whole change.
 * The choices themselves are the caller's (the review keeps them in its drafts, so they outlive a call
 * streaming in and a reload).
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

/** Where the keyboard goes after a key that opens a field: `[hunk index, field]`. */
type FocusTarget = [number, 'hunk-apply' | 'hunk-text' | 'hunk-note']

export function HunkReview({
  preview,
  value: state,
  onChange,
}: {
  preview: WritePreview
  value: HunkChoices
  onChange(next: HunkChoices): void
}) {
  const listRef = useRef<HTMLOListElement>(null)
  /** A focus move waiting for its field to render, and the element that had the focus when it was asked for. */
  const focusNext = useRef<{ target: FocusTarget; from: Element | null } | null>(null)
  // One `update` for the life of the review, so a key press re-renders only the part it changes (a change may
  // have 500 parts).
  const latest = useRef({ state, onChange })
  useLayoutEffect(() => {
    latest.current = { state, onChange }
  })
  const update = useCallback((index: number, patch: Partial<HunkState>): void => {
    const { state: now, onChange: report } = latest.current
    report({ ...now, [index]: { ...APPLIED, ...now[index], ...patch } })
  }, [])
  // A field opened by a key exists only after the render: focus it then, and only if the focus is still where
  // that key was pressed. A move left pending would otherwise fire on some later render (the user typing a note
  // elsewhere re-renders this) and pull the focus away in mid-word: focus never moves by itself.
  useEffect(() => {
    const pending = focusNext.current
    if (!pending) return
    focusNext.current = null
    if (document.activeElement !== pending.from) return
    listRef.current
      ?.querySelector<HTMLElement>(`[data-hunk="${pending.target[0]}"] [data-testid="${pending.target[1]}"]`)
      ?.focus()
  })
  if (preview.hunks.length === 0) return null
  if (!canReviewByHunk(preview))
    return (
      <p className="muted small hunk-review-off" data-testid="hunk-review-off">
        This change is too large to show every part of it, so it can only be approved or rejected as a whole.
      </p>
    )
  const count = preview.hunks.length
  const stateOf = (index: number): HunkState => state[index] ?? APPLIED
  const focus = (target: FocusTarget): void => {
    const field = listRef.current?.querySelector<HTMLElement>(
      `[data-hunk="${target[0]}"] [data-testid="${target[1]}"]`,
    )
    if (field) {
      focusNext.current = null
      field.focus()
    } else focusNext.current = { target, from: document.activeElement }
  }

  const onKeyDown = (event: KeyboardEvent<HTMLOListElement>): void => {
    const target = event.target as HTMLElement
    const item = target.closest<HTMLElement>('[data-hunk]')
    if (!item || event.ctrlKey || event.metaKey || event.altKey) return
    const index = Number(item.dataset.hunk)
    const s = stateOf(index)
    if (target.dataset.testid !== 'hunk-apply') {
      // In the hunk's text or note: Esc comes back to the hunk, keeping what was typed.
      if (event.key !== 'Escape') return
      focus([index, 'hunk-apply'])
    } else {
      switch (event.key.toLowerCase()) {
        case 'arrowdown':
        case 'j':
          focus([Math.min(count - 1, index + 1), 'hunk-apply'])
          break
        case 'arrowup':
        case 'k':
          focus([Math.max(0, index - 1), 'hunk-apply'])
          break
        case 'x':
          update(index, { apply: !s.apply })
          break
        case 'e':
          // Editing a hunk left out brings it back: the edit is what gets applied.
          update(index, { apply: true, text: s.text ?? newSideOf(preview.hunks[index] as DiffHunk) })
          focus([index, 'hunk-text'])
          break
        case 'n':
          if (s.apply) return
          focus([index, 'hunk-note'])
          break
        case 'escape':
          // Out of the parts, back to the review, where J/K move between calls again.
          target.closest<HTMLElement>('[data-testid=approval-panel]')?.focus({ preventScroll: true })
          break
        default:
          return
      }
    }
    // The review's own keys (J/K between calls, Esc to the panel) must not act on the same press.
    event.preventDefault()
    event.stopPropagation()
  }

  const applied = preview.hunks.filter((_, i) => stateOf(i).apply).length
  return (
    <fieldset className="hunk-review" data-testid="hunk-review">
      <legend className="small">
        Apply this change in parts: {applied} of {count} will be applied
      </legend>
      <p className="muted small hunk-keys" data-testid="hunk-keys">
        Untick a part to leave it out. Keys on a part: <kbd>↑</kbd>/<kbd>↓</kbd> or <kbd>J</kbd>/<kbd>K</kbd>{' '}
        move · <kbd>Space</kbd> or <kbd>X</kbd> apply / leave out · <kbd>E</kbd> edit its new lines ·{' '}
        <kbd>N</kbd> note on a part left out · <kbd>Esc</kbd> back · <kbd>H</kbd> from anywhere in the review
        to come here
      </p>
      <ol className="hunk-list" ref={listRef} onKeyDown={onKeyDown}>
        {preview.hunks.map((hunk, index) => (
          <HunkItem key={index} hunk={hunk} index={index} s={stateOf(index)} update={update} />
        ))}
      </ol>
    </fieldset>
  )
}

const APPLIED: HunkState = { apply: true, note: '' }

const HunkItem = memo(function HunkItem({
  hunk,
  index,
  s,
  update,
}: {
  hunk: DiffHunk
  index: number
  s: HunkState
  update(index: number, patch: Partial<HunkState>): void
}) {
  return (
    <li
      key={index}
      className={`hunk-item ${s.apply ? '' : 'left-out'}`}
      data-testid="hunk-item"
      data-hunk={index}
      data-decision={!s.apply ? 'rejected' : s.text !== undefined ? 'edited' : 'accepted'}
    >
      <label className="checkbox">
        <input
          type="checkbox"
          data-testid="hunk-apply"
          checked={s.apply}
          onChange={(e) => update(index, { apply: e.target.checked })}
        />
        <span>
          Part {index + 1} <span className="muted small">({hunkPlace(hunk)})</span>{' '}
          <span className={`hunk-state ${!s.apply ? 'left-out' : s.text !== undefined ? 'edited' : ''}`}>
            {!s.apply ? 'left out' : s.text !== undefined ? 'edited by you' : 'will be applied'}
          </span>
        </span>
      </label>
      <ChangedLines hunk={hunk} />
      {s.apply && (
        <button
          type="button"
          className="link-button"
          data-testid="hunk-edit"
          onClick={() => update(index, { text: s.text === undefined ? newSideOf(hunk) : undefined })}
        >
          {s.text === undefined ? 'Edit this part' : 'Drop my edit'}
        </button>
      )}
      {s.apply && s.text !== undefined && (
        <textarea
          className="text-input mono hunk-text"
          data-testid="hunk-text"
          aria-label={`New text of part ${index + 1}`}
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
          aria-label={`Note about part ${index + 1}`}
          value={s.note}
          onChange={(e) => update(index, { note: e.target.value })}
        />
      )}
    </li>
  )
})

const SHOWN_CHANGED_LINES = 6

/**
 * The part's own removed and added lines, so it can be judged where it is ticked: on a small screen the full
 * diff above is scrolled out of sight.
 */
function ChangedLines({ hunk }: { hunk: DiffHunk }) {
  const changed = hunk.lines.filter((l) => l.startsWith('+') || l.startsWith('-'))
  const shown = changed.slice(0, SHOWN_CHANGED_LINES)
  return (
    <pre className="hunk-lines" aria-label="What this part changes">
      {shown.map((line, i) => (
        <span key={i} className={line.startsWith('+') ? 'add' : 'del'}>
          {line.startsWith('+') ? '+ ' : '− '}
          {line.slice(1, 200).replace(/\r$/, '')}
        </span>
      ))}
      {changed.length > shown.length && (
        <span className="muted">
          … {changed.length - shown.length} more changed lines (in the diff above)
        </span>
      )}
    </pre>
  )
}
