import type { RunEndReason } from '../../shared/events'

/**
 * What each stop reason of the Messages API means for the run (one home for it; the turn acts on it and the
 * README explains it). Source: https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons
 *
 * - tool_use: run the calls, send the results, go on.
 * - end_turn, stop_sequence: the model is done.
 * - max_tokens: the answer hit the output limit. Its last block may be cut; the run ends unless calls were
 *   made (their results go back and the model goes on).
 * - model_context_window_exceeded: the answer filled the context window; cut like max_tokens (the cut call never
 *   runs, the complete ones do), then the conversation is compacted and the model goes on (compaction.ts).
 * - compaction: the API paused after compacting (`pause_after_compaction`); the content goes back as it is and
 *   the model continues, like pause_turn.
 * - refusal: none of the turn's calls run, the turn is not sent back, the run ends; `stop_details` explains.
 * - pause_turn: the API paused a long turn; the assistant content goes back as it is and the model continues.
 * - anything newer: the run ends cleanly, naming the reason.
 */
export type StopPlan =
  | { kind: 'continue' }
  | { kind: 'pause_turn' }
  | { kind: 'refused' }
  | { kind: 'compact' }
  | { kind: 'end'; reason: RunEndReason; stopReason?: string }

export function stopPlan(stopReason: string | null, hasCalls: boolean): StopPlan {
  switch (stopReason) {
    case 'refusal':
      return { kind: 'refused' }
    case 'model_context_window_exceeded':
      return { kind: 'compact' }
    case 'pause_turn':
    case 'compaction':
      return hasCalls ? { kind: 'continue' } : { kind: 'pause_turn' }
    case 'tool_use':
    case 'end_turn':
    case 'max_tokens':
    case 'stop_sequence':
    case null:
      if (hasCalls) return { kind: 'continue' }
      return {
        kind: 'end',
        reason: stopReason === null || stopReason === 'tool_use' ? 'end_turn' : stopReason,
      }
    default:
      return { kind: 'end', reason: 'unknown_stop', stopReason }
  }
}

/** Stop reasons that may cut the answer's last block in the middle. */
export function cutsLastBlock(stopReason: string | null): boolean {
  return stopReason === 'max_tokens' || stopReason === 'model_context_window_exceeded'
}

/**
 * The one rule for a cut turn, the same in streaming and batch mode: a tool block that closed with complete
 * JSON arguments is a complete call and runs; a block that never closed never runs; under a cutting stop
 * reason, the last block runs only if its arguments are complete (the limit fell after it).
 */
export function isCutCall(
  use: { closed: boolean; index: number; rawInput: string },
  stopReason: string | null,
  lastIndex: number | undefined,
  completeJson: (raw: string) => boolean,
): false | 'unclosed' | 'max_tokens' | 'model_context_window_exceeded' {
  if (!use.closed) return 'unclosed'
  if (cutsLastBlock(stopReason) && use.index === lastIndex && !completeJson(use.rawInput)) {
    return stopReason as 'max_tokens' | 'model_context_window_exceeded'
  }
  return false
}

/** The result a cut call gets instead of running. */
export function cutCallText(
  name: string,
  by: 'unclosed' | 'max_tokens' | 'model_context_window_exceeded',
): string {
  switch (by) {
    case 'max_tokens':
      return `Not executed: your response hit the output token limit (max_tokens) while writing the arguments of this ${name} call, so they are incomplete. Issue it again; split large content into several smaller calls.`
    case 'model_context_window_exceeded':
      return `Not executed: the conversation filled the model's context window while you were writing the arguments of this ${name} call, so they are incomplete. The conversation was compacted; issue the call again if it is still needed.`
    case 'unclosed':
      return `Not executed: your response broke off before the arguments of this ${name} call were complete. Issue it again.`
  }
}

/** What a refused turn's calls get: they never run, whatever the mode. */
export const REFUSED_CALL_TEXT =
  'Not executed: the model declined this request (stop reason "refusal"), so nothing from that answer is run.'
