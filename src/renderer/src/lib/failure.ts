import type { RunState } from '../../../shared/reducer'
import { resultForPeople } from '../../../shared/result-text'
import type { ToolCallState } from '../../../shared/tool-call'

/** Failures in plain words: what a card or a run's end says went wrong, without text meant for the model. */

/** The first line of a failed or rejected call's reason, for the card's header; undefined for other calls. */
export function failureLine(call: ToolCallState): string | undefined {
  if (call.status !== 'error' && call.status !== 'cancelled') return undefined
  if (call.output === undefined) return undefined
  const lines = resultForPeople(call.output)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
  // A command's output often starts with noise (a stack frame's file name, a progress line): the first line
  // that says what went wrong is the reason; otherwise the first line.
  return (lines.find((line) => REASON.test(line)) ?? lines[0])?.slice(0, 300)
}

const REASON =
  /\b(error|cannot|can't|could not|not found|no such|failed|fails|denied|refused|invalid|missing|not allowed|conflict)\b/i

/**
 * A run's error as the user reads it. The API's request id is for a support ticket (it stays in the session
 * log), not for the person deciding whether to try again.
 */
export function plainRunError(error: string | undefined): string {
  if (!error) return 'an unknown error.'
  return error.replace(/\s*\(request id [^)]*\)/gi, '')
}

/**
 * Failures a new attempt can get past: the network, an overloaded or rate-limited model, and a refused key or
 * address once Settings are changed (a continued run connects with the settings as they are then).
 */
export function canRetry(run: RunState): boolean {
  return (
    run.status === 'failed' &&
    (run.errorKind === 'model' || run.errorKind === 'network' || run.errorKind === 'auth')
  )
}
