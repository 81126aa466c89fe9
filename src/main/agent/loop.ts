import { stat } from 'node:fs/promises'
import type {
  EventOf,
  HunkDecision,
  Lane,
  RunFailureKind,
  SessionEvent,
  SessionSettings,
} from '../../shared/events'
import { reduceEvent, reduceEvents, type SessionState } from '../../shared/reducer'
import type { ToolCallState } from '../../shared/tool-call'
import { buildConversation, snapshotsFrom, turnContent } from '../session/conversation'
import { openSessionWriter, readSession, sessionPaths, type SessionWriter } from '../session/log'
import { changeKeeper, preimagesDir, PreimageStore } from '../session/preimages'
import {
  applyRewind,
  planRewind,
  recoverRewind,
  type Refusal,
  type RewindApplied,
  type RewindPlan,
  type RewindRequest,
} from '../session/rewind'
import { unfinishedRewind } from '../session/rewind-history'
import { executeReviewed, isPartial } from './reviewed-change'
import { newSessionId } from '../session/store'
import { parseToolArgs } from '../tools/args'
import { callLabel, formatForModel } from '../tools/result-format'
import type { ToolRegistry } from '../tools/registry'
import { loadSensitivePathRules, type SensitivePathRules } from '../tools/sensitive-paths'
import { NOT_APPLIED_TEXT } from '../tools/file-change'
import { SnapshotStore } from '../tools/snapshots'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import type { Approved, ToolContext, ToolResult } from '../tools/tool'
import { buildPreview, decidePolicy, type AlwaysAllowStore } from './approvals'
import type { ModelClient, TurnResult } from './model'
import { buildSystemPrompt } from './prompt'
import { cutCallText, isCutCall, REFUSED_CALL_TEXT, stopPlan } from './stop-reasons'
import {
  TurnScheduler,
  type CallOutcome,
  type CallSpec,
  type GateVerdict,
  type SchedulerMode,
} from './scheduler'

/**
 * The agent loop (DESIGN 1): stream a model turn, turn every tool_use into a call, gate it, schedule it, send
 * the results back, until the model ends its turn, the user stops, or the turn limit is hit. Everything it
 * does is an event appended to the session log first and shown second, so a crash at any point leaves a log
 * that a new process can continue from.
 */

/**
 * How calls that need approval get their decision:
 * - interactive: the UI decides through `decide()`; the run pauses while it waits;
 * - pause: headless without --approve: persist the pause and stop (the process exits 3);
 * - all / none: headless, every asking call approved / rejected at once.
 */
export type ApprovalMode = 'interactive' | 'pause' | 'all' | 'none'

export interface AgentOptions {
  /** Real path of the workspace root. */
  workspace: string
  sessionsDir: string
  registry: ToolRegistry
  model: ModelClient
  modelName: string
  baseUrl?: string
  demo: boolean
  scheduler: SchedulerMode
  siblingSkip: boolean
  concurrency?: number
  maxTurns: number
  bashTimeoutSec?: number
  autoApproveEdits: boolean
  approvals: ApprovalMode
  alwaysAllow?: AlwaysAllowStore
  /** Every event, after it is in the log. */
  onEvent?: (event: SessionEvent) => void
}

export type RunOutcome =
  | { status: 'finished' }
  | { status: 'paused'; callIds: string[] }
  | { status: 'stopped' }
  | { status: 'failed'; error: string; kind: RunFailureKind }

type Draft = {
  [T in SessionEvent['type']]: Omit<EventOf<T>, 'seq' | 'at'> & { at?: number }
}[SessionEvent['type']]

interface Decision {
  decision: 'approved' | 'rejected'
  note?: string
  /** bash, approved: the review's "needs the internet" and "run outside the sandbox" switches. */
  network?: boolean
  outsideSandbox?: boolean
  /** Per-hunk review of an approved write or edit. */
  hunks?: HunkDecision[]
}

/** The review's sandbox switches as given, kept only for an approved bash call and only when on. */
function sandboxSwitches(name: string, decision: Decision): Pick<Decision, 'network' | 'outsideSandbox'> {
  if (name !== 'bash' || decision.decision !== 'approved') return {}
  return {
    ...(decision.network ? { network: true } : {}),
    ...(decision.outsideSandbox ? { outsideSandbox: true } : {}),
  }
}

type ToolUseBlock = { type: 'tool_use'; id: string; name: string; input: unknown }
type ContentBlock = { type: 'text'; text: string } | ToolUseBlock | { type: string; [key: string]: unknown }
type MessageParam = { role: 'user' | 'assistant'; content: string | ContentBlock[] }
type ToolResultBlock = { type: 'tool_result'; tool_use_id: string; content: string; is_error?: boolean }

/** A tool call as the loop knows it between its block closing and its result. */
interface PendingCall {
  callId: string
  name: string
  index: number
  input: unknown
  label: string
  safe: boolean
  /** The result it gets without running (bad arguments, unknown tool, denied, cut off). */
  prepared?: ToolResult
  /** The prepared result is the call's own failure (counts for sibling skip); a rejection is not. */
  preparedIsFailure?: boolean
  /** Taken over from the log of an earlier process (a continue). */
  resumed?: boolean
  /** An approval was requested for it: it runs only once someone decided. */
  needsApproval?: boolean
  decision?: Decision
  /** Resolved by `decide()` when the user answers. */
  waiter?: (decision: Decision) => void
  /** What the user reviews (and, once approved, what the tool carries out: its plan, made once). */
  review?: Approved<unknown>
  /** Allowed by the user's "always allow" rule for this command: it runs as an approved one. */
  allowedByRule?: boolean
  /** Its approval events and its tool.started, as they are appended: a side effect waits for them. */
  logged?: Promise<unknown>[]
}

/** The most live output one event carries. */
const OUTPUT_EVENT_MAX_CHARS = 64 * 1024

const INTERRUPTED_TEXT =
  'Interrupted: Lanes stopped while this call was running, so whether it completed is unknown. Check the current state (read the file or list the folder) before issuing it again.'

/** Sent after a model answer that was cut off (a failed stream, a stop while it streamed), when the run goes on. */
export const BROKE_OFF_NOTE =
  'Your previous answer was cut off before it was complete. Continue from where it stopped.'

export class AgentSession {
  private writer: SessionWriter
  private readonly opts: AgentOptions
  private readonly snapshots: SnapshotStore
  private messages: MessageParam[]
  private turn: number
  private stopController = new AbortController()
  private readonly pending = new Map<string, PendingCall>()
  private state: SessionState
  private emitChain: Promise<void> = Promise.resolve()
  /** A run is being driven in this process (it may be paused, waiting for a review). */
  private driving = false
  /** The session's store of file contents (undo, rewind), opened at the first change. */
  private preimages: Promise<PreimageStore> | undefined
  /** Decisions given with a continue (the review screen answered after a restart), used as the calls resume. */
  private readonly preDecisions = new Map<string, Decision & { always?: boolean }>()

  private constructor(
    opts: AgentOptions,
    writer: SessionWriter,
    state: SessionState,
    messages: MessageParam[],
    private readonly pathRules: SensitivePathRules,
  ) {
    this.opts = opts
    this.writer = writer
    this.state = state
    this.messages = messages
    this.turn = state.turns.at(-1)?.turn ?? 0
    this.snapshots = new SnapshotStore({
      onRecord: (snap) =>
        void this.emit({ type: 'file.snapshot', path: snap.path, mtimeMs: snap.mtimeMs, hash: snap.hash }),
    })
    this.snapshots.restore(
      Object.entries(state.snapshots).map(([path, s]) => ({ path, mtimeMs: s.mtimeMs, hash: s.hash })),
    )
  }

  get sessionId(): string {
    return this.writer.sessionId
  }

  get current(): SessionState {
    return this.state
  }

  static async create(opts: AgentOptions, title?: string): Promise<AgentSession> {
    const sessionId = newSessionId()
    const pathRules = await loadSensitivePathRules(opts.workspace)
    const writer = await openSessionWriter(opts.sessionsDir, sessionId, { create: true })
    const session = new AgentSession(opts, writer, reduceEvents([]), [], pathRules)
    const settings: SessionSettings = {
      model: opts.modelName,
      scheduler: opts.scheduler,
      siblingSkip: opts.siblingSkip,
      demo: opts.demo,
      ...(opts.baseUrl ? { baseUrl: opts.baseUrl } : {}),
    }
    await session.emit({
      type: 'session.created',
      sessionId,
      workspace: opts.workspace,
      settings,
      ...(title ? { title } : {}),
    })
    await writer.sync()
    return session
  }

  /** Opens a session from its log to continue it; warnings name lines of the log that could not be read. */
  static async open(
    sessionId: string,
    opts: AgentOptions,
  ): Promise<{ session: AgentSession; warnings: string[] }> {
    const { events, warnings } = await readSession(sessionPaths(opts.sessionsDir, sessionId).log)
    const writer = await openSessionWriter(opts.sessionsDir, sessionId, { create: false })
    let preimages: Promise<PreimageStore> | undefined
    if (unfinishedRewind(events)) {
      // A rewind a crash cut short is finished (or rolled back) before anything else happens in the session.
      preimages = PreimageStore.open(preimagesDir(writer.outputDir))
      await recoverRewind(events, await preimages, {
        append: async (draft) => events.push(await writer.append(draft)),
        sync: () => writer.sync(),
      })
    }
    const state = reduceEvents(events)
    const { messages } = buildConversation(events)
    const pathRules = await loadSensitivePathRules(opts.workspace)
    const session = new AgentSession(opts, writer, state, messages as MessageParam[], pathRules)
    session.preimages = preimages
    return { session, warnings }
  }

  /** Starts a run with a new task (a first task, or a follow-up in a session whose last run ended). */
  async run(task: string): Promise<RunOutcome> {
    const runId = `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`
    await this.emit({ type: 'run.started', runId, task })
    this.pushUser([{ type: 'text', text: task }])
    return this.drive(runId)
  }

  /**
   * Continues a paused or interrupted run from the log: the last turn's calls that have no result yet are
   * decided and run (a call that was running when the process died is reported as interrupted, never re-run),
   * then the loop goes on.
   */
  async continue(
    decisions: readonly (Decision & { callId: string; always?: boolean })[] = [],
  ): Promise<RunOutcome> {
    for (const d of decisions) this.preDecisions.set(d.callId, d)
    const run = this.state.runs.at(-1)
    if (!run) return { status: 'failed', error: 'This session has no run to continue.', kind: 'internal' }
    if (run.status === 'finished') return { status: 'finished' }
    await this.emit({ type: 'run.resumed', runId: run.runId })
    // A rewind may have taken the latest turns back: the conversation goes on from the last one it kept.
    const last = this.state.turns.findLast((t) => t.rewoundBy === undefined)
    const unanswered = last
      ? last.callIds.map((id) => last.calls[id] as ToolCallState).filter((c) => c.finishedAt === undefined)
      : []
    // Calls without a result are finished first, whether or not the turn's assistant.message reached the log
    // (the app may have died between tool.queued and it): the API refuses a tool_use without its tool_result.
    if (last && unanswered.length > 0) {
      const outcome = await this.resumeTurn(
        run.runId,
        last.turn,
        last.callIds.map((id) => last.calls[id] as ToolCallState),
      )
      if (outcome) return outcome
    } else if (this.messages.at(-1)?.role === 'assistant') {
      // The model's last answer broke off (the stream failed, or Lanes stopped while it streamed) after some
      // text: it is in the conversation; say so, so the model goes on from there instead of the request ending
      // on its unfinished words.
      this.pushUser([{ type: 'text', text: BROKE_OFF_NOTE }])
    }
    return this.drive(run.runId)
  }

  /**
   * The user's answer for a call that asked for approval (interactive mode). It may come before the call
   * reaches its turn in the scheduler; it is recorded and used when it does.
   */
  async decide(
    callId: string,
    decision: Decision & { always?: boolean },
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    const call = this.pending.get(callId)
    if (!call || !call.needsApproval || call.decision) {
      return { ok: false, error: 'That call is not waiting for a decision.' }
    }
    call.decision = {
      decision: decision.decision,
      ...(decision.note?.trim() ? { note: decision.note.trim() } : {}),
      ...sandboxSwitches(call.name, decision),
      // Per-hunk decisions only mean something for an approved write or edit.
      ...(decision.decision === 'approved' && isPartial(decision.hunks)
        ? { hunks: [...decision.hunks] }
        : {}),
    }
    if (
      decision.always &&
      decision.decision === 'approved' &&
      call.name === 'bash' &&
      this.opts.alwaysAllow
    ) {
      const command = (call.input as { command: string }).command
      await this.opts.alwaysAllow.add(this.opts.workspace, { tool: 'bash', command })
    }
    await this.emit({
      type: 'approval.decided',
      callId,
      decision: call.decision.decision,
      by: 'user',
      ...(call.decision.note ? { note: call.decision.note } : {}),
      ...(decision.always ? { always: true } : {}),
      ...sandboxSwitches(call.name, call.decision),
      ...(call.decision.hunks ? { hunks: call.decision.hunks } : {}),
    })
    const waiter = call.waiter
    call.waiter = undefined
    waiter?.(call.decision)
    const runId = this.state.currentRunId
    if (this.state.status === 'paused' && runId && this.state.pendingApprovals.length === 0) {
      await this.emit({ type: 'run.resumed', runId })
    }
    return { ok: true }
  }

  /** What undoing a call, or rewinding to it, would change (nothing is touched). */
  async planRewind(request: RewindRequest): Promise<RewindPlan | Refusal> {
    const { events } = await readSession(this.writer.file)
    return planRewind(events, await this.preimageStore(), this.opts.workspace, request)
  }

  /**
   * Undoes a call or rewinds to it (issue 14), between runs only. Conflicting files are skipped unless listed
   * in `rewindConflicts`. A rewind of the conversation makes the next `continue` start from the call's turn.
   */
  async rewind(
    request: RewindRequest,
    rewindConflicts: readonly string[] = [],
  ): Promise<RewindApplied | Refusal> {
    if (this.driving)
      return {
        ok: false,
        reason: 'The agent is working or waiting for your review; stop the run first, then rewind.',
      }
    const plan = await this.planRewind(request)
    if (!plan.ok) return plan
    const store = await this.preimageStore()
    const applied = await applyRewind(
      plan,
      store,
      { append: (draft) => this.emit(draft), sync: () => this.writer.sync() },
      { rewindConflicts },
    )
    const { events } = await readSession(this.writer.file)
    this.snapshots.restore(snapshotsFrom(events))
    if (applied.ok && plan.turn !== undefined)
      this.messages = buildConversation(events).messages as MessageParam[]
    return applied
  }

  private preimageStore(): Promise<PreimageStore> {
    return (this.preimages ??= PreimageStore.open(preimagesDir(this.writer.outputDir)))
  }

  /** Calls asking for a decision right now. */
  waitingForDecision(): string[] {
    return [...this.pending.values()].filter((c) => c.needsApproval && !c.decision).map((c) => c.callId)
  }

  /** Stops the run: the model stream is aborted, running commands are killed, queued calls cancelled. */
  stop(): void {
    this.stopController.abort()
  }

  async close(): Promise<void> {
    await this.preimages?.then((store) => store.close()).catch(() => undefined)
    await this.writer.close()
  }

  private async drive(runId: string): Promise<RunOutcome> {
    this.stopController = new AbortController()
    let turnsThisRun = 0
    this.driving = true
    try {
      for (;;) {
        if (this.stopController.signal.aborted) return await this.endStopped(runId)
        if (turnsThisRun >= this.opts.maxTurns) {
          await this.emit({ type: 'run.finished', runId, reason: 'max_turns' })
          return { status: 'finished' }
        }
        const workspaceGone = await stat(this.opts.workspace).then(
          (s) => !s.isDirectory(),
          () => true,
        )
        if (workspaceGone)
          return await this.fail(
            runId,
            `The workspace folder ${this.opts.workspace} no longer exists.`,
            'workspace',
          )
        turnsThisRun++
        const outcome = await this.playTurn(runId)
        if (outcome !== 'continue') return outcome
      }
    } catch (e) {
      return await this.fail(
        runId,
        `Internal error: ${e instanceof Error ? e.message : String(e)}`,
        'internal',
      )
    } finally {
      this.driving = false
      await this.emitChain
      await this.writer.sync().catch(() => undefined)
    }
  }

  private async playTurn(runId: string): Promise<'continue' | RunOutcome> {
    const turn = ++this.turn
    await this.emit({ type: 'turn.started', runId, turn })
    const signal = this.stopController.signal
    const turnCtx = new TurnContext(this, turn)
    const scheduler = this.makeScheduler(turnCtx)

    // Tool blocks as they stream: dispatched at once in streaming mode when their arguments are clean JSON.
    // Arguments that need repair wait for the end of the response, when we know whether it was cut off.
    const dispatched = new Set<string>()
    let result: TurnResult | undefined
    let streamError: unknown
    try {
      result = await this.opts.model.streamTurn({
        // Dated by the session's creation, not today: the prompt stays byte-identical for the whole session, so
        // the prompt cache keeps hitting and thinking signatures stay valid across midnight.
        system: buildSystemPrompt({
          workspaceRoot: this.opts.workspace,
          date: new Date(this.state.session?.createdAt ?? Date.now()),
        }),
        tools: this.opts.registry.definitions(),
        messages: this.messages as never,
        signal,
        onRetry: (info) => {
          void this.emit({
            type: 'model.retrying',
            runId,
            turn,
            attempt: info.attempt,
            of: info.of,
            delayMs: info.delayMs,
            reason: info.reason,
            message: info.error.message,
          })
        },
        onEvent: (event) => {
          if (event.type === 'text') {
            void this.emit({ type: 'assistant.delta', turn, index: event.index, text: event.text })
          } else if (event.type === 'thinking') {
            void this.emit({ type: 'assistant.thinking', turn, index: event.index, block: event.block })
          } else if (event.type === 'block_stop' && event.id !== undefined && event.name !== undefined) {
            const rawInput = event.rawInput ?? ''
            if (this.opts.scheduler === 'streaming' && isCleanJson(rawInput)) {
              dispatched.add(event.id)
              turnCtx.dispatch(scheduler, {
                id: event.id,
                name: event.name,
                rawInput,
                index: event.index,
                cut: false,
              })
            }
          }
        },
      })
    } catch (e) {
      streamError = e
    }

    // The response is complete (or broken off): dispatch what waited, but never a call that was cut off.
    // After a broken stream nothing more is dispatched: that response is not one the model finished. A refused
    // answer dispatches nothing more, and what already was is abandoned: none of its calls may act.
    const toolUses = result?.toolUses ?? []
    const stopReason = result?.stopReason ?? null
    const plan = stopPlan(stopReason, toolUses.length > 0)
    const lastIndex = toolUses.at(-1)?.index
    for (const use of plan.kind === 'refused' ? [] : toolUses) {
      if (dispatched.has(use.id)) continue
      const cut = isCutCall(use, stopReason, lastIndex, isCleanJson)
      turnCtx.dispatch(scheduler, {
        id: use.id,
        name: use.name,
        rawInput: use.rawInput,
        index: use.index,
        cut,
      })
    }

    // The assistant message as it goes back to the model: tool_use inputs are the arguments as we parsed
    // them ({} when they could not be), so the conversation stays valid whatever the model sent. A response that
    // broke off is not recorded as a message: what it had sent (its text, the calls dispatched) is rebuilt from
    // the log, in memory now as after a restart, so continuing the run keeps it.
    // A call's input is the arguments as parsed (repaired when that was safe), else what the model wrote when
    // it is a JSON object (bad arguments, an unknown tool): the model sees its own call again, as far as the
    // API allows ({} for text that is not an object).
    const content: ContentBlock[] = result
      ? (result.content as ContentBlock[]).map((block) =>
          block.type === 'tool_use'
            ? {
                ...block,
                input: turnCtx.inputFor(
                  (block as ToolUseBlock).id,
                  (block as ToolUseBlock).input as Record<string, unknown>,
                ),
              }
            : block,
        )
      : await this.brokenOffContent(turn, turnCtx)
    if (result) {
      await this.emit({
        type: 'assistant.message',
        turn,
        message: { role: 'assistant', content },
        stopReason,
        ...(result?.usage ? { usage: result.usage } : {}),
      })
    }
    scheduler.close()

    if (plan.kind === 'refused' && result) {
      scheduler.abandon(REFUSED_CALL_TEXT)
      await scheduler.done()
      await this.emitChain
      // The refused turn is not sent back (the conversation goes on without it, as a restart rebuilds it).
      await this.emit({
        type: 'run.finished',
        runId,
        reason: 'refusal',
        ...(result.stopDetails ? { stopDetails: result.stopDetails } : {}),
        ...(result.usage ? { usage: result.usage } : {}),
      })
      await this.writer.sync()
      return { status: 'finished' }
    }

    const settled = await Promise.race([scheduler.done(), turnCtx.paused])
    if (settled === 'paused') {
      await this.emitChain
      await this.writer.sync()
      return { status: 'paused', callIds: turnCtx.waitingIds() }
    }
    if (content.length > 0) this.messages.push({ role: 'assistant', content })
    if (settled.length > 0) this.pushUser(settled.map(toolResultBlock))
    await this.emitChain
    await this.writer.sync()

    if (signal.aborted) return this.endStopped(runId)
    if (streamError !== undefined) {
      const { message, kind, retryAt } = describeModelError(streamError)
      return this.fail(runId, message, kind, retryAt)
    }
    // pause_turn: the content just pushed is sent back as it is and the model continues its turn.
    if (plan.kind === 'continue' || plan.kind === 'pause_turn') return 'continue'
    await this.emit({
      type: 'run.finished',
      runId,
      reason: plan.kind === 'end' ? plan.reason : 'end_turn',
      ...(plan.kind === 'end' && plan.stopReason ? { stopReason: plan.stopReason } : {}),
      ...(result?.usage ? { usage: result.usage } : {}),
    })
    return { status: 'finished' }
  }

  /** Finishes the interrupted last turn from the log; undefined when the loop may go on. */
  private async resumeTurn(
    runId: string,
    turn: number,
    calls: ToolCallState[],
  ): Promise<RunOutcome | undefined> {
    const turnCtx = new TurnContext(this, turn)
    // A failed unsafe call before the interruption still skips its later unsafe siblings.
    const failed = calls.find((c) => !c.safe && c.status === 'error')
    const scheduler = this.makeScheduler(
      turnCtx,
      failed ? { label: callLabel(failed.name, failed.input), callId: failed.callId } : undefined,
    )
    const results = new Map<string, ToolResultBlock>()
    for (const call of calls) {
      if (call.finishedAt !== undefined) {
        results.set(call.callId, {
          type: 'tool_result',
          tool_use_id: call.callId,
          content: call.output ?? '',
          ...(call.isError ? { is_error: true } : {}),
        })
      } else {
        turnCtx.resume(scheduler, call)
      }
    }
    scheduler.close()
    const settled = await Promise.race([scheduler.done(), turnCtx.paused])
    if (settled === 'paused') {
      await this.emitChain
      await this.writer.sync()
      return { status: 'paused', callIds: turnCtx.waitingIds() }
    }
    for (const outcome of settled) results.set(outcome.callId, toolResultBlock(outcome))
    this.pushUser(calls.map((c) => results.get(c.callId) as ToolResultBlock))
    await this.emitChain
    await this.writer.sync()
    if (this.stopController.signal.aborted) return this.endStopped(runId)
    return undefined
  }

  private makeScheduler(
    turnCtx: TurnContext,
    priorFailure?: { label: string; callId: string },
  ): TurnScheduler {
    return new TurnScheduler({
      mode: this.opts.scheduler,
      concurrency: this.opts.concurrency,
      siblingSkip: this.opts.siblingSkip,
      signal: this.stopController.signal,
      ...(priorFailure ? { priorFailure } : {}),
      hooks: {
        onQueued: (spec, lane) => turnCtx.queued(spec, lane),
        onStarted: (spec) => turnCtx.started(spec.callId),
        onSettled: (spec, outcome) => turnCtx.settled(spec.callId, outcome),
        onBlocked: () => turnCtx.blocked(),
      },
    })
  }

  /** What a response that broke off had sent, as the conversation rebuilt from the log has it. */
  private async brokenOffContent(turn: number, turnCtx: TurnContext): Promise<ContentBlock[]> {
    await this.emitChain
    const state = this.state.turns.findLast((t) => t.turn === turn)
    return state ? (turnContent(state) as ContentBlock[]) : turnCtx.dispatchedBlocks()
  }

  /** Adds a user message, merging with a trailing user message (the API wants roles to alternate). */
  private pushUser(content: ContentBlock[]): void {
    const last = this.messages.at(-1)
    if (last && last.role === 'user') {
      const prior =
        typeof last.content === 'string'
          ? [{ type: 'text', text: last.content } as ContentBlock]
          : last.content
      last.content = [...prior, ...content]
    } else {
      this.messages.push({ role: 'user', content })
    }
  }

  private async endStopped(runId: string): Promise<RunOutcome> {
    await this.emit({ type: 'run.stopped', runId })
    return { status: 'stopped' }
  }

  private async fail(
    runId: string,
    error: string,
    kind: RunFailureKind,
    retryAt?: number,
  ): Promise<RunOutcome> {
    await this.emit({ type: 'run.failed', runId, error, kind, ...(retryAt !== undefined ? { retryAt } : {}) })
    return { status: 'failed', error, kind }
  }

  /**
   * Appends to the log, then tells the listeners: nothing is shown that is not in the log. Events are
   * chained so they reach the log, the state and the listeners in the order they were emitted.
   */
  emit(draft: Draft): Promise<SessionEvent> {
    // The time is taken now, not when the write queue gets to it: the timeline shows when things happened.
    // The line goes to the writer at once (it numbers lines in call order and writes everything queued in one
    // write), so waiting for an event costs one write, not one write per event still queued before it.
    const appended = this.writer.append({ at: Date.now(), ...draft } as never) as Promise<SessionEvent>
    appended.catch(() => undefined) // handled below, in order; not an unhandled rejection meanwhile
    const next = this.emitChain.then(async () => {
      const event = await appended
      this.state = reduceEvent(this.state, event)
      this.opts.onEvent?.(event)
      return event
    })
    this.emitChain = next.then(
      () => undefined,
      () => undefined,
    )
    return next
  }

  /** @internal The context one call runs with; `flush` sends its last live output before its result. */
  toolContext(callId: string, signal: AbortSignal): { ctx: ToolContext; flush: () => void } {
    let buffer = ''
    let timer: NodeJS.Timeout | null = null
    const flush = (): void => {
      if (timer) clearTimeout(timer)
      timer = null
      if (buffer.length === 0) return
      const chunk = buffer
      buffer = ''
      void this.emit({ type: 'tool.output', callId, chunk })
    }
    const ctx: ToolContext = {
      workspace: this.opts.workspace,
      pathRules: this.pathRules,
      signal,
      snapshots: this.snapshots,
      outputDir: this.writer.outputDir,
      callId,
      bashTimeoutSec: this.opts.bashTimeoutSec,
      changes: changeKeeper(
        () => this.preimageStore(),
        callId,
        (draft) => this.emit(draft),
      ),
      onProgress: (chunk) => {
        // At most one output event per call every 100 ms, however chatty the command; the full output is in
        // the session folder, so what the live view drops in a flood is only the middle of a burst.
        buffer += chunk
        if (buffer.length > OUTPUT_EVENT_MAX_CHARS) buffer = buffer.slice(-OUTPUT_EVENT_MAX_CHARS)
        timer ??= setTimeout(flush, 100)
      },
    }
    return { ctx, flush }
  }

  /** @internal */
  get options(): AgentOptions {
    return this.opts
  }

  /** @internal A decision the user gave before this process knew the call. */
  takePreDecision(callId: string): (Decision & { always?: boolean }) | undefined {
    const d = this.preDecisions.get(callId)
    this.preDecisions.delete(callId)
    return d
  }

  /** @internal */
  registerPending(call: PendingCall): void {
    this.pending.set(call.callId, call)
  }

  /** @internal */
  get rules(): SensitivePathRules {
    return this.pathRules
  }

  /** @internal */
  get stopSignal(): AbortSignal {
    return this.stopController.signal
  }
}

interface ToolUseSeen {
  id: string
  name: string
  rawInput: string
  index: number
  /** Never closed, or cut by a token limit: never executed (stop-reasons.ts `isCutCall`). */
  cut: false | 'unclosed' | 'max_tokens' | 'model_context_window_exceeded'
}

/** One turn's bookkeeping: preparing calls, their gates, the pause. */
class TurnContext {
  private readonly calls = new Map<string, PendingCall>()
  /** Content a write of this turn will leave, by path, so later previews of the same file build on it. */
  private readonly overlay = new Map<string, string | null>()
  private readonly flushers = new Map<string, () => void>()
  private resolvePause!: (value: 'paused') => void
  readonly paused = new Promise<'paused'>((resolve) => (this.resolvePause = resolve))
  private preparing: Promise<void> = Promise.resolve()
  /** When each safe call of the turn settles: a write's preview waits for the reads issued before it. */
  private readonly safeDone: { callId: string; done: Promise<void>; resolve: () => void }[] = []

  constructor(
    private readonly session: AgentSession,
    private readonly turn: number,
  ) {}

  inputFor(callId: string, written: Record<string, unknown> = {}): Record<string, unknown> {
    const input = this.calls.get(callId)?.input
    return typeof input === 'object' && input !== null && !Array.isArray(input)
      ? (input as Record<string, unknown>)
      : written
  }

  /** The calls that were dispatched, as tool_use blocks (a response broken off keeps only those). */
  dispatchedBlocks(): ContentBlock[] {
    return [...this.calls.values()].map((c) => ({
      type: 'tool_use',
      id: c.callId,
      name: c.name,
      input: this.inputFor(c.callId),
    }))
  }

  waitingIds(): string[] {
    return [...this.calls.values()].filter((c) => c.waiter !== undefined).map((c) => c.callId)
  }

  dispatch(scheduler: TurnScheduler, use: ToolUseSeen): void {
    const { options } = this.session
    const tool = options.registry.get(use.name)
    const call: PendingCall = {
      callId: use.id,
      name: use.name,
      index: use.index,
      input: null,
      label: `${use.name}()`,
      safe: tool?.concurrencySafe ?? false,
    }
    let rawForLog: string | undefined
    if (use.cut) {
      call.prepared = { output: cutCallText(use.name, use.cut), isError: true }
      rawForLog = use.rawInput
    } else if (!tool) {
      call.prepared = {
        output: `Unknown tool "${use.name}". The available tools are: ${options.registry.names().join(', ')}.`,
        isError: true,
      }
    } else {
      const parsed = parseToolArgs(use.rawInput, tool.input)
      if (!parsed.ok) {
        call.prepared = { output: parsed.error, isError: true }
        rawForLog = use.rawInput
      } else {
        call.input = parsed.value
        if (parsed.repaired) rawForLog = use.rawInput
      }
    }
    call.label = callLabel(use.name, call.input)
    this.add(scheduler, call, rawForLog)
  }

  /** A call of the last turn that the log shows without a result. */
  resume(scheduler: TurnScheduler, state: ToolCallState): void {
    const call: PendingCall = {
      callId: state.callId,
      name: state.name,
      index: state.index,
      input: state.input,
      label: callLabel(state.name, state.input),
      safe: state.safe,
    }
    if (state.status === 'running') {
      call.prepared = { output: INTERRUPTED_TEXT, isError: true }
    } else if (state.input === null) {
      call.prepared = { output: 'Not executed: its arguments could not be parsed.', isError: true }
    } else if (state.approval?.preview) {
      call.needsApproval = true
      if (state.approval.decision) {
        call.decision = {
          decision: state.approval.decision,
          ...(state.approval.note ? { note: state.approval.note } : {}),
          ...sandboxSwitches(call.name, state.approval as Decision),
          ...(state.approval.hunks ? { hunks: state.approval.hunks } : {}),
        }
      }
      call.review = { preview: state.approval.preview }
    }
    call.resumed = true
    this.add(scheduler, call, undefined, state.approval?.preview !== undefined)
  }

  private add(
    scheduler: TurnScheduler,
    call: PendingCall,
    rawForLog: string | undefined,
    asked = false,
  ): void {
    this.calls.set(call.callId, call)
    if (call.safe) {
      let resolve!: () => void
      const done = new Promise<void>((r) => (resolve = r))
      this.safeDone.push({ callId: call.callId, done, resolve })
    }
    this.session.registerPending(call)
    const ready = asked ? this.decideWithoutAsking(call) : this.prepare(call)
    scheduler.add(this.spec(call, ready, rawForLog))
  }

  /**
   * Decides the policy and builds the approval preview as soon as the call's block closes, so every call of
   * the turn that needs the user is on the review screen together. Previews are built in call order: a write's
   * preview sees the turn's earlier writes to the same file.
   */
  private prepare(call: PendingCall): Promise<void> {
    if (call.prepared) return Promise.resolve()
    const { options } = this.session
    const earlierSafe = this.safeDone.filter((d) => d.callId !== call.callId).map((d) => d.done)
    // The policy is decided at once, so an allowed call (a read) starts without waiting for anything;
    // previews are built one after another in call order, so a write's preview sees the turn's earlier writes.
    const verdictReady = (async () => {
      // Read once per session, then a resolved promise: an allowed call still starts at once.
      const rules = options.alwaysAllow ? await options.alwaysAllow.rules(options.workspace) : []
      return decidePolicy(options.registry.get(call.name), call.input, {
        workspace: options.workspace,
        pathRules: this.session.rules,
        alwaysAllow: rules,
        autoApproveEdits: options.autoApproveEdits,
        sandbox: sandboxSupport().available,
      })
    })()
    const link = this.preparing.then(async () => {
      const verdict = await verdictReady
      if (verdict.kind !== 'ask') return
      // The preview is the diff against the file as the turn's earlier reads leave it (and a write needs
      // its read on record), so it waits for the safe calls issued before it.
      await Promise.all(earlierSafe)
      const { ctx } = this.session.toolContext(call.callId, this.session.stopSignal)
      const target = (call.input as { path?: unknown }).path
      const base =
        typeof target === 'string' && this.overlay.has(target)
          ? { path: target, content: this.overlay.get(target) ?? null }
          : undefined
      const tool = options.registry.get(call.name)
      if (!tool) return
      const preview = await buildPreview(tool, call.input, ctx, {
        protected: verdict.protected,
        ...(base ? { base } : {}),
      })
      if (!preview.ok) {
        call.prepared = { output: preview.error, isError: true }
        return
      }
      if (preview.after !== undefined && typeof target === 'string') this.overlay.set(target, preview.after)
      call.review = {
        preview: preview.preview,
        ...(preview.plan !== undefined ? { plan: preview.plan } : {}),
      }
      call.needsApproval = true
      // Not awaited: the log keeps the order, and the call waits for these lines before it runs (`spec`).
      ;(call.logged ??= []).push(
        this.session.emit({ type: 'approval.requested', callId: call.callId, preview: preview.preview }),
      )
      await this.decideWithoutAsking(call)
    })
    this.preparing = link.catch(() => undefined)
    return verdictReady.then((verdict) => {
      if (verdict.kind === 'ask') return link
      if (verdict.kind === 'deny') call.prepared = { output: verdict.reason, isError: true }
      if (verdict.kind === 'allow' && verdict.byRule) call.allowedByRule = true
    })
  }

  /**
   * Decisions that need no one to wait for: one the user already gave (before a restart), or a headless
   * run's --approve all (approves) / none (rejects).
   */
  private async decideWithoutAsking(call: PendingCall): Promise<void> {
    if (call.decision) return
    const given = this.session.takePreDecision(call.callId)
    if (given) {
      await this.session.decide(call.callId, given)
      return
    }
    const mode = this.session.options.approvals
    if (mode !== 'all' && mode !== 'none') return
    call.decision = { decision: mode === 'all' ? 'approved' : 'rejected' }
    ;(call.logged ??= []).push(
      this.session.emit({
        type: 'approval.decided',
        callId: call.callId,
        decision: call.decision.decision,
        by: 'cli',
      }),
    )
  }

  private spec(
    call: PendingCall,
    ready: Promise<void>,
    rawForLog: string | undefined,
  ): CallSpec & { rawForLog?: string } {
    const session = this.session
    return {
      callId: call.callId,
      safe: call.safe,
      label: call.label,
      rawForLog,
      gate: async (waiting): Promise<GateVerdict> => {
        await ready
        // Bad arguments, a denied command, an unknown tool: the call itself failed, so its siblings are skipped.
        // A rejection is the user's choice, and does not skip them.
        if (call.prepared) return { run: false, result: call.prepared, failed: true }
        if (call.needsApproval && !call.decision) {
          call.decision = await new Promise<Decision>((resolve) => {
            call.waiter = resolve
            waiting()
          })
        }
        if (call.decision?.decision === 'rejected') {
          const note = call.decision.note
          return {
            run: false,
            result: {
              output: note
                ? `Rejected by the user, who wrote: ${note}`
                : 'Rejected by the user: this call was not run. Do not retry it unchanged; ask the user or take another approach.',
              isError: true,
              metadata: { rejected: true },
            },
            failed: false,
          }
        }
        return { run: true }
      },
      execute: async (signal) => {
        // Write-ahead: a side effect starts only once the log holds its approval and its start (one write for
        // all of them), so a crash can never leave a command run or a file written that the log does not show
        // as started, and a continue never runs it twice. A read runs at once; repeating it is harmless.
        if (!call.safe || call.needsApproval) await Promise.all(call.logged ?? [])
        const tool = session.options.registry.get(call.name)
        if (!tool) return { output: `Unknown tool "${call.name}".`, isError: true }
        const { ctx, flush } = session.toolContext(call.callId, signal)
        this.flushers.set(call.callId, flush)
        const hunks = call.decision?.hunks
        if (call.needsApproval && isPartial(hunks)) {
          // Approved in part: the whole change must still be the one reviewed, then only its accepted hunks land.
          const check = await buildPreview(tool, call.input, ctx, { protected: false })
          const reviewed = call.review?.preview
          const approvedAfter = reviewed?.kind === 'write' ? reviewed.after : undefined
          if (
            !check.ok ||
            check.preview.kind !== 'write' ||
            (approvedAfter !== undefined && check.after !== approvedAfter)
          )
            return { output: NOT_APPLIED_TEXT, isError: true }
          return executeReviewed(check.preview, hunks, ctx)
        }
        // A person approved it (now, or earlier with "always allow"): bash runs in the writable sandbox, or
        // as the review's switches say. Without that, the read-only sandbox.
        if (call.decision?.decision === 'approved' || call.allowedByRule)
          ctx.approval = {
            network: call.decision?.network === true,
            outsideSandbox: call.decision?.outsideSandbox === true,
          }
        // Only what the user saw may land: the tool carries out the plan its preview made.
        return tool.execute(call.input, ctx, call.needsApproval ? call.review : undefined)
      },
    }
  }

  queued(spec: CallSpec & { rawForLog?: string }, lane: Lane): void {
    const call = this.calls.get(spec.callId) as PendingCall
    // A call resumed from the log was queued by the process that received it.
    if (call.resumed) return
    // The tool's own title, from arguments that parsed (a call that failed to parse has none to show).
    const tool = this.session.options.registry.get(call.name)
    const title = call.input !== null ? tool?.title?.(call.input) : undefined
    void this.session.emit({
      type: 'tool.queued',
      callId: call.callId,
      turn: this.turn,
      index: call.index,
      name: call.name,
      input: call.input,
      ...(spec.rawForLog !== undefined ? { rawInput: spec.rawForLog } : {}),
      safe: call.safe,
      lane,
      ...(title !== undefined ? { title } : {}),
    })
  }

  started(callId: string): void {
    const call = this.calls.get(callId) as PendingCall
    ;(call.logged ??= []).push(this.session.emit({ type: 'tool.started', callId }))
  }

  /** The scheduler can go no further without a person (it calls this once the response is complete). */
  blocked(): void {
    const waiting = this.waitingIds()
    if (waiting.length === 0) return
    const runId = this.session.current.currentRunId ?? ''
    void this.session.emit({ type: 'run.paused', runId, reason: 'approval', callIds: waiting }).then(() => {
      if (this.session.options.approvals === 'pause') this.resolvePause('paused')
    })
  }

  settled(callId: string, outcome: CallOutcome): void {
    this.flushers.get(callId)?.()
    this.safeDone.find((d) => d.callId === callId)?.resolve()
    const name = this.calls.get(callId)?.name ?? ''
    switch (outcome.kind) {
      case 'finished': {
        const output = formatForModel(
          outcome.result,
          name === 'bash' && outcome.ran ? { elapsedMs: outcome.durationMs } : {},
        )
        outcome.result = { ...outcome.result, output }
        void this.session.emit({
          type: 'tool.finished',
          callId,
          isError: outcome.result.isError,
          output,
          durationMs: outcome.durationMs,
          ...(outcome.result.metadata ? { metadata: outcome.result.metadata } : {}),
          ...(outcome.result.title ? { title: outcome.result.title } : {}),
        })
        break
      }
      case 'skipped':
        outcome.result = { ...outcome.result, output: formatForModel(outcome.result) }
        void this.session.emit({
          type: 'tool.skipped',
          callId,
          causeCallId: outcome.causeCallId,
          output: outcome.result.output,
        })
        break
      case 'cancelled':
        outcome.result = { ...outcome.result, output: formatForModel(outcome.result) }
        void this.session.emit({
          type: 'tool.cancelled',
          callId,
          output: outcome.result.output,
          durationMs: outcome.durationMs,
        })
        break
    }
  }
}

function toolResultBlock(outcome: CallOutcome): ToolResultBlock {
  return {
    type: 'tool_result',
    tool_use_id: outcome.callId,
    content: outcome.result.output,
    ...(outcome.result.isError ? { is_error: true } : {}),
  }
}

function isCleanJson(raw: string): boolean {
  try {
    const value = JSON.parse(raw) as unknown
    return typeof value === 'object' && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}

function describeModelError(e: unknown): { message: string; kind: RunFailureKind; retryAt?: number } {
  const err = e as { kind?: string; message?: string; retryAt?: number }
  const message = err?.message ?? String(e)
  const retryAt = typeof err?.retryAt === 'number' ? { retryAt: err.retryAt } : {}
  switch (err?.kind) {
    case 'auth':
      return { message, kind: 'auth', ...retryAt }
    case 'network':
      return { message, kind: 'network', ...retryAt }
    default:
      return { message, kind: 'model', ...retryAt }
  }
}
