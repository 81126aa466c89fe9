import { z } from 'zod'

/** Number shapes the event schemas share (events.ts, approval-preview.ts). */

export const EpochMs = z.number().int().nonnegative()
export const Count = z.number().int().nonnegative()
/** Durations come from performance.now() differences: fractional, never negative. */
export const Millis = z.number().nonnegative()
