import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, type KeyboardEvent } from 'react'
import { canReviewByHunk } from '../../../../shared/events'
import type { DiffHunk, HunkDecision, WritePreview } from '../../../../shared/events'
import { hunkPlace } from '../../lib/diff-rows'
import { DiffView, type PartProps, type PartReview } from '../approval/DiffView'
import type { HunkChoices, HunkState } from './hunk-choices'
import { Checkbox } from '../../components/Checkbox'

export type { HunkChoices, HunkState } from './hunk-choices'
import { Button } from '../../components/Button'

/**
 * Per-hunk review of a write or edit, drawn in its diff (each part's header holds its checkbox and "Edit this
 * part"; an edited part shows the user's lines; a note for a part left out sits under it). All of it works from the keyboard (the keys are listed on screen):
 * ↑/↓ or J/K move between hunks, Space or X applies or leaves out, E edits, N writes a note, Esc comes back
 * (from a field to its part, from a part to the review).
 * Reports the decisions that differ from "apply it all"; approving with none is approving the whole change.
 * The choices themselves are the caller's (the review keeps them in its drafts, so they outlive a call
 * streaming in and a reload).
 */

/** The hunk's new side as text: its context and added lines. */
export function newSideOf(hunk: DiffHunk): string {
  return hunk.lines
    .filter((l) => l.startsWith(' ') || l.startsWith('+'))
    .map((l) => l.slice(1).replace(/\r$/, ''))
    .join('\n')
}

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
  const listRef = useRef<HTMLDivElement>(null)
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
  const review = useMemo<PartReview>(() => ({ update, Head: PartHead, Fields: PartFields }), [update])
  const decisions = useMemo(() => decisionsOf(preview.hunks, state), [preview.hunks, state])
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
  if (!canReviewByHunk(preview))
    return (
      <>
        <DiffView preview={preview} />
        {preview.hunks.length > 0 && (
          <p className="muted small hunk-review-off" data-testid="hunk-review-off">
            This change is too large to show every part of it, so it can only be approved or rejected as a
            whole.
          </p>
        )}
      </>
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

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>): void => {
    const target = event.target as HTMLElement
    const item = target.closest<HTMLElement>('[data-hunk]')
    if (!item || event.ctrlKey || event.metaKey || event.altKey) return
    const index = Number(item.dataset.hunk)
    const s = stateOf(index)
    if (target.dataset.testid !== 'hunk-apply') {
      // In the hunk's text, note or Edit button: Esc comes back to the hunk, keeping what was typed. Other keys are
      // the field's.
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
      <div className="hunk-list" ref={listRef} onKeyDown={onKeyDown}>
        <DiffView preview={preview} decisions={decisions} review={review} states={state} />
      </div>
    </fieldset>
  )
}

const APPLIED: HunkState = { apply: true, note: '' }

/** A part's header in the diff: its checkbox (what the keys act on), where it is, what becomes of it, Edit. */
function PartHead({ hunk, index, s = APPLIED, update, hidden = 0 }: PartProps) {
  return (
    <span className="part-head">
      <Checkbox
        testId="hunk-apply"
        checked={s.apply}
        onChange={(checked) => update(index, { apply: checked })}
      >
        <span>
          Part {index + 1} · {hunkPlace(hunk)}{' '}
          <span className={`hunk-state ${!s.apply ? 'left-out' : s.text !== undefined ? 'edited' : ''}`}>
            {!s.apply ? 'left out' : s.text !== undefined ? 'edited by you' : 'will be applied'}
          </span>
        </span>
      </Checkbox>
      {s.apply && (
        <Button
          look="link"
          testId="hunk-edit"
          onClick={() => update(index, { text: s.text === undefined ? newSideOf(hunk) : undefined })}
        >
          {s.text === undefined ? 'Edit this part' : 'Drop my edit'}
        </Button>
      )}
      {hidden > 0 && (
        <span className="muted small">
          {hidden} line{hidden === 1 ? '' : 's'} not shown: “Show all” below the diff
        </span>
      )}
    </span>
  )
}

/** Under a part's lines: the text being edited (the diff above shows it as it will land), or why it is left out. */
function PartFields({ index, s = APPLIED, update }: PartProps) {
  if (s.apply && s.text !== undefined)
    return (
      <textarea
        className="text-input mono hunk-text"
        data-testid="hunk-text"
        aria-label={`New text of part ${index + 1}`}
        rows={Math.min(12, s.text.split('\n').length + 1)}
        value={s.text}
        onChange={(e) => update(index, { text: e.target.value })}
      />
    )
  if (!s.apply)
    return (
      <input
        className="text-input hunk-note"
        data-testid="hunk-note"
        placeholder="Why leave it out? (sent to the agent)"
        aria-label={`Note about part ${index + 1}`}
        value={s.note}
        onChange={(e) => update(index, { note: e.target.value })}
      />
    )
  return null
}
