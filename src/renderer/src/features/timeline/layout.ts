import type { TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'

/**
 * Where each call of a turn goes on the timeline: its lane (parallel calls packed into as few rows as
 * possible without overlapping, so calls that ran together sit one above the other; serial calls on one row),
 * and its time span. Skipped calls get a row each under the serial lane, starting where the skip happened, so
 * the link to the call that caused them can be drawn without markers covering each other.
 *
 * Times are epoch ms; `end` is undefined for a call still going (the view extends it to "now").
 */

export interface BarLayout {
  call: ToolCallState
  /** Row within its lane. */
  row: number
  start: number
  /** When the call began running (after queueing and approval); undefined if it never ran. */
  runStart?: number
  end?: number
  /** For a skipped call: the sibling whose failure skipped it (from the same turn). */
  cause?: ToolCallState
}

export interface TurnLayout {
  turn: number
  startedAt: number
  parallelRows: number
  parallel: BarLayout[]
  /** The serial calls' rows, then one row per skipped call. */
  serialRows: number
  serial: BarLayout[]
  skipped: BarLayout[]
  /** Latest known time in this turn (for the axis); undefined if something is still going. */
  end?: number
  height: number
}

export const TURN_HEADER = 22
export const ROW_HEIGHT = 24
export const LANE_GAP = 6
export const TURN_GAP = 10

function span(call: ToolCallState): { start: number; runStart?: number; end?: number } {
  const end = call.finishedAt ?? call.approval?.decidedAt
  const settledWithoutEnd = call.status === 'rejected' && end === undefined
  return {
    start: call.queuedAt,
    runStart: call.startedAt,
    end: settledWithoutEnd ? call.queuedAt : call.status === 'rejected' ? end : call.finishedAt,
  }
}

/** A turn's layout depends only on the turn object, which the reducer replaces only when it changes. */
const cache = new WeakMap<TurnState, TurnLayout>()

export function layoutTurn(turn: TurnState): TurnLayout {
  const cached = cache.get(turn)
  if (cached) return cached
  const parallel: BarLayout[] = []
  const serial: BarLayout[] = []
  const skipped: BarLayout[] = []
  let end: number | undefined = turn.startedAt
  let open = false
  for (const callId of turn.callIds) {
    const call = turn.calls[callId]
    if (!call) continue
    const s = span(call)
    if (s.end === undefined) open = true
    else end = Math.max(end ?? s.end, s.end)
    if (call.status === 'skipped') {
      const cause = call.causeCallId === undefined ? undefined : turn.calls[call.causeCallId]
      skipped.push({ call, row: skipped.length + 1, start: call.finishedAt, end: call.finishedAt, cause })
    } else if (call.lane.kind === 'parallel') {
      parallel.push({ call, row: 0, ...s })
    } else {
      serial.push({ call, row: 0, ...s })
    }
  }
  const parallelRows = pack(parallel)
  // Serial calls run one at a time, but calls queued together wait side by side (for approval, for their turn):
  // packing them draws that wait as a staircase instead of bars on top of each other.
  const serialBarRows = pack(serial)
  for (const bar of skipped) bar.row += Math.max(1, serialBarRows) - 1
  const serialRows = serial.length > 0 || skipped.length > 0 ? Math.max(1, serialBarRows) + skipped.length : 0
  const lanes = (parallelRows > 0 ? parallelRows * ROW_HEIGHT + LANE_GAP : 0) + serialRows * ROW_HEIGHT
  const layout: TurnLayout = {
    turn: turn.turn,
    startedAt: turn.startedAt,
    parallelRows,
    parallel,
    serialRows,
    serial,
    skipped,
    end: open ? undefined : end,
    height: TURN_HEADER + Math.max(lanes, ROW_HEIGHT) + TURN_GAP,
  }
  cache.set(turn, layout)
  return layout
}

/** Interval packing in start order: each bar takes the first row whose last bar ended before it starts. */
function pack(bars: BarLayout[]): number {
  const rowEnds: number[] = []
  for (const bar of [...bars].sort((a, b) => a.start - b.start)) {
    let row = rowEnds.findIndex((e) => e <= bar.start)
    if (row < 0) row = rowEnds.length
    rowEnds[row] = bar.end ?? Number.POSITIVE_INFINITY
    bar.row = row
  }
  return rowEnds.length
}
