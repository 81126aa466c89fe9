import { memo } from 'react'
import type { CompactionState } from '../../../../shared/reducer'
import { compactionHeadline } from '../context/CompactionRow'
import { formatClock } from '../../lib/format'
import '../context/context.css'
import { xOf, type Scale } from './scale'

/**
 * The session's compactions on the timeline (issue 21): a dotted line through the lanes at the moment each
 * happened, between the turns it came between. Only those of the state shown are drawn, so a replay shows each
 * from its moment on; the transcript's marker holds the summary.
 */
export const CompactionMarks = memo(function CompactionMarks({
  compactions,
  scale,
}: {
  compactions: readonly CompactionState[]
  scale: Scale
}) {
  return (
    <>
      {compactions.map((c) => (
        <span
          key={`${c.at}-${c.turn}`}
          className="compaction-line"
          data-testid="timeline-compaction-mark"
          data-mode={c.mode}
          style={{ transform: `translateX(${xOf(scale, c.at)}px)` }}
          title={`${compactionHeadline(c)} at ${formatClock(c.at, true)}`}
        />
      ))}
    </>
  )
})
