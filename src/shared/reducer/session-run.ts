import type { EventOf } from '../events'
import { anomaly, describe, edit, made, type Mutable, type Reduction } from './draft'
import type { RunState, RunStatus, SessionState } from './state'

/** The session and its runs: session.created and run.* (started, paused, resumed, finished, failed, stopped). */

export function onSessionCreated(r: Reduction, event: EventOf<'session.created'>): void {
  const s = r.state
  if (s.session) return anomaly(r, `${describe(event)}: the session was already created`)
  s.session = {
    sessionId: event.sessionId,
    workspace: event.workspace,
    title: event.title,
    settings: event.settings,
    createdAt: event.at,
  }
}

export function onRunStarted(r: Reduction, event: EventOf<'run.started'>): void {
  const s = r.state
  if (findRun(s, event.runId) >= 0)
    return anomaly(r, `${describe(event)}: run ${event.runId} already started`)
  const runs = (s.runs = edit(r, s.runs))
  runs.push(
    made(r, {
      runId: event.runId,
      task: event.task,
      status: 'running',
      startedAt: event.at,
      endedAt: undefined,
      reason: undefined,
      error: undefined,
      errorKind: undefined,
      usage: undefined,
      pausedFor: undefined,
      stopReason: undefined,
      stopDetails: undefined,
      retryAt: undefined,
    }),
  )
  s.currentRunId = event.runId
  s.status = 'running'
}

export function onRunPaused(r: Reduction, event: EventOf<'run.paused'>): void {
  updateRun(r, event, 'paused', (run) => {
    run.pausedFor = event.callIds
  })
}

export function onRunResumed(r: Reduction, event: EventOf<'run.resumed'>): void {
  updateRun(r, event, 'running', (run) => {
    run.pausedFor = undefined
  })
}

export function onRunFinished(r: Reduction, event: EventOf<'run.finished'>): void {
  endRun(r, event, 'finished', (run) => {
    run.reason = event.reason
    run.usage = event.usage
    run.stopReason = event.stopReason
    run.stopDetails = event.stopDetails
  })
}

export function onRunFailed(r: Reduction, event: EventOf<'run.failed'>): void {
  endRun(r, event, 'failed', (run) => {
    run.error = event.error
    run.errorKind = event.kind
    run.retryAt = event.retryAt
  })
}

export function onRunStopped(r: Reduction, event: EventOf<'run.stopped'>): void {
  endRun(r, event, 'stopped')
}

function findRun(state: SessionState, runId: string): number {
  for (let i = state.runs.length - 1; i >= 0; i--) if ((state.runs[i] as RunState).runId === runId) return i
  return -1
}

function updateRun(
  r: Reduction,
  event: EventOf<'run.paused' | 'run.resumed' | 'run.finished' | 'run.failed' | 'run.stopped'>,
  status: RunStatus,
  change: (run: Mutable<RunState>) => void,
): void {
  const s = r.state
  const pos = findRun(s, event.runId)
  // A run's end may be logged while its start was lost (damaged log): the session's status still follows it.
  const isCurrent = s.currentRunId === undefined || s.currentRunId === event.runId
  if (isCurrent) s.status = status
  if (pos < 0) return anomaly(r, `${describe(event)}: run ${event.runId} never started`)
  const runs = (s.runs = edit(r, s.runs))
  const run = edit(r, runs[pos] as RunState)
  runs[pos] = run
  run.status = status
  change(run)
  if (!isCurrent) anomaly(r, `${describe(event)}: run ${event.runId} is not the current run`)
}

/** A run ends (finished, failed, stopped): it records when, and is no longer paused for anything. */
function endRun(
  r: Reduction,
  event: EventOf<'run.finished' | 'run.failed' | 'run.stopped'>,
  status: RunStatus,
  change: (run: Mutable<RunState>) => void = () => undefined,
): void {
  updateRun(r, event, status, (run) => {
    run.endedAt = event.at
    change(run)
    run.pausedFor = undefined
  })
}
