import { callTitle } from '../../lib/format'
import { callCount, type BarLayout, type TurnLayout } from './layout'
import { LABEL_WIDTH, MIN_BAR, xOf, type Scale } from './scale'

/**
 * Where a turn's bars go on screen at a given scale, so that the lanes read at a glance:
 *
 * - the serial lane is one row, its bars end to start in call order (a chain): one at a time;
 * - the parallel lane stacks rows only where calls really overlapped in time: two reads that did not overlap
 *   share a row, two that did never do.
 *
 * A bar is at least MIN_BAR wide, so bars of one row that are closer on screen than that (1 ms reads one after
 * the other) are drawn narrower, down to CHAIN_MIN, and then pushed right just enough not to cover each other.
 * Calls still waiting are drawn at "now", one after another (`chainOffset`). Each label goes inside its bar
 * when it fits, beside it when the row has room for all of it, or only into the tooltip: never cut.
 */

export const TURN_HEADER = 22
export const ROW_HEIGHT = 24
export const LANE_GAP = 6
export const TURN_GAP = 10
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
  /** For a call still waiting: how far right of "now" its bar stands (after the row's other waiting calls). */
  chainOffset: number
  /** Its wait is not drawn (another waiting call of its row, drawn at "now" before it, shows that time). */
  hideWait: boolean
}

/** The space between two bars of a row, and the least width a bar keeps when its row is crowded. */
export const BAR_GAP = 2
const CHAIN_MIN = 4

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
  const parallel = placeLane(layout.parallel, scale, 'parallel')
  const serial = placeLane(layout.serial, scale, 'serial')
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

function placeLane(bars: BarLayout[], scale: Scale, kind: 'parallel' | 'serial'): BarGeometry[] {
  const placed = bars.map((bar): BarGeometry => {
    const waitX = xOf(scale, bar.waitStart)
    const x = bar.runStart === undefined ? waitX : xOf(scale, bar.runStart)
    const width = bar.end === undefined ? MIN_BAR : Math.max(MIN_BAR, xOf(scale, bar.end) - x)
    return {
      bar,
      row: 0,
      x,
      width,
      waitX,
      label: 'none',
      labelRoom: 0,
      roomLeft: 0,
      chainOffset: 0,
      hideWait: false,
    }
  })
  const waiting = (g: BarGeometry): boolean => g.bar.runStart === undefined
  // Rows. Serial: one, in call order. Parallel: interval packing on real time, in start order: each call takes
  // the first row whose calls had all finished when it started; one still going (or waiting) holds its row.
  const rows: BarGeometry[][] = []
  if (kind === 'serial') rows.push([...placed].sort((a, b) => a.bar.call.index - b.bar.call.index))
  else {
    const rowEnds: number[] = []
    const start = (g: BarGeometry): number => g.bar.runStart ?? g.bar.waitStart
    const inOrder = [...placed].sort((a, b) => start(a) - start(b) || a.bar.call.index - b.bar.call.index)
    for (const g of inOrder) {
      let row = rowEnds.findIndex((e) => e <= start(g))
      if (row < 0) row = rowEnds.length
      rowEnds[row] = g.bar.end ?? Number.POSITIVE_INFINITY
      ;(rows[row] ??= []).push(g)
      g.row = row
    }
  }
  for (const row of rows) {
    // The row's finished and running bars end to start on screen; its waiting bars follow "now", in order.
    let previous: BarGeometry | undefined
    let waitingBefore = 0
    for (const g of row) {
      if (waiting(g)) {
        g.chainOffset =
          waitingBefore === 0 ? 0 : BAR_GAP + (waitingBefore - 1) * (MIN_BAR + BAR_GAP) + MIN_BAR
        if (previous && previous.bar.end === undefined && !waiting(previous)) g.chainOffset += BAR_GAP
        g.hideWait = waitingBefore > 0
        waitingBefore++
        previous = g
        continue
      }
      if (previous && !waiting(previous)) {
        const room = g.x - BAR_GAP - previous.x
        if (room < previous.width && previous.bar.end !== undefined)
          previous.width = Math.max(CHAIN_MIN, Math.min(previous.width, room))
        g.x = Math.max(g.x, previous.x + previous.width + BAR_GAP)
      }
      previous = g
    }
    const drawn = row.filter((g) => !waiting(g))
    drawn.forEach((g, i) => {
      const next = drawn[i + 1]
      g.labelRoom = next ? next.x - (g.x + g.width) - 6 : Number.POSITIVE_INFINITY
    })
    const lastWaiting = row.filter(waiting).pop()
    for (const g of row.filter(waiting)) g.labelRoom = g === lastWaiting ? Number.POSITIVE_INFINITY : 0
  }
  // A label is never cut: inside when it fits, beside when all of it fits before the next bar, else the tooltip.
  for (const g of placed)
    g.label = g.width >= labelOf(g) ? 'inside' : g.labelRoom >= labelOf(g) ? 'beside' : 'none'
  // What the previous bar of the row shows ends at its label beside it, else at the bar.
  for (const row of rows) {
    let after: number | undefined
    for (const g of row) {
      if (waiting(g) && g.hideWait) continue
      g.roomLeft = after === undefined ? g.x - LABEL_WIDTH : g.x - after - 6
      // A waiting bar stands at "now" or after what its row shows before it, whichever is later.
      if (after !== undefined)
        g.waitX = waiting(g) ? Math.max(g.waitX, after + 2) : Math.min(g.x, Math.max(g.waitX, after + 2))
      if (!waiting(g)) after = g.x + g.width + (g.label === 'beside' ? labelOf(g) : 0)
    }
  }
  return placed
}

const labelOf = (g: BarGeometry): number => labelWidth(callTitle(g.bar.call))

/** Where the Undo (or "Undone: show") button goes beside a bar. */
export interface BarActionPlace {
  left: number
  onLeft: boolean
  /** No room beside the bar in its row: under it, in the next row. */
  below: boolean
}

/**
 * Right of the bar (past a label drawn beside it) where that covers no other bar, else left of it where there is
 * room, else on whichever side has more (it goes when the pointer or focus does), else under the bar. Never over
 * the bar itself: that would take the click meant for the bar.
 */
export function placeBarAction(p: {
  x: number
  width: number
  /** Width of the label drawn right of the bar (0 if none). */
  besideRight: number
  /** Width of the label drawn left of the bar (0 if none). */
  labelLeftPx: number
  /** Free room left of the bar (including a label there) and right of it (past its label), up to other bars. */
  roomLeft: number
  roomRight: number
  contentWidth: number
  actionPx: number
}): BarActionPlace {
  const rightX = p.x + p.width + p.besideRight + 2
  const leftX = p.x - p.labelLeftPx - p.actionPx - 2
  if (p.roomRight >= p.actionPx + 2) return { left: rightX, onLeft: false, below: false }
  if (p.roomLeft - p.labelLeftPx >= p.actionPx + 2) return { left: leftX, onLeft: true, below: false }
  const rightFits = rightX + p.actionPx <= p.contentWidth
  if (rightFits) return { left: rightX, onLeft: false, below: false }
  if (leftX >= 0) return { left: leftX, onLeft: true, below: false }
  return { left: Math.max(0, Math.min(p.x, p.contentWidth - p.actionPx - 4)), onLeft: false, below: true }
}
