import { namingArgument, toolInWords } from '../../../shared/call-naming'
import type { ToolCallState, ToolCallStatus } from '../../../shared/tool-call'

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return ''
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  const minutes = Math.floor(ms / 60_000)
  const seconds = Math.round((ms % 60_000) / 1000)
  return `${minutes} min ${seconds} s`
}

/** `toLocaleDateString()` builds a formatter on every call (a good part of a millisecond): one, made once. */
const dateFormat = new Intl.DateTimeFormat()

/**
 * A count with the locale's digit grouping, as `n.toLocaleString()` writes it. That call builds a formatter each
 * time (most of a millisecond for a few of them): the session header shows token counts that change on every
 * replay step, so it uses this one formatter, made once.
 */
const countFormat = new Intl.NumberFormat()

export function formatCount(n: number): string {
  return countFormat.format(n)
}

/** "3 min ago", "yesterday", or a date: for the session list. */
export function formatAgo(at: number, now = Date.now()): string {
  const s = Math.round((now - at) / 1000)
  if (s < 45) return 'just now'
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`
  if (s < 2 * 86_400) return 'yesterday'
  return dateFormat.format(at)
}

/** The time of day of a moment, "14:03" (seconds too when `seconds`): for what the user did, like an undo. */
export function formatClock(at: number, seconds = false): string {
  return new Date(at).toLocaleTimeString([], {
    hour: 'numeric',
    minute: '2-digit',
    ...(seconds ? { second: '2-digit' } : {}),
  })
}

/** Offset from the start of the session, "1:05.2". */
export function formatOffset(ms: number): string {
  const safe = Math.max(0, ms)
  const minutes = Math.floor(safe / 60_000)
  const seconds = (safe % 60_000) / 1000
  return `${minutes}:${seconds.toFixed(1).padStart(4, '0')}`
}

const STATUS_LABELS: Record<ToolCallStatus, string> = {
  queued: 'Queued',
  'awaiting-approval': 'Needs approval',
  running: 'Running',
  ok: 'Done',
  error: 'Failed',
  rejected: 'Rejected',
  skipped: 'Skipped',
  cancelled: 'Cancelled',
}

export function statusLabel(status: ToolCallStatus): string {
  return STATUS_LABELS[status]
}

/**
 * The title the tool gave its call, carried on its events (each tool defines its own). A call without one
 * (arguments that did not parse, a log written before tools titled their calls) shows the tool's name and
 * its main argument.
 */
export function callTitle(call: ToolCallState): string {
  if (call.title) return call.title
  const main = namingArgument(call.input, 'people')
  return main ? `${call.name} ${main}` : toolInWords(call.name)
}

/** Why a call was skipped, naming the failed call as the user knows it: "skipped because 'Edit .env' failed". */
export function skipReason(cause: ToolCallState | undefined): string {
  return cause ? `skipped because '${callTitle(cause)}' failed` : 'skipped because an earlier call failed'
}

/** What a call not yet run is waiting for, in words. */
export function waitLabel(call: ToolCallState): string {
  return call.status === 'awaiting-approval' ? 'waiting for you' : 'queued'
}

/**
 * What the user let a command do beyond the sandbox (the review's switches, kept in the log): shown on its
 * bar so a glance at the lanes tells which commands ran with the internet or unconfined. Null: sandboxed.
 */
export function sandboxFlag(call: ToolCallState): 'outside the sandbox' | 'internet' | null {
  if (call.approval?.decision !== 'approved') return null
  if (call.approval.outsideSandbox) return 'outside the sandbox'
  return call.approval.network ? 'internet' : null
}
