import type { SessionState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { plainFailure } from '../../lib/failure'
import { callTitle, formatDuration, formatOffset, statusLabel } from '../../lib/format'
import { findRewind, rewindReference } from '../rewind/rewind-summary'

export function findCall(view: SessionState, callId: string): ToolCallState | undefined {
  for (let i = view.turns.length - 1; i >= 0; i--) {
    const call = view.turns[i]?.calls[callId]
    if (call) return call
  }
  return undefined
}

export function BarTooltip({
  call,
  x,
  y,
  origin,
  view,
}: {
  call: ToolCallState
  x: number
  y: number
  origin: number
  view: SessionState
}) {
  const cause = call.causeCallId ? findCall(view, call.causeCallId) : undefined
  const rewind = findRewind(view, call.rewoundBy)
  const left = Math.min(Math.max(8, x - 160), window.innerWidth - 328)
  const failure = plainFailure(call)
  return (
    <div className="tooltip" role="tooltip" data-testid="timeline-tooltip" style={{ left, top: y + 6 }}>
      <div className="tooltip-title">{callTitle(call)}</div>
      <dl>
        <dt>Status</dt>
        <dd>
          <span className={`status-dot status-${call.status}`} aria-hidden="true" />{' '}
          {failure?.label ?? statusLabel(call.status)}
        </dd>
        {failure && (
          <>
            <dt>What happened</dt>
            <dd data-testid="tooltip-failure">{failure.what}</dd>
          </>
        )}
        <dt>Lane</dt>
        <dd>
          {call.lane.kind === 'parallel'
            ? `Parallel: ran beside the others of group ${call.lane.group + 1}`
            : 'Serial: one at a time, in order'}
        </dd>
        <dt>Tool</dt>
        <dd className="mono">{call.name}</dd>
        <dt>Queued</dt>
        <dd>+{formatOffset(call.queuedAt - origin)}</dd>
        {call.startedAt !== undefined && (
          <>
            <dt>Waited</dt>
            <dd>{formatDuration(call.startedAt - call.queuedAt)}</dd>
            <dt>Started</dt>
            <dd>+{formatOffset(call.startedAt - origin)}</dd>
          </>
        )}
        {call.startedAt === undefined && call.approval?.decidedAt !== undefined && (
          <>
            <dt>Waited</dt>
            <dd>{formatDuration(call.approval.decidedAt - call.queuedAt)} (never ran)</dd>
          </>
        )}
        {call.durationMs !== undefined && call.startedAt !== undefined && (
          <>
            <dt>Ran</dt>
            <dd>{formatDuration(call.durationMs)}</dd>
          </>
        )}
        {cause && (
          <>
            <dt>Because</dt>
            <dd>'{callTitle(cause)}' failed</dd>
          </>
        )}
        {rewind && (
          <>
            <dt>Taken back</dt>
            <dd data-testid="tooltip-rewound">by {rewindReference(rewind)}</dd>
          </>
        )}
      </dl>
    </div>
  )
}
