import type { Lane } from '../../shared/events'
import { GROUP_CANCELLED_TEXT, skipText, STOPPED_TEXT } from '../tools/result-format'
import type { ToolResult } from '../tools/tool'

/**
 * Runs one turn's tool calls (DESIGN 4). The heart is one small, fair read/write gate in call order (the
 * Codex habit): safe calls share it up to a cap, an unsafe call takes it alone, and nothing overtakes a call
 * that is waiting ahead of it. The two modes differ only in what reaches the gate and when:
 *
 * - streaming: each call enters the moment its block closes, while the model is still writing the next one;
 * - batch: nothing enters until the response is complete, then every safe call, then the unsafe ones in order.
 *
 * After an unsafe call fails, the turn's later unsafe calls are skipped (sibling skip), safe results are
 * always kept, and every call ends with exactly one outcome, reported in call order.
 */

export type SchedulerMode = 'streaming' | 'batch'

/** What the approval gate says before a call may run. */
export type GateVerdict =
  | { run: true }
  /** `failed`: the call itself failed (bad arguments, a denied command) and skips its siblings; a rejection does not. */
  | { run: false; result: ToolResult; failed: boolean }

export interface CallSpec {
  callId: string
  safe: boolean
  /** `bash(npm test)`: names the failed call in its siblings' skip texts. */
  label: string
  /**
   * Awaited once the call holds the gate, just before it runs: the approval. A `run: false` verdict (the
   * user rejected it, the arguments were invalid) finishes the call with that result. The gate calls
   * `waiting()` when it starts waiting for a person (as opposed to preparing), so the scheduler can tell a
   * paused turn from a busy one.
   */
  gate?: (waiting: () => void) => GateVerdict | Promise<GateVerdict>
  execute(signal: AbortSignal): Promise<ToolResult>
}

export type CallOutcome =
  | { kind: 'finished'; callId: string; result: ToolResult; durationMs: number; ran: boolean }
  | { kind: 'skipped'; callId: string; result: ToolResult; causeCallId: string }
  | { kind: 'cancelled'; callId: string; result: ToolResult; durationMs: number }

export interface SchedulerHooks {
  onQueued?(call: CallSpec, lane: Lane): void
  onStarted?(call: CallSpec): void
  onSettled?(call: CallSpec, outcome: CallOutcome): void
  /**
   * Nothing can move until a decision arrives: the response is complete, no call is executing and every
   * call holding the gate is waiting for a person. Called once per such stretch (the run is paused).
   */
  onBlocked?(): void
}

export interface SchedulerOptions {
  mode: SchedulerMode
  /** Most safe calls running at once. */
  concurrency?: number
  /** Off: a failed write or command does not stop the turn's later ones. */
  siblingSkip?: boolean
  /** The run's stop signal. */
  signal: AbortSignal
  hooks?: SchedulerHooks
  /** An unsafe call of this turn that failed before (a turn resumed from the log): its siblings stay skipped. */
  priorFailure?: { label: string; callId: string }
}

type State = 'waiting' | 'gated' | 'running' | 'settled'

interface Entry {
  spec: CallSpec
  order: number
  lane: Lane
  state: State
  controller: AbortController
  /** Set while the call waits at its gate: ends that wait when the call is aborted (see `abort`). */
  onAbort?: () => void
  /** At its gate, waiting for a person. */
  waiting: boolean
  startedAt: number
  outcome?: CallOutcome
}

export class TurnScheduler {
  private readonly entries: Entry[] = []
  /** Calls in the order they may take the gate (batch puts the safe ones first). */
  private queue: Entry[] = []
  private closed = false
  private segment = 0
  private failedLabel: { label: string; callId: string } | null = null
  private runningSafe = 0
  private exclusive: Entry | null = null
  private blockedReported = false
  private readonly mode: SchedulerMode
  private readonly cap: number
  private readonly siblingSkip: boolean
  private readonly hooks: SchedulerHooks
  private readonly signal: AbortSignal
  private settleAll!: () => void
  private readonly allSettled = new Promise<void>((resolve) => (this.settleAll = resolve))

  constructor(opts: SchedulerOptions) {
    this.mode = opts.mode
    this.cap = Math.max(1, opts.concurrency ?? 10)
    this.siblingSkip = opts.siblingSkip ?? true
    this.hooks = opts.hooks ?? {}
    this.signal = opts.signal
    this.failedLabel = opts.priorFailure ?? null
    // Removed when the turn settles: the run's signal outlives thousands of turns, and a listener left on it
    // per turn keeps every finished scheduler alive (and Node warns after 10).
    this.signal.addEventListener('abort', this.onStop, { once: true })
  }

  private readonly onStop = (): void => this.stopAll(STOPPED_TEXT)

  /**
   * Ends the turn's calls that have not finished, with `text` as their result: queued ones never start,
   * running ones are aborted. For a turn whose answer must not be acted on (the model refused it).
   */
  abandon(text: string): void {
    this.stopAll(text)
  }

  /** A call whose block closed. In streaming mode it may start at once. */
  add(spec: CallSpec): Lane {
    if (this.closed) throw new Error('TurnScheduler.add after close')
    const lane: Lane = spec.safe
      ? { kind: 'parallel', group: this.mode === 'batch' ? 0 : this.segment }
      : { kind: 'serial' }
    if (!spec.safe && this.mode === 'streaming') this.segment++
    const entry: Entry = {
      spec,
      order: this.entries.length,
      lane,
      state: 'waiting',
      controller: new AbortController(),
      waiting: false,
      startedAt: 0,
    }
    this.entries.push(entry)
    this.hooks.onQueued?.(spec, lane)
    if (this.signal.aborted) {
      this.settle(entry, {
        kind: 'cancelled',
        callId: spec.callId,
        result: cancelled(STOPPED_TEXT),
        durationMs: 0,
      })
      return lane
    }
    if (this.mode === 'streaming') {
      this.queue.push(entry)
      this.pump()
    }
    return lane
  }

  /** The response is complete: no more calls this turn. */
  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.mode === 'batch') {
      const pending = this.entries.filter((e) => e.state === 'waiting')
      this.queue = [...pending.filter((e) => e.spec.safe), ...pending.filter((e) => !e.spec.safe)]
    }
    this.pump()
  }

  /** Every call's outcome, in call order, once all have settled. Call after close(). */
  async done(): Promise<CallOutcome[]> {
    this.checkAllSettled()
    await this.allSettled
    return this.entries.map((e) => e.outcome as CallOutcome)
  }

  private pump(): void {
    if (this.mode === 'batch' && !this.closed) return
    while (this.queue.length > 0) {
      const next = this.queue[0] as Entry
      if (this.exclusive !== null) break
      if (next.spec.safe) {
        if (this.runningSafe >= this.cap) break
        this.queue.shift()
        this.runningSafe++
        void this.start(next)
      } else {
        if (this.runningSafe > 0) break
        this.queue.shift()
        if (this.siblingSkip && this.failedLabel !== null) {
          const cause = this.failedLabel
          this.settle(next, {
            kind: 'skipped',
            callId: next.spec.callId,
            result: skipped(cause.label),
            causeCallId: cause.callId,
          })
          continue
        }
        this.exclusive = next
        void this.start(next)
      }
    }
    this.checkBlocked()
    this.checkAllSettled()
  }

  private async start(entry: Entry): Promise<void> {
    const { spec } = entry
    try {
      if (spec.gate) {
        entry.state = 'gated'
        const given = spec.gate(() => {
          entry.waiting = true
          this.checkBlocked()
        })
        // A verdict known at once is taken without an await: the call starts in this synchronous run.
        const verdict = given instanceof Promise ? await raceAbort(given, entry) : given
        entry.waiting = false
        this.blockedReported = false
        if (verdict === ABORTED) return this.finishCancelled(entry)
        if (!verdict.run) {
          if (verdict.failed && !spec.safe) this.noteFailure(entry)
          return this.release(entry, {
            kind: 'finished',
            callId: spec.callId,
            result: verdict.result,
            durationMs: 0,
            ran: false,
          })
        }
      }
      if (entry.controller.signal.aborted) return this.finishCancelled(entry)
      entry.state = 'running'
      this.blockedReported = false
      entry.startedAt = performance.now()
      this.hooks.onStarted?.(spec)
      const result = await spec.execute(entry.controller.signal)
      if (entry.controller.signal.aborted && !result.isError) {
        // A tool that finished its work as the stop arrived keeps its real result.
        return this.release(entry, this.finished(entry, result))
      }
      if (entry.controller.signal.aborted) return this.finishCancelled(entry)
      if (result.isError && !spec.safe) this.noteFailure(entry)
      this.release(entry, this.finished(entry, result))
    } catch (e) {
      // An exception is an infrastructure failure, not the model's mistake: report it, and stop the calls
      // running beside a safe one (their results could depend on the same broken thing).
      const message = e instanceof Error ? e.message : String(e)
      const result: ToolResult = {
        output: `Internal error while running this tool: ${message}`,
        isError: true,
      }
      if (spec.safe) {
        for (const other of this.entries) {
          if (other !== entry && other.spec.safe && (other.state === 'running' || other.state === 'gated')) {
            abort(other, new Error(GROUP_CANCELLED_TEXT))
          }
        }
      } else {
        this.noteFailure(entry)
      }
      this.release(entry, this.finished(entry, result))
    }
  }

  private finished(entry: Entry, result: ToolResult): CallOutcome {
    return {
      kind: 'finished',
      callId: entry.spec.callId,
      result,
      durationMs: Math.round(performance.now() - entry.startedAt),
      ran: true,
    }
  }

  private finishCancelled(entry: Entry): void {
    // The abort's reason is the text the call gets: a stop, a group cancel, an abandoned turn.
    const reason = entry.controller.signal.reason
    const text = reason instanceof Error && reason.message !== '' ? reason.message : STOPPED_TEXT
    const durationMs = entry.startedAt > 0 ? Math.round(performance.now() - entry.startedAt) : 0
    this.release(entry, { kind: 'cancelled', callId: entry.spec.callId, result: cancelled(text), durationMs })
  }

  private noteFailure(entry: Entry): void {
    if (this.failedLabel === null) this.failedLabel = { label: entry.spec.label, callId: entry.spec.callId }
  }

  private release(entry: Entry, outcome: CallOutcome): void {
    if (entry.spec.safe) this.runningSafe--
    else if (this.exclusive === entry) this.exclusive = null
    this.settle(entry, outcome)
    this.pump()
  }

  private settle(entry: Entry, outcome: CallOutcome): void {
    entry.state = 'settled'
    entry.outcome = outcome
    this.hooks.onSettled?.(entry.spec, outcome)
  }

  private stopAll(text: string): void {
    for (const entry of this.entries) {
      if (entry.state === 'running' || entry.state === 'gated') abort(entry, new Error(text))
    }
    for (const entry of this.queue.splice(0)) {
      this.settle(entry, {
        kind: 'cancelled',
        callId: entry.spec.callId,
        result: cancelled(text),
        durationMs: 0,
      })
    }
    // In batch mode calls wait outside the queue until close(); they are cancelled too.
    for (const entry of this.entries) {
      if (entry.state === 'waiting') {
        this.settle(entry, {
          kind: 'cancelled',
          callId: entry.spec.callId,
          result: cancelled(text),
          durationMs: 0,
        })
      }
    }
    this.checkAllSettled()
  }

  private checkBlocked(): void {
    if (!this.closed || this.blockedReported) return
    const live = this.entries.filter((e) => e.state === 'running' || e.state === 'gated')
    if (live.length > 0 && live.every((e) => e.state === 'gated' && e.waiting)) {
      this.blockedReported = true
      this.hooks.onBlocked?.()
    }
  }

  private checkAllSettled(): void {
    if (this.closed && this.entries.every((e) => e.state === 'settled')) {
      this.signal.removeEventListener('abort', this.onStop)
      this.settleAll()
    }
  }
}

function skipped(label: string): ToolResult {
  return { output: skipText(label), isError: true }
}

function cancelled(text: string): ToolResult {
  return { output: text, isError: true }
}

const ABORTED = Symbol('aborted')

/**
 * Aborts a call (its tool sees its signal fire) and ends its wait at the gate. Every abort of a call goes
 * through here: the scheduler owns the controllers.
 */
function abort(entry: Entry, reason: Error): void {
  entry.controller.abort(reason)
  entry.onAbort?.()
}

/**
 * The gate's verdict, or ABORTED once the call is aborted while it waits. Told by `abort`, not by a listener
 * on the call's signal: an AbortSignal is a DOM EventTarget, and adding and removing a listener on it cost
 * more than the rest of starting a call.
 */
function raceAbort<T>(promise: Promise<T>, entry: Entry): Promise<T | typeof ABORTED> {
  if (entry.controller.signal.aborted) return Promise.resolve(ABORTED)
  return new Promise((resolve, reject) => {
    entry.onAbort = () => resolve(ABORTED)
    promise.then(
      (value) => {
        entry.onAbort = undefined
        resolve(value)
      },
      (error: unknown) => {
        entry.onAbort = undefined
        reject(error)
      },
    )
  })
}
