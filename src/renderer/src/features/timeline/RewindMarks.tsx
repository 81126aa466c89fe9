import { memo } from 'react'
import type { RewindState } from '../../../../shared/reducer'
import { formatClock } from '../../lib/format'
import '../rewind/rewind-history.css'
import { rewindKind, rewindMarkLabel } from '../rewind/rewind-summary'
import { xOf, type Scale } from './scale'

/** Rough width of a mark's label (up to "✕ Rewind failed"), to keep it inside the content at the right edge. */
export const REWIND_MARK_PX = 96

/** Where a rewind's mark stands: the moment it started, on the session's (squeezed) time axis. */
export const rewindMarkX = (scale: Scale, rewind: RewindState): number => xOf(scale, rewind.startedAt)

/**
 * The session's undos and rewinds on the timeline: a line through the lanes at the moment each happened and a
 * labelled button on the ruler (kept in view while the lanes scroll) that selects its row in the transcript.
 * Only the rewinds of the state shown are drawn, so a replay shows each from the moment it happened.
 */
export const RewindMarks = memo(function RewindMarks({
  rewinds,
  scale,
  contentWidth,
  selectedRewindId,
  onSelect,
}: {
  rewinds: readonly RewindState[]
  scale: Scale
  contentWidth: number
  selectedRewindId: string | null
  onSelect(rewindId: string, from: 'timeline'): void
}) {
  if (rewinds.length === 0) return null
  return (
    <>
      <div className="rewind-mark-strip" role="group" aria-label="Undos and rewinds">
        {rewinds.map((rewind) => {
          const x = rewindMarkX(scale, rewind)
          const kind = rewindKind(rewind)
          const failed = rewind.status === 'rolled-back'
          return (
            <button
              key={rewind.rewindId}
              type="button"
              className={`rewind-mark rewind-${rewind.status} ${x + REWIND_MARK_PX > contentWidth ? 'flip' : ''} ${selectedRewindId === rewind.rewindId ? 'selected' : ''}`}
              data-testid="timeline-rewind-mark"
              data-rewind-id={rewind.rewindId}
              data-status={rewind.status}
              style={{ left: x }}
              title={`${kind} at ${formatClock(rewind.startedAt, true)}${failed ? ' (rolled back)' : ''}: show it in the transcript`}
              aria-label={`${kind} at ${formatClock(rewind.startedAt)}${failed ? ', rolled back' : ''}: show it in the transcript`}
              onClick={() => onSelect(rewind.rewindId, 'timeline')}
            >
              <span aria-hidden="true">{failed ? '✕' : '↶'}</span> {rewindMarkLabel(rewind)}
            </button>
          )
        })}
      </div>
      {rewinds.map((rewind) => (
        <span
          key={rewind.rewindId}
          className={`rewind-line rewind-${rewind.status} ${selectedRewindId === rewind.rewindId ? 'selected' : ''}`}
          style={{ transform: `translateX(${rewindMarkX(scale, rewind)}px)` }}
          aria-hidden="true"
        />
      ))}
    </>
  )
})
