import { callTitle } from '../../lib/format'
import { callCount, type BarLayout, type TurnLayout } from './layout'
import { LABEL_WIDTH, MIN_BAR, xOf, type Scale } from './scale'

/**
 * Where a turn's bars go on screen at a given scale: rows are packed by the bars' pixel extents (a bar is at
 * least MIN_BAR wide, so two 1 ms reads one after the other would otherwise cover each other), and each label
 * goes inside its bar when it fits, beside it when the row has room, or only into the tooltip.
 */

export const TURN_HEADER = 22
export const ROW_HEIGHT = 24
export const LANE_GAP = 6
export const TURN_GAP = 10
/** The least room worth a label beside a bar. */
const MIN_LABEL_ROOM = 36
/** Rough width of the 11 px bar font per character, to decide inside/beside without measuring. */
const CHAR_PX = 6.3
const LABEL_PAD = 12

/** Estimated width of a bar label, without measuring text. */
export const labelWidth = (title: string): number => title.length * CHAR_PX + LABEL_PAD

export type LabelPlace = 'inside' | 'beside' | 'none'

export interface BarGeometry {
  bar: BarLayout
  row: number
  /** Left of the run; for a call still waiting, left of its wait (its bar is drawn at "now"). */
  x: number
  /** Width of a finished run (at least MIN_BAR); a run still going is widened to "now" by the view. */
  width: number
  /**
   * Left of the part of its wait that is drawn: where it was queued, or past whatever its row shows before it (the
   * previous bar and a label beside it), so a wait never covers another call's bar or name. A serial call queued
   * with the turn waits behind the calls before it; those bars already show that time.
   */
  waitX: number
  label: LabelPlace
  /** Room for a label beside the bar, up to the next bar of its row. */
  labelRoom: number
  /** Room on its left, back to what its row shows before it (the previous bar and its label beside, or the lane label). */
  roomLeft: number
}

export interface TurnGeometry {
  layout: TurnLayout
  parallelRows: number
  parallel: BarGeometry[]
  /** The serial calls' rows, then one row per skipped call. */
  serialRows: number
  serial: BarGeometry[]
  skipped: { bar: BarLayout; row: number; x: number }[]
  height: number
}

const cache = new WeakMap<TurnLayout, { scale: Scale; geometry: TurnGeometry }>()

export function placeTurn(layout: TurnLayout, scale: Scale): TurnGeometry {
  const cached = cache.get(layout)
  if (cached?.scale === scale) return cached.geometry
  const parallel = placeLane(layout.parallel, scale)
  const serial = placeLane(layout.serial, scale)
  const parallelRows = rowCount(parallel)
  const serialBarRows = rowCount(serial)
  // Skipped calls hang under the failed call, from where it started to run, so they stay inside the run's span.
  const skipped = layout.skipped.map((bar, i) => ({
    bar,
    row: Math.max(1, serialBarRows) + i,
    x: xOf(scale, bar.cause ? (bar.cause.startedAt ?? bar.cause.queuedAt) : bar.waitStart) + 6,
  }))
  const serialRows = serial.length > 0 || skipped.length > 0 ? Math.max(1, serialBarRows) + skipped.length : 0
  const lanes = (parallelRows > 0 ? parallelRows * ROW_HEIGHT + LANE_GAP : 0) + serialRows * ROW_HEIGHT
  const geometry: TurnGeometry = {
    layout,
    parallelRows,
    parallel,
    serialRows,
    serial,
    skipped,
    height: callCount(layout) === 0 ? 0 : TURN_HEADER + lanes + TURN_GAP,
  }
  cache.set(layout, { scale, geometry })
  return geometry
}

const rowCount = (bars: BarGeometry[]): number => bars.reduce((n, b) => Math.max(n, b.row + 1), 0)

function placeLane(bars: BarLayout[], scale: Scale): BarGeometry[] {
  const placed = bars.map((bar): BarGeometry => {
    const waitX = xOf(scale, bar.waitStart)
    const x = bar.runStart === undefined ? waitX : xOf(scale, bar.runStart)
    const width = bar.end === undefined ? MIN_BAR : Math.max(MIN_BAR, xOf(scale, bar.end) - x)
    return { bar, row: 0, x, width, waitX, label: 'none', labelRoom: 0, roomLeft: 0 }
  })
  // Interval packing in start order: each bar takes the first row whose last bar ends before it starts. A bar
  // still going reaches "now", past anything that can start after it.
  const rowEnds: number[] = []
  const lastInRow: (BarGeometry | undefined)[] = []
  const inOrder = [...placed].sort((a, b) => a.x - b.x || a.bar.call.index - b.bar.call.index)
  for (const g of inOrder) {
    let row = rowEnds.findIndex((e) => e <= g.x)
    if (row < 0) row = rowEnds.length
    const previous = lastInRow[row]
    if (previous) previous.labelRoom = g.x - (previous.x + previous.width) - 6
    rowEnds[row] = g.bar.end === undefined ? Number.POSITIVE_INFINITY : g.x + g.width
    lastInRow[row] = g
    g.row = row
    g.labelRoom = Number.POSITIVE_INFINITY
  }
  for (const g of placed)
    g.label = g.width >= labelOf(g) ? 'inside' : g.labelRoom >= MIN_LABEL_ROOM ? 'beside' : 'none'
  // What the previous bar of the row shows ends at its label beside it (cut to the room it has), else at the bar.
  const drawnUntil: number[] = []
  for (const g of inOrder) {
    const after = drawnUntil[g.row]
    g.roomLeft = after === undefined ? g.x - LABEL_WIDTH : g.x - after - 6
    if (after !== undefined) g.waitX = Math.min(g.x, Math.max(g.waitX, after + 2))
    drawnUntil[g.row] =
      g.x + g.width + (g.label === 'beside' ? Math.min(labelOf(g), Math.max(0, g.labelRoom)) : 0)
  }
  return placed
}

const labelOf = (g: BarGeometry): number => labelWidth(callTitle(g.bar.call))
