import { useEffect, useRef, useState } from 'react'
import type { SessionState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { isEditable } from '../../lib/editable'
import { callTitle } from '../../lib/format'

/**
 * The review's companions: what a screen reader hears when it opens, which calls a failure would skip, and the
 * keys that decide from anywhere.
 */

/** A live region that exists before the review does, so its announcement is heard when the review opens. */
export function ReviewAnnouncer({ pending }: { pending: number }) {
  const [message, setMessage] = useState('')
  const previous = useRef(0)
  useEffect(() => {
    if (pending > previous.current) {
      setMessage(
        pending === 1
          ? 'Review needed: the agent wants to make one change. Nothing happens until you decide.'
          : `Review needed: the agent wants to make ${pending} changes. Nothing happens until you decide.`,
      )
    } else if (pending === 0 && previous.current > 0) setMessage('Review done.')
    previous.current = pending
  }, [pending])
  return (
    <div className="sr-only" aria-live="assertive" role="status" data-testid="review-announcer">
      {message}
    </div>
  )
}

/**
 * Per pending call, the titles of the later writes and commands of its turn that would be skipped if it failed
 * (sibling skip, DESIGN 4), when the session skips them.
 */
export function siblingSkips(
  head: SessionState | undefined,
  pending: readonly ToolCallState[],
): ReadonlyMap<string, string[]> {
  const result = new Map<string, string[]>()
  if (!head || head.session?.settings.siblingSkip === false) return result
  for (const call of pending) {
    if (call.safe) continue
    const turn = head.turns.findLast((t) => t.turn === call.turn)
    if (!turn) continue
    const after = turn.callIds.slice(turn.callIds.indexOf(call.callId) + 1)
    const titles = after
      .map((id) => turn.calls[id])
      .filter(
        (c): c is ToolCallState =>
          c !== undefined && !c.safe && (c.status === 'queued' || c.status === 'awaiting-approval'),
      )
      .map(callTitle)
    if (titles.length > 0) result.set(call.callId, titles)
  }
  return result
}

/**
 * A/R (one call), Shift+A/R (all), J/K (move), H (to the parts of a change, HunkReview). Never while an editable
 * element has the focus (isEditable: any text field, select or contenteditable, the composer included, with or
 * without Shift or Alt): there every key is the user's. Esc leaves such a field for the review; that is the only
 * key the review takes from one. While `held` (an approval waits for its confirmation) the letters do nothing.
 */
export function useReviewKeys(
  pending: readonly ToolCallState[],
  focus: number,
  setFocus: (update: (f: number) => number) => void,
  decide: (callIds: string[], decision: 'approved' | 'rejected') => void,
  held: boolean,
): void {
  useEffect(() => {
    const onKey = (event: KeyboardEvent): void => {
      const target = event.target instanceof Element ? event.target : null
      const typing = isEditable(target) || isEditable(document.activeElement)
      if (target?.closest('[role=dialog]')) return
      if (typing) {
        if (event.key === 'Escape' && target instanceof HTMLElement) {
          target.blur()
          document.querySelector<HTMLElement>('[data-testid=approval-panel]')?.focus({ preventScroll: true })
          event.preventDefault()
        }
        return
      }
      if (event.ctrlKey || event.metaKey || event.altKey || held || event.repeat) return
      const letter = event.key.toLowerCase()
      const current = pending[focus]
      const all = pending.map((c) => c.callId)
      switch (letter) {
        case 'a':
          if (event.shiftKey) decide(all, 'approved')
          else if (current) decide([current.callId], 'approved')
          break
        case 'r':
          if (event.shiftKey) decide(all, 'rejected')
          else if (current) decide([current.callId], 'rejected')
          break
        case 'j':
        case 'arrowdown':
          setFocus((f) => Math.min(pending.length - 1, f + 1))
          break
        case 'k':
        case 'arrowup':
          setFocus((f) => Math.max(0, f - 1))
          break
        case 'h': {
          const part = document.querySelector<HTMLElement>(
            `[data-review-index="${focus}"] [data-testid=hunk-apply]`,
          )
          if (!part) return
          part.focus()
          break
        }
        default:
          return
      }
      event.preventDefault()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [pending, focus, setFocus, decide, held])
}
