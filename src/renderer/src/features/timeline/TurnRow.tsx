import { memo } from 'react'
import { callTitle, formatDuration, shortCall, statusLabel } from '../../lib/format'
import { LANE_GAP, ROW_HEIGHT, TURN_HEADER, type BarLayout, type TurnLayout } from './layout'
import { MIN_BAR, xOf, type Scale } from './scale'

/** One turn of the timeline: its header, the parallel lane, the serial lane and the skip markers under it. */

export interface TurnRowProps {
  layout: TurnLayout
  top: number
  scale: Scale
  now: number
  live: boolean
  selectedCallId: string | null
  onSelect(callId: string, from: 'timeline'): void
  onHover(callId: string | null, rect?: DOMRect): void
  registerRunning(el: HTMLElement | null, start: number | undefined): void
}

export const TurnRow = memo(function TurnRow(props: TurnRowProps) {
  const { layout, top, scale } = props
  const calls = layout.parallel.length + layout.serial.length + layout.skipped.length
  return (
    <div
      className="tl-turn"
      style={{ top, height: layout.height }}
      data-testid="timeline-turn"
      data-turn={layout.turn}
    >
      <div className="tl-turn-header" style={{ height: TURN_HEADER }}>
        <span className="tl-turn-title">
          Turn {layout.turn}
          <span className="muted">
            {' '}
            · {calls === 0 ? 'no tool calls' : `${calls} ${calls === 1 ? 'call' : 'calls'}`}
          </span>
        </span>
        <span className="tl-turn-tick" style={{ left: xOf(scale, layout.startedAt) }} aria-hidden="true" />
      </div>
      {layout.parallelRows > 0 && (
        <div
          className="tl-lane parallel"
          data-testid="lane-parallel"
          style={{ height: layout.parallelRows * ROW_HEIGHT, marginBottom: LANE_GAP }}
        >
          <div className="tl-lane-label" title="Reads and searches that ran at the same time">
            Parallel
          </div>
          {layout.parallel.map((bar) => (
            <Bar key={bar.call.callId} bar={bar} {...props} />
          ))}
        </div>
      )}
      {layout.serialRows > 0 && (
        <div
          className="tl-lane serial"
          data-testid="lane-serial"
          style={{ height: layout.serialRows * ROW_HEIGHT }}
        >
          <div className="tl-lane-label" title="Writes and commands, one at a time in order">
            Serial
          </div>
          {layout.serial.map((bar) => (
            <Bar key={bar.call.callId} bar={bar} {...props} />
          ))}
          {layout.skipped.map((bar) => (
            <SkipMarker key={bar.call.callId} bar={bar} {...props} />
          ))}
        </div>
      )}
      {calls === 0 && <div className="tl-lane empty" style={{ height: ROW_HEIGHT }} />}
    </div>
  )
})

function Bar({
  bar,
  scale,
  now,
  live,
  selectedCallId,
  onSelect,
  onHover,
  registerRunning,
}: TurnRowProps & { bar: BarLayout }) {
  const { call } = bar
  const start = bar.start
  const x = xOf(scale, start)
  const end = bar.end ?? now
  const width = Math.max(MIN_BAR, (end - start) * scale.pxPerMs)
  // The part spent waiting (queue, approval) is drawn lighter than the part spent running.
  const waitWidth =
    bar.runStart === undefined ? width : Math.min(width, (bar.runStart - start) * scale.pxPerMs)
  const growing = live && bar.end === undefined
  const title = callTitle(call)
  return (
    <button
      type="button"
      className={`tool-bar status-${call.status} ${selectedCallId === call.callId ? 'selected' : ''}`}
      data-testid="tool-bar"
      data-status={call.status}
      data-call-id={call.callId}
      data-start={start}
      data-run-start={bar.runStart ?? ''}
      data-end={bar.end ?? ''}
      data-row={bar.row}
      style={{ left: x, top: bar.row * ROW_HEIGHT + 3, width }}
      ref={(el) => registerRunning(el, growing ? start : undefined)}
      aria-label={`${title}: ${statusLabel(call.status)}${call.durationMs !== undefined ? `, ${formatDuration(call.durationMs)}` : ''}`}
      onClick={() => onSelect(call.callId, 'timeline')}
      onMouseEnter={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
      onMouseLeave={() => onHover(null)}
      onFocus={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
      onBlur={() => onHover(null)}
    >
      {waitWidth > 0 && bar.runStart !== undefined && (
        <span className="bar-wait" style={{ width: waitWidth }} />
      )}
      <span className="bar-label">{title}</span>
    </button>
  )
}

function SkipMarker({ bar, scale, selectedCallId, onSelect, onHover }: TurnRowProps & { bar: BarLayout }) {
  const { call, cause } = bar
  // Hung under the failed call (from where it started to run), so the markers stay inside the run's span on
  // screen instead of trailing off past its end.
  const anchor = cause ? (cause.startedAt ?? cause.queuedAt) : bar.start
  const linkX = xOf(scale, anchor) + 6
  const x = linkX
  const text = `skipped because ${shortCall(cause)} failed`
  return (
    <>
      <span
        className="skip-connector"
        aria-hidden="true"
        style={{
          left: Math.min(linkX, x) - 1,
          top: 14,
          height: bar.row * ROW_HEIGHT - 2,
          width: Math.max(8, x - linkX + 8),
        }}
      />
      <div
        className={`tool-bar skip-marker status-skipped ${selectedCallId === call.callId ? 'selected' : ''}`}
        data-testid="tool-bar"
        data-status="skipped"
        data-call-id={call.callId}
        data-cause-call-id={call.causeCallId}
        style={{ left: x + 8, top: bar.row * ROW_HEIGHT + 3 }}
        onMouseEnter={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
        onMouseLeave={() => onHover(null)}
      >
        <button
          type="button"
          className="skip-self"
          onClick={() => onSelect(call.callId, 'timeline')}
          aria-label={`${callTitle(call)}: ${text}`}
        >
          <span className="skip-title">{callTitle(call)}</span>
          <span className="skip-text">{text}</span>
        </button>
        {call.causeCallId && (
          <button
            type="button"
            className="skip-link"
            data-testid="skip-link"
            onClick={() => onSelect(call.causeCallId as string, 'timeline')}
            title="Show the call that failed"
            aria-label={`Show the failed call: ${cause ? callTitle(cause) : call.causeCallId}`}
          >
            ↖ show failed call
          </button>
        )}
      </div>
    </>
  )
}
