import type { TurnState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'

/**
 * What each call of a turn contributes to the timeline, in time (epoch ms): its lane, the stretch it spent
 * waiting (queued, or waiting for the user's decision) and the stretch it ran. The two are kept apart because
 * they mean different things: a bar is work, a wait is not, and a wait of 90 s must not look like a 90 s call.
 * Rows and pixels depend on the scale and are placed by geometry.ts.
 *
 * A call that never ran (rejected, cancelled while queued) gets a run of zero length at the moment it was
 * settled; one still waiting has no run yet (`runStart` undefined) and the view draws its bar at "now".
 */

export interface BarLayout {
  call: ToolCallState
  /** When the call was queued. */
  waitStart: number
  /** When it began running, or was settled without running; undefined while it still waits. */
  runStart?: number
  /** When it finished (or was settled); undefined while it waits or runs. */
  end?: number
  /** For a skipped call: the sibling whose failure skipped it (from the same turn). */
  cause?: ToolCallState
}

export interface TurnLayout {
  turn: number
  runId?: string
  startedAt: number
  parallel: BarLayout[]
  serial: BarLayout[]
  skipped: BarLayout[]
  /** Latest known time in this turn; undefined if something is still going. */
  end?: number
  /** A rewind took the conversation back to before this turn: Claude no longer sees it. */
  rewoundBy?: string
}

function span(call: ToolCallState): Omit<BarLayout, 'call' | 'cause'> {
  const settledAt = call.finishedAt ?? (call.status === 'rejected' ? call.approval?.decidedAt : undefined)
  const runStart = call.startedAt ?? settledAt
  return { waitStart: call.queuedAt, runStart, end: runStart === undefined ? undefined : settledAt }
}

/** A turn's layout depends only on the turn object, which the reducer replaces only when it changes. */
const cache = new WeakMap<TurnState, TurnLayout>()

export function layoutTurn(turn: TurnState): TurnLayout {
  const cached = cache.get(turn)
  if (cached) return cached
  const parallel: BarLayout[] = []
  const serial: BarLayout[] = []
  const skipped: BarLayout[] = []
  let end = turn.startedAt
  let open = false
  for (const callId of turn.callIds) {
    const call = turn.calls[callId]
    if (!call) continue
    const s = span(call)
    if (s.end === undefined) open = true
    else end = Math.max(end, s.end)
    if (call.status === 'skipped') {
      const cause = call.causeCallId === undefined ? undefined : turn.calls[call.causeCallId]
      skipped.push({ call, ...s, cause })
    } else if (call.lane.kind === 'parallel') {
      parallel.push({ call, ...s })
    } else {
      serial.push({ call, ...s })
    }
  }
  const layout: TurnLayout = {
    turn: turn.turn,
    runId: turn.runId,
    startedAt: turn.startedAt,
    parallel,
    serial,
    skipped,
    end: open ? undefined : end,
    ...(turn.rewoundBy === undefined ? {} : { rewoundBy: turn.rewoundBy }),
  }
  cache.set(turn, layout)
  return layout
}

export const callCount = (layout: TurnLayout): number =>
  layout.parallel.length + layout.serial.length + layout.skipped.length
