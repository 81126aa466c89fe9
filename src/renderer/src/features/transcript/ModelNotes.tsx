import { useEffect, useState } from 'react'
import type { ThinkingBlock } from '../../../../shared/events'
import type { RetryState, RunState } from '../../../../shared/reducer'
import { formatDuration } from '../../lib/format'
import type { Wait } from './rows'

/**
 * What the model says about itself, beside its text and calls: its thinking, its narration between calls, a
 * request being retried, a long wait, and why a run ended when that needs explaining.
 */

/** The reasoning before a turn's answer: collapsed, since it is for the curious. */
export function ThinkingSection({ block }: { block: ThinkingBlock }) {
  const text = block.type === 'thinking' ? block.thinking.trim() : ''
  return (
    <details className="thinking" data-testid="thinking">
      <summary>Thinking</summary>
      {text === '' ? (
        <div className="thinking-hidden muted" data-testid="thinking-hidden">
          Hidden by the model.
        </div>
      ) : (
        <div className="thinking-text">{text}</div>
      )}
    </details>
  )
}

/** A progress note the model wrote between calls (it arrives as a thinking block): shown as it is. */
export function Narration({ block }: { block: ThinkingBlock }) {
  const text = block.type === 'thinking' ? block.thinking.trim() : ''
  if (text === '') return <ThinkingSection block={block} />
  return (
    <div className="assistant-text narration" data-testid="narration">
      {text}
    </div>
  )
}

const RETRY_WHY: Record<RetryState['reason'], string> = {
  overloaded: 'Claude is busy',
  rate_limited: 'Claude is rate-limiting this API key',
  server_error: 'Claude’s API had an error',
  connection_lost: 'The connection to Claude was lost',
  unreachable: 'Lanes could not reach Claude',
}

/** "Claude is busy, retrying in 4 s, 2 of 6", counting down. */
export function RetryNotice({ retry }: { retry: RetryState }) {
  const [now, setNow] = useState(() => Date.now())
  const dueAt = retry.at + retry.delayMs
  useEffect(() => {
    if (Date.now() >= dueAt) return
    const timer = setInterval(() => setNow(Date.now()), 250)
    return () => clearInterval(timer)
  }, [dueAt])
  const seconds = Math.max(0, Math.ceil((dueAt - now) / 1000))
  return (
    <span data-testid="retry-notice">
      {RETRY_WHY[retry.reason]}, {seconds > 0 ? `retrying in ${seconds} s` : 'retrying now'}, {retry.attempt}{' '}
      of {retry.of}
    </span>
  )
}

/** Quiet this long before the working row says what it waits on: a short pause is no news. */
const QUIET_MS = 3000

/**
 * "Waiting for Claude… 12 s" or "Running npm test… 40 s" once a wait is long enough to wonder about, else
 * "Working…". Its own one-second timer re-renders this line only, never the transcript around it.
 */
export function WaitNotice({ wait }: { wait: Wait }) {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [])
  const elapsed = now - wait.since
  if (elapsed < QUIET_MS) return <>Working…</>
  const seconds = Math.floor(elapsed / 1000)
  return (
    <span data-testid="wait-notice">
      {wait.label}… {seconds < 60 ? `${seconds} s` : formatDuration(seconds * 1000)}
    </span>
  )
}

/** "14:32" in the user's own clock, rounded up so "after" it is never too early. */
function clock(at: number): string {
  const d = new Date(Math.ceil(at / 60_000) * 60_000)
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`
}

/** The plain explanation and what to do next, for the ways a run can end that are not "done". */
export function RunEndExplanation({ run }: { run: RunState }) {
  const line = explanation(run)
  if (line === null) return null
  return (
    <div className="run-end-explanation" data-testid="run-end-explanation">
      {line}
    </div>
  )
}

function explanation(run: RunState): string | null {
  if (run.status === 'failed' && run.retryAt !== undefined) {
    return `Claude asked to wait before the next request. Try again after ${clock(run.retryAt)}: continue the run then.`
  }
  if (run.status !== 'finished') return null
  switch (run.reason) {
    case 'refusal':
      return `${run.stopDetails?.explanation ?? 'Claude declined to go on with this request.'} Nothing from that answer was run. Start a new task to go on.`
    case 'context_window_exceeded':
      return 'The conversation filled the model’s whole context window, so its last answer was cut off and the cut-off call was not run. Start a new task with what is left to do.'
    case 'max_tokens':
      return 'The answer hit the output token limit; a call it cut off was not run. Continue the run to let the model go on.'
    case 'unknown_stop':
      return `The model stopped for a reason this version of Lanes does not know (“${run.stopReason ?? 'unknown'}”). Continue the run to go on.`
    default:
      return null
  }
}
