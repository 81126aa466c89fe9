/**
 * The timeline's horizontal scale: where a moment goes on screen, and which span "fit" frames.
 */
import type { SessionState } from '../../../../shared/reducer'

export const LABEL_WIDTH = 76
export const PAD_RIGHT = 48
export const MIN_BAR = 4
export const MIN_PX_PER_MS = 0.00005
export const MAX_PX_PER_MS = 4

export interface Scale {
  origin: number
  pxPerMs: number
}

export const xOf = (scale: Scale, t: number): number => LABEL_WIDTH + (t - scale.origin) * scale.pxPerMs

/** The run the "fit" button frames: the last one (the one going on, or the one just replayed). */
export function fitRange(view: SessionState, now: number): { start: number; end: number } {
  const run = view.runs[view.runs.length - 1]
  const start = run?.startedAt ?? view.firstEventAt ?? now
  const end = run?.endedAt ?? now
  return { start, end: Math.max(end, start + 1000) }
}
