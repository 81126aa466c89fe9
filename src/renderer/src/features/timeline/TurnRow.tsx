import { memo, useState } from 'react'
import type { RewindState } from '../../../../shared/reducer'
import { callTitle, formatDuration, sandboxFlag, skipReason, statusLabel, waitLabel } from '../../lib/format'
import { findRewindIn, keptReason, rewindReference } from '../rewind/rewind-summary'
import { canUndo, RewindToHereButton, UndoButton } from '../rewind/UndoButton'
import {
  labelWidth,
  LANE_GAP,
  placeBarAction,
  ROW_HEIGHT,
  TURN_HEADER,
  type BarGeometry,
  type TurnGeometry,
} from './geometry'
import { callCount } from './layout'
import { growable, type Growth } from './use-live-growth'
import { LABEL_WIDTH, MIN_BAR, xOf, type Scale } from './scale'
import { Button } from '../../components/Button'

/** One turn of the timeline: its header, the parallel lane, the serial lane and the skip markers under it. */

export interface TurnRowProps {
  geometry: TurnGeometry
  top: number
  scale: Scale
  now: number
  live: boolean
  contentWidth: number
  /** The turn's number as the user sees it (lib/turn-numbers.ts). */
  shown: number
  /** "Run 2: <task>" on the first turn of each run, when the session has more than one. */
  runLabel?: string
  selectedCallId: string | null
  /** The session's undos and rewinds: a bar taken back names and links to its own. */
  rewinds: readonly RewindState[]
  onSelect(callId: string, from: 'timeline'): void
  onSelectRewind(rewindId: string, from: 'timeline'): void
  onHover(callId: string | null, rect?: DOMRect): void
  /**
   * `inset`: pixels a growing wait stops short of "now" (the name of its bar, drawn on the bar's left), or a
   * waiting bar stands right of it (after the other waiting calls of its row).
   */
  registerGrowing(el: HTMLElement | null, from: number | undefined, growth: Growth, inset?: number): void
}

export const TurnRow = memo(function TurnRow(props: TurnRowProps) {
  const { geometry, top, scale, runLabel } = props
  const { layout } = geometry
  const calls = callCount(layout)
  // Rewinding to a turn goes back to before its first call (the conversation to the turn itself).
  const firstCall = [...layout.parallel, ...layout.serial, ...layout.skipped].sort(
    (a, b) => a.call.index - b.call.index,
  )[0]?.call.callId
  const rewound = layout.rewoundBy !== undefined
  return (
    <div
      className={`tl-turn ${rewound ? 'rewound-turn' : ''}`}
      style={{ top, height: geometry.height }}
      data-testid="timeline-turn"
      data-turn={layout.turn}
      data-rewound={layout.rewoundBy}
    >
      <div className="tl-turn-header" style={{ height: TURN_HEADER }}>
        <span className="tl-turn-title">
          {runLabel && (
            <>
              <span className="tl-run-label" data-testid="run-marker" title={runLabel}>
                {runLabel}
              </span>{' '}
              ·{' '}
            </>
          )}
          Turn {props.shown}
          <span className="muted">
            {' '}
            · {calls} {calls === 1 ? 'call' : 'calls'}
          </span>
          {rewound && (
            <span className="tl-rewound-tag" data-testid="timeline-turn-rewound">
              {' '}
              · Claude no longer sees this turn (rewound)
            </span>
          )}
        </span>
        {firstCall && !rewound && (
          <RewindToHereButton callId={firstCall} turn={layout.turn} shown={props.shown} />
        )}
        <span className="tl-turn-tick" style={{ left: xOf(scale, layout.startedAt) }} aria-hidden="true" />
      </div>
      {geometry.parallelRows > 0 && (
        <div
          className="tl-lane parallel"
          data-testid="lane-parallel"
          style={{ height: geometry.parallelRows * ROW_HEIGHT, marginBottom: LANE_GAP }}
        >
          <div className="tl-lane-label" title="Reads and searches: they run side by side, several at once">
            Parallel
            <span className="lane-caption" data-testid="lane-caption">
              side by side
            </span>
          </div>
          {geometry.parallel.map((g) => (
            <Bar key={g.bar.call.callId} g={g} {...props} />
          ))}
        </div>
      )}
      {geometry.serialRows > 0 && (
        <div
          className="tl-lane serial"
          data-testid="lane-serial"
          style={{ height: geometry.serialRows * ROW_HEIGHT }}
        >
          <div className="tl-lane-label" title="Writes and commands: one at a time, each after the last">
            Serial
            <span className="lane-caption" data-testid="lane-caption">
              one at a time
            </span>
          </div>
          {geometry.serial.map((g) => (
            <Bar key={g.bar.call.callId} g={g} {...props} />
          ))}
          {geometry.skipped.map((s) => (
            <SkipMarker key={s.bar.call.callId} skip={s} {...props} />
          ))}
        </div>
      )}
    </div>
  )
})

/** Rough widths of the buttons beside a bar, to put them where they cover no other bar. */
const ACTION_PX = { undo: 48, rewound: 104 } as const

function Bar({
  g,
  scale,
  now,
  live,
  contentWidth,
  selectedCallId,
  rewinds,
  onSelect,
  onSelectRewind,
  onHover,
  registerGrowing,
}: TurnRowProps & { g: BarGeometry }) {
  // Pointer or keyboard focus on the bar or on the button beside it (one zone, so reaching for the button never
  // makes it go away).
  const [near, setNear] = useState(false)
  const { bar } = g
  const { call } = bar
  const waiting = bar.runStart === undefined
  const running = !waiting && bar.end === undefined
  const nowX = xOf(scale, now)
  // A call still waiting has no run yet: its bar stands at "now", at the end of its wait.
  const x = waiting ? Math.max(g.waitX, nowX) + g.chainOffset : g.x
  const width = running ? Math.max(MIN_BAR, nowX - g.x) : g.width
  const title = callTitle(call)
  const flag = sandboxFlag(call)
  const top = g.row * ROW_HEIGHT + 3
  // A label beside a bar near the right edge goes on its left, so it is never cut off; where the left has no
  // room either (another bar), only the tooltip names the call. A waiting bar has moved on to "now" since its
  // room was measured: its wait is room too.
  const needed = labelWidth(title)
  // A waiting call after another waiting one has that one's bar on its left: no room for its name there.
  const roomLeft = g.hideWait ? 0 : g.roomLeft + (x - g.x)
  const labelLeft = g.label === 'beside' && x + width + needed > contentWidth && roomLeft >= needed
  const label = g.label === 'beside' && x + width + needed > contentWidth && !labelLeft ? 'none' : g.label
  // The wait ends where the bar begins, or where the bar's name on its left begins: never under text.
  const waitInset = labelLeft ? needed : 0
  const waitWidth = g.hideWait ? 0 : x - g.chainOffset - waitInset - g.waitX
  // A wait for the user's decision: drawn at the bar's height, with how long it lasted written on it.
  const askedAt = call.approval?.requestedAt
  const userWait = askedAt !== undefined
  const waited =
    askedAt === undefined
      ? undefined
      : waiting
        ? `waiting for you`
        : `waited for you ${formatDuration((call.approval?.decidedAt ?? bar.runStart ?? askedAt) - askedAt)}`
  const selected = selectedCallId === call.callId
  const rewind = findRewindIn(rewinds, call.rewoundBy)
  // A rewind that left this call's file as it was (changed since, and kept) took nothing back from it.
  const struck = rewind !== undefined && keptReason(rewind, call) === undefined
  // Beside the selected, hovered or focused bar: Undo for a write or edit that can be undone, a link to the undo
  // or rewind for one taken back. Right of the bar (past a label drawn beside it) where that covers no other
  // bar, else left of it where there is room, else right anyway (it goes when the pointer or focus does).
  const action = !(selected || near) ? null : canUndo(call) ? 'undo' : struck ? 'rewound' : null
  const actionPx = action === null ? 0 : ACTION_PX[action]
  const besideRight = label === 'beside' && !labelLeft ? Math.min(needed, g.labelRoom) : 0
  const roomRight = Math.min(g.labelRoom - besideRight, contentWidth - (x + width + besideRight) - 4)
  const {
    left: actionLeft,
    onLeft: actionOnLeft,
    below: actionBelow,
  } = placeBarAction({
    x,
    width,
    besideRight,
    labelLeftPx: labelLeft ? needed : 0,
    roomLeft,
    roomRight,
    contentWidth,
    actionPx,
  })
  const undone = struck ? `, taken back by ${rewindReference(rewind)}` : ''
  return (
    <span
      className="bar-group"
      onMouseEnter={() => setNear(true)}
      onMouseLeave={() => setNear(false)}
      onFocus={() => setNear(true)}
      onBlur={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setNear(false)
      }}
    >
      {waitWidth >= 2 && (
        <span
          // Coloured by what it waited for: the user (it asked for approval) or its turn in the queue.
          className={`tool-wait ${userWait ? 'status-awaiting-approval user-wait' : 'status-queued'}`}
          data-testid="tool-wait"
          data-call-id={call.callId}
          style={{ left: g.waitX, top: userWait ? top : top + 6, width: growable('width', waitWidth) }}
          ref={(el) => registerGrowing(el, live && waiting ? bar.waitStart : undefined, 'wait', waitInset)}
          aria-hidden="true"
        >
          {waited !== undefined && waitWidth >= waited.length * 6.2 + 20 && (
            <span className="wait-text" data-testid="wait-for-you">
              {waited}
            </span>
          )}
        </span>
      )}
      <button
        type="button"
        className={`tool-bar status-${call.status} label-${label} ${labelLeft ? 'label-left' : ''} ${selected ? 'selected' : ''} ${struck ? 'rewound' : ''}`}
        data-testid="tool-bar"
        data-status={call.status}
        data-call-id={call.callId}
        data-sandbox-flag={flag ?? undefined}
        data-start={bar.waitStart}
        data-run-start={bar.runStart ?? ''}
        data-end={bar.end ?? ''}
        data-row={g.row}
        style={{ left: growable('left', x), top, width: growable('width', width) }}
        ref={(el) =>
          registerGrowing(
            el,
            live && (waiting || running) ? (waiting ? bar.waitStart : bar.runStart) : undefined,
            waiting ? 'waiting-bar' : 'run',
            waiting ? g.chainOffset : 0,
          )
        }
        aria-label={`${title}${flag ? ` (${flag})` : ''}: ${statusLabel(call.status)}${call.durationMs !== undefined ? `, ran ${formatDuration(call.durationMs)}` : ''}${undone}`}
        onClick={() => onSelect(call.callId, 'timeline')}
        onMouseEnter={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
        onMouseLeave={() => onHover(null)}
        onFocus={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
        onBlur={() => onHover(null)}
      >
        {flag && <span className="bar-flag">{flag}</span>}
        {label !== 'none' && (
          <span
            className="bar-label"
            // Never wider than the room it was given (the widths are estimates): a long name is cut, not drawn
            // over the next bar or over the wait before this one.
            style={
              label === 'beside'
                ? { maxWidth: labelLeft ? needed : Math.min(needed, g.labelRoom) }
                : undefined
            }
          >
            {title}
          </span>
        )}
        {waiting && call.status === 'awaiting-approval' && <span className="sr-only">{waitLabel(call)}</span>}
      </button>
      {action !== null && (
        // After the bar in the tab order: Tab from a focused bar reaches it.
        <span
          className={`bar-undo bar-action ${actionOnLeft ? 'on-left' : ''}`}
          style={{
            left: actionLeft,
            top: (g.row + (actionBelow ? 1 : 0)) * ROW_HEIGHT + 1,
            width: actionOnLeft ? actionPx : undefined,
          }}
        >
          {action === 'undo' ? (
            <UndoButton call={call} />
          ) : (
            <Button
              look="small"
              className="bar-rewound-link"
              testId="bar-rewound-link"
              data-call-id={call.callId}
              title={`Taken back by ${rewindReference(rewind as RewindState)}: show it`}
              onClick={() => onSelectRewind((rewind as RewindState).rewindId, 'timeline')}
            >
              ↶ Undone: show
            </Button>
          )}
        </span>
      )}
    </span>
  )
}

/** Estimated width of a skip marker, to open it to the left when it would run past the content's right edge. */
const SKIP_MARKER_PX = (text: string): number => text.length * 6.2 + 140

function SkipMarker({
  skip,
  contentWidth,
  selectedCallId,
  onSelect,
  onHover,
}: TurnRowProps & { skip: TurnGeometry['skipped'][number] }) {
  const { bar, row, x } = skip
  const { call, cause } = bar
  const text = skipReason(cause)
  const title = callTitle(call)
  // Hung right of the failed call; moved left as far as needed to end inside the content, never past the lane
  // label, and cut short (ellipsis, full text in its label) if even that is not enough.
  const left = Math.max(LABEL_WIDTH + 4, Math.min(x + 8, contentWidth - SKIP_MARKER_PX(title + text) - 8))
  return (
    <>
      <span
        // Down from the failed call, then across to the marker (to its right, or back left when it was moved).
        className={`skip-connector ${left < x ? 'leftward' : ''}`}
        aria-hidden="true"
        style={{
          left: Math.min(x, left) - 1,
          top: 14,
          height: row * ROW_HEIGHT - 2,
          width: Math.max(8, Math.abs(left - x)),
        }}
      />
      <div
        className={`tool-bar skip-marker status-skipped ${selectedCallId === call.callId ? 'selected' : ''}`}
        data-testid="tool-bar"
        data-status="skipped"
        data-call-id={call.callId}
        data-cause-call-id={call.causeCallId}
        style={{ left, top: row * ROW_HEIGHT + 3, maxWidth: contentWidth - left - 8 }}
        onMouseEnter={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
        onMouseLeave={() => onHover(null)}
      >
        <button
          type="button"
          className="skip-self"
          onClick={() => onSelect(call.callId, 'timeline')}
          aria-label={`${title}: ${text}`}
        >
          <span className="skip-icon" aria-hidden="true">
            ⤼
          </span>
          <span className="skip-title">{title}</span>
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
