import { stat } from 'node:fs/promises'
import type {
  HeldDecision,
  HeldFile,
  HeldFolderDecision,
  RunFailureKind,
  SessionEvent,
  SessionEventDraft,
  SessionRule,
  SessionSettings,
} from '../../shared/events'
import { reduceEvent, reduceEvents, type SessionState } from '../../shared/reducer'
import type { ToolCallState } from '../../shared/tool-call'
import { buildConversation, snapshotsFrom, snapshotsOf } from '../session/conversation'
import { openSessionWriter, readSession, sessionPaths, type SessionWriter } from '../session/log'
import { recoverLanding, unfinishedLanding } from '../session/landing-recovery'
import { changeKeeper, identitiesTaken, preimagesDir, PreimageStore } from '../session/preimages'
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
import { clearTrash, trashRoot } from '../session/rewind-trash'
import { newSessionId } from '../session/store'
import { redactDeep, redactPreviewEvent } from '../secrets/redact-deep'
import { RedactTextStream } from '../secrets/redactor'
import { workspaceSecrets, type WorkspaceSecrets } from '../secrets/workspace-secrets'
import { loadSensitivePathRules, rulesInBackground, type LoadingPathRules } from '../tools/sensitive-paths'
import { nameInWorkspace } from '../tools/workspace'
import { SnapshotStore } from '../tools/snapshots'
import type { HeldVerdict } from '../tools/bash/capture/held-review'
import type { CaptureHost } from '../tools/bash/capture/land'
import { heldDiff, heldPage } from '../tools/bash/capture/held-pages'
import { layerDir } from '../tools/bash/capture/overlay'
import type { ToolContext } from '../tools/tool'
import { fullDiffLines, type ChangePlan } from '../tools/file-change'
import type { AgentOptions, RunOutcome } from './agent-options'
import type { ApprovalGate, PendingCall, UserDecision } from './approval-gate'
import { compactConversation, FULL_MESSAGE, needsCompaction, type CompactionHost } from './compaction'
import { foldersOf, readInstructions, type Redact } from './project-instructions'
import { playTurn, resumeTurn, type ContentBlock, type MessageParam, type TurnLoopHost } from './turn'

export type { AgentOptions, ApprovalMode, RunOutcome } from './agent-options'

/**
 * The agent loop (DESIGN 1): stream a model turn, turn every tool_use into a call, gate it, schedule it, send
 * the results back, until the model ends its turn, the user stops, or the turn limit is hit. Everything it
 * does is an event appended to the session log first and shown second, so a crash at any point leaves a log
 * that a new process can continue from. One turn is turn.ts; its calls, turn-calls.ts; their approval,
 * approval-gate.ts. The session is what they see through `TurnLoopHost`.
 */

/** What a reply for a command's held review carries: decisions per file and per folder group. */
type HeldReply = { files?: readonly HeldDecision[]; folders?: readonly HeldFolderDecision[] }

const NO_HELD_REVIEW = 'That command has no changes waiting for a review.'

/** The most live output one event carries. */
const OUTPUT_EVENT_MAX_CHARS = 64 * 1024

/** Sent after a model answer that was cut off (a failed stream, a stop while it streamed), when the run goes on. */
export const BROKE_OFF_NOTE =
  'Your previous answer was cut off before it was complete. Continue from where it stopped.'

/** The file tools whose paths bring a folder's own instructions in. */
const PATH_TOOLS = new Set(['read_file', 'write_file', 'edit_file'])

export class AgentSession implements TurnLoopHost, CompactionHost {
  private writer: SessionWriter
  private readonly opts: AgentOptions
  private readonly snapshots: SnapshotStore
  private messages: MessageParam[]
  private turn: number
  private stopController = new AbortController()
  private readonly pending = new Map<string, { call: PendingCall; gate: ApprovalGate }>()
  /** Commands whose held changes wait for the user's per-file review: how to hand them the decisions. */
  private readonly heldReviews = new Map<string, (decision: HeldReply & { decision: string }) => void>()
  private state: SessionState
  private emitChain: Promise<void> = Promise.resolve()
  /** A run is being driven in this process (it may be paused, waiting for a review). */
  private driving = false
  /** The session's store of file contents (undo, rewind), opened at the first change. */
  private preimages: Promise<PreimageStore> | undefined
  /** Decisions given with a continue (the review screen answered after a restart), used as the calls resume. */
  private readonly preDecisions = new Map<string, UserDecision & HeldReply>()
  /** The workspace's secrets, whose first scan starts in the background with the session, after its path rules. */
  readonly secrets: WorkspaceSecrets
  /** The workspace's sensitive-path rules (DESIGN 2.3), loading in the background from the session's start. */
  readonly pathRules: LoadingPathRules
  /**
   * The root's project instructions as sent (the latest root `instructions.loaded`): read once and kept
   * byte-identical until a compaction re-reads them, also across a restart, so the prompt cache keeps hitting.
   */
  private rootInstructions: string | undefined
  /** Folders whose own instructions were looked for (nested ones are told once). */
  private readonly instructionFolders = new Set<string>()

  private constructor(
    opts: AgentOptions,
    writer: SessionWriter,
    state: SessionState,
    messages: MessageParam[],
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
    this.snapshots.restore(snapshotsOf(state))
    this.secrets = workspaceSecrets(opts.workspace)
    const secrets = this.secrets
    // Git's own answer joins the object reader's once the scan has it: an index or commit the reader does not
    // see (a split index, a worktree's index) still makes git commands that print or search contents ask.
    this.pathRules = rulesInBackground((opts.loadPathRules ?? loadSensitivePathRules)(opts.workspace), () =>
      secrets.gitHoldsSecretFiles(),
    )
    this.secrets.addAppSecret(process.env.ANTHROPIC_API_KEY, 'the API key')
    for (const { value, source } of opts.appSecrets ?? []) this.secrets.addAppSecret(value, source)
    for (const folder of [opts.sessionsDir, ...(opts.ownData ?? [])]) this.secrets.addOwnFolder(folder)
    // The secrets scan follows the rules' load (unless something needs it sooner): the two are the session's
    // heaviest start-up work, and side by side on the one thread each would take about as long as both together,
    // against budgets counted in wall time (git/history.ts, workspace-secrets.ts).
    void this.pathRules.ready().then(() => this.secrets.start())
  }

  get sessionId(): string {
    return this.writer.sessionId
  }

  get current(): SessionState {
    return this.state
  }

  static async create(opts: AgentOptions, title?: string): Promise<AgentSession> {
    const sessionId = newSessionId()
    const writer = await openSessionWriter(opts.sessionsDir, sessionId, { create: true })
    const session = new AgentSession(opts, writer, reduceEvents([]), [])
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
    if (unfinishedLanding(events)) {
      // A command's landing a crash cut short is rolled back first: the workspace is as before that command.
      preimages = PreimageStore.open(preimagesDir(writer.outputDir))
      await recoverLanding(
        events,
        await preimages,
        { append: async (draft) => events.push(await writer.append(draft)), sync: () => writer.sync() },
        writer.outputDir,
      )
    }
    if (unfinishedRewind(events)) {
      // A rewind a crash cut short is finished (or rolled back) before anything else happens in the session.
      preimages ??= PreimageStore.open(preimagesDir(writer.outputDir))
      await recoverRewind(events, await preimages, {
        append: async (draft) => events.push(await writer.append(draft)),
        sync: () => writer.sync(),
      })
    }
    // What a rewind's trash deletion left when the app stopped (a rewind cut short was recovered above).
    clearTrash(trashRoot(preimagesDir(writer.outputDir)))
    const state = reduceEvents(events)
    const { messages } = buildConversation(events)
    const session = new AgentSession(opts, writer, state, messages)
    session.preimages = preimages
    for (const event of events) {
      if (event.type !== 'instructions.loaded') continue
      if (event.scope === 'root') session.rootInstructions = event.text
      else if (event.folder !== undefined) session.instructionFolders.add(event.folder)
    }
    return { session, warnings }
  }

  /** Starts a run with a new task (a first task, or a follow-up in a session whose last run ended). */
  async run(task: string): Promise<RunOutcome> {
    // Secret files edited since the last run are read again (incremental; the first scan may still be going, or
    // wait for the rules' load to start).
    void this.pathRules
      .ready()
      .then(() => this.secrets.ready())
      .then(() => this.secrets.refresh())
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
    decisions: readonly (UserDecision & HeldReply & { callId: string })[] = [],
  ): Promise<RunOutcome> {
    for (const d of decisions) this.preDecisions.set(d.callId, d)
    const run = this.state.runs.at(-1)
    if (!run) return { status: 'failed', error: 'This session has no run to continue.', kind: 'internal' }
    if (run.status === 'finished') return { status: 'finished' }
    await this.emit({ type: 'run.resumed', runId: run.runId })
    if (run.status === 'failed' && run.errorKind === 'context') {
      // The run ended because the conversation did not fit even compacted: this Continue compacts harder.
      this.stopController = new AbortController()
      const outcome = await compactConversation(this, run.runId, 'continue', true)
      if (outcome) return outcome
    }
    // A rewind may have taken the latest turns back: the conversation goes on from the last one it kept.
    const last = this.state.turns.findLast((t) => t.rewoundBy === undefined)
    const unanswered = last
      ? last.callIds.map((id) => last.calls[id] as ToolCallState).filter((c) => c.finishedAt === undefined)
      : []
    // Calls without a result are finished first, whether or not the turn's assistant.message reached the log
    // (the app may have died between tool.queued and it): the API refuses a tool_use without its tool_result.
    if (last && unanswered.length > 0) {
      const outcome = await resumeTurn(
        this,
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
    decision: UserDecision & HeldReply,
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    const held = this.heldReviews.get(callId)
    if (held) {
      held(decision)
      await this.resumeIfDecided()
      return { ok: true }
    }
    if (decision.files !== undefined || decision.folders !== undefined)
      return { ok: false, error: 'That command has no changes waiting for a review.' }
    const waiting = this.pending.get(callId)
    if (!waiting) return { ok: false, error: 'That call is not waiting for a decision.' }
    const answered = await waiting.gate.answer(waiting.call, decision)
    if (!answered.ok) return answered
    await this.resumeIfDecided()
    return { ok: true }
  }

  /** The last full diff paged through ("open in full"): one change at a time is looked at. */
  private fullDiffCache: { callId: string; lines: string[] } | null = null

  /** A page of the full diff of a write or edit waiting for review (or decided and not run yet). */
  fullDiff(
    callId: string,
    from: number,
    count: number,
  ): { ok: true; total: number; lines: string[] } | { ok: false; error: string } {
    let lines = this.fullDiffCache?.callId === callId ? this.fullDiffCache.lines : undefined
    if (!lines) {
      const state = this.pending.get(callId)?.call.state
      const plan =
        state?.kind === 'asking' || state?.kind === 'decided'
          ? (state.review.plan as ChangePlan | undefined)
          : undefined
      if (!plan?.ok)
        return {
          ok: false,
          error:
            state === undefined
              ? 'That change is no longer waiting for review.'
              : 'The full change is not at hand: Lanes was restarted since it was proposed. Judge it by its summary, or reject it and ask the agent again.',
        }
      lines = fullDiffLines(plan)
      this.fullDiffCache = { callId, lines }
    }
    return { ok: true, total: lines.length, lines: lines.slice(from, from + count) }
  }

  /** The run goes on once nothing waits for the user any more. */
  private async resumeIfDecided(): Promise<void> {
    const runId = this.state.currentRunId
    if (
      this.state.status === 'paused' &&
      runId &&
      this.state.pendingApprovals.length === 0 &&
      this.heldReviews.size === 0
    )
      await this.emit({ type: 'run.resumed', runId })
  }

  /**
   * A command's held changes wait for the user's review, file by file (issue 20): the run is paused until the
   * decisions come (`decide` with `files`), or the run is stopped (then none of them lands).
   */
  private waitForHeldReview(callId: string, signal: AbortSignal): Promise<HeldVerdict> {
    return new Promise<HeldVerdict>((resolve) => {
      const done = (verdict: HeldVerdict): void => {
        this.heldReviews.delete(callId)
        signal.removeEventListener('abort', stopped)
        resolve(verdict)
      }
      const stopped = (): void => done({ by: 'stopped', files: [] })
      // A rejection rejects every held change; an approval lands what its files and folders accept.
      const decided = (reply: HeldReply & { decision: string }): void =>
        done(
          reply.decision === 'approved'
            ? { by: 'user', files: reply.files ?? [], folders: reply.folders ?? [] }
            : { by: 'user', files: [] },
        )
      if (signal.aborted) return stopped()
      // Decided before this process asked (the review was answered after a restart, with the continue).
      const given = this.takePreDecision(callId)
      if (given) return decided(given)
      signal.addEventListener('abort', stopped, { once: true })
      this.heldReviews.set(callId, decided)
      const runId = this.state.currentRunId
      if (runId) void this.emit({ type: 'run.paused', runId, reason: 'approval', callIds: [callId] })
    })
  }

  /**
   * Nothing runs in this session but reviews of held changes waiting for the user: the app may quit without
   * stopping it, and the reviews are asked again when the session is continued (the layers keep them).
   */
  waitsOnlyForHeldReviews(): boolean {
    return this.heldReviews.size > 0 && this.state.pendingApprovals.length === 0
  }

  /** This command's held changes wait for the user's review in this process. */
  waitsForHeldReview(callId: string): boolean {
    return this.heldReviews.has(callId)
  }

  /** Makes what is logged durable, leaving every run where it stands (the app is quitting; see above). */
  async suspend(): Promise<void> {
    await this.emitChain
    await this.writer.sync()
  }

  /** A page of the held changes of one folder group of a command's waiting review (issue 20). */
  async heldFiles(
    callId: string,
    folder: string,
    offset: number,
    limit: number,
  ): Promise<{ ok: true; total: number; files: HeldFile[] } | { ok: false; error: string }> {
    if (!this.heldReviews.has(callId)) return { ok: false, error: NO_HELD_REVIEW }
    const page = await heldPage(layerDir(this.writer.outputDir, callId), folder, offset, limit)
    if (!page) return { ok: false, error: NO_HELD_REVIEW }
    return { ok: true, ...page }
  }

  /** One held change of a waiting review with its diff, the secret values in it hidden as in the log. */
  async heldDiff(
    callId: string,
    relPath: string,
  ): Promise<{ ok: true; file: HeldFile } | { ok: false; error: string }> {
    if (!this.heldReviews.has(callId)) return { ok: false, error: NO_HELD_REVIEW }
    const file = await heldDiff(
      layerDir(this.writer.outputDir, callId),
      this.opts.workspace,
      relPath,
      (rel, text) => this.secrets.learnHeldSecretFile(rel, text),
    )
    if (!file) return { ok: false, error: `${relPath} is not among the command’s held changes.` }
    return { ok: true, file: redactDeep(this.secrets.redactor(), file) }
  }

  /** The session's "allow for the rest of this session" rules in force, as its log has them. */
  sessionRules(): SessionRule[] {
    return this.state.sessionRules.map((g) => g.rule)
  }

  /**
   * Revokes a session rule (the session's settings): the calls it covered ask again from the next one decided.
   * False when no such rule is in force.
   */
  async revokeRule(ruleId: string): Promise<boolean> {
    await this.emitChain
    if (!this.state.sessionRules.some((g) => g.ruleId === ruleId)) return false
    await this.emit({ type: 'rule.revoked', ruleId })
    await this.writer.sync()
    return true
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
    // The files put back lose their snapshots, and the conversation carries what the model must be told (or
    // goes back): both exactly as a restart rebuilds them from the log.
    this.snapshots.restore(snapshotsFrom(events))
    if (applied.ok) this.messages = buildConversation(events).messages
    return applied
  }

  private preimageStore(): Promise<PreimageStore> {
    return (this.preimages ??= PreimageStore.open(preimagesDir(this.writer.outputDir)))
  }

  /** Stops the run: the model stream is aborted, running commands are killed, queued calls cancelled. */
  stop(): void {
    this.stopController.abort()
  }

  async close(): Promise<void> {
    // The identities of the files written last (a moment at most) go into the log before it closes.
    await identitiesTaken()
    await this.preimages?.then((store) => store.close()).catch(() => undefined)
    await this.writer.close()
  }

  private async drive(runId: string): Promise<RunOutcome> {
    this.stopController = new AbortController()
    let turnsThisRun = 0
    /** Compactions in a row forced by a full window, without a turn that fit in between. */
    let overflows = 0
    this.driving = true
    try {
      if (this.rootInstructions === undefined) await this.reloadInstructions()
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
        if (needsCompaction(this)) {
          const ended = await compactConversation(this, runId, 'threshold', false)
          if (ended) return ended
        }
        turnsThisRun++
        const turn = ++this.turn
        const outcome = await playTurn(this, runId, turn)
        if (outcome === 'compact') {
          // The window is full: compact and play a new turn; a second overflow in a row compacts harder; a
          // third means even that does not fit, and the run ends saying so (Continue compacts harder again).
          if (overflows >= 2) return await this.fail(runId, FULL_MESSAGE, 'context')
          const ended = await compactConversation(this, runId, 'window_full', overflows > 0)
          overflows++
          if (ended) return ended
          continue
        }
        overflows = 0
        if (outcome !== 'continue') return outcome
        await this.nestedInstructions(turn)
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

  /**
   * What hides secret values in project instructions: the workspace's redactor (the one every tool result
   * passes), once its scan has the values, unless the options give another.
   */
  private async instructionsRedactor(): Promise<Redact> {
    if (this.opts.redactInstructions) return this.opts.redactInstructions
    await this.secrets.ready()
    const redactor = this.secrets.redactor()
    return (text) => redactor.redactText(text)
  }

  /**
   * Reads the root's project instructions from disk (at the first run, and after each compaction) and logs
   * what is sent; until the next reading, every request carries exactly this text.
   */
  async reloadInstructions(): Promise<void> {
    const loaded = await readInstructions(
      this.opts.workspace,
      '',
      // Only a file to read waits for the secrets scan: a workspace without instructions sends its first
      // request at once.
      () => this.instructionsRedactor(),
    )
    this.rootInstructions = loaded.text
    await this.emit({ type: 'instructions.loaded', scope: 'root', files: loaded.files, text: loaded.text })
  }

  /**
   * The instructions of folders the turn's file calls first reached, told to the model after the turn's
   * results (the system prompt stays as it was, so the cache keeps hitting).
   */
  private async nestedInstructions(turnNumber: number): Promise<void> {
    const turn = this.state.turns.findLast((t) => t.turn === turnNumber)
    if (!turn) return
    for (const id of turn.callIds) {
      const call = turn.calls[id]
      const input = call?.input as { path?: unknown } | undefined
      if (!call || !PATH_TOOLS.has(call.name) || typeof input?.path !== 'string') continue
      const rel = nameInWorkspace(this.opts.workspace, input.path)
      if (rel === null) continue
      for (const folder of foldersOf(rel)) {
        if (this.instructionFolders.has(folder)) continue
        this.instructionFolders.add(folder)
        const loaded = await readInstructions(this.opts.workspace, folder, () => this.instructionsRedactor())
        if (loaded.files.length === 0) continue
        await this.emit({
          type: 'instructions.loaded',
          scope: 'nested',
          folder,
          turn: turnNumber,
          files: loaded.files,
          text: loaded.text,
        })
        if (loaded.text !== '') this.pushUser([{ type: 'text', text: loaded.text }])
      }
    }
  }

  get instructionsText(): string {
    return this.rootInstructions ?? ''
  }

  async events(): Promise<SessionEvent[]> {
    await this.emitChain
    return (await readSession(this.writer.file)).events
  }

  replaceConversation(messages: MessageParam[]): void {
    this.messages = messages
  }

  /** Adds a user message, merging with a trailing user message (the API wants roles to alternate). */
  pushUser(content: ContentBlock[]): void {
    const last = this.messages.at(-1)
    if (last && last.role === 'user') {
      const prior =
        typeof last.content === 'string'
          ? [{ type: 'text', text: last.content } as ContentBlock]
          : last.content
      // The API takes tool results first in their message: results sent after a note (a rewind's) go before it.
      const merged = [...prior, ...content]
      last.content = [
        ...merged.filter((b) => b.type === 'tool_result'),
        ...merged.filter((b) => b.type !== 'tool_result'),
      ]
    } else {
      this.messages.push({ role: 'user', content })
    }
  }

  async endStopped(runId: string): Promise<RunOutcome> {
    await this.emit({ type: 'run.stopped', runId })
    return { status: 'stopped' }
  }

  async fail(runId: string, error: string, kind: RunFailureKind, retryAt?: number): Promise<RunOutcome> {
    await this.emit({ type: 'run.failed', runId, error, kind, ...(retryAt !== undefined ? { retryAt } : {}) })
    return { status: 'failed', error, kind }
  }

  /**
   * Appends to the log, then tells the listeners: nothing is shown that is not in the log. Events are
   * chained so they reach the log, the state and the listeners in the order they were emitted.
   */
  emit(draft: SessionEventDraft): Promise<SessionEvent> {
    // The time is taken now, not when the write queue gets to it: the timeline shows when things happened.
    // The line goes to the writer at once (it numbers lines in call order and writes everything queued in one
    // write), so waiting for an event costs one write, not one write per event still queued before it.
    // What the user reviews (an approval's preview, a command's held changes) is logged without secret values.
    const shown = redactPreviewEvent(this.secrets.redactor(), draft)
    const appended = this.writer.append({ ...shown, at: draft.at ?? Date.now() })
    appended.catch(() => undefined) // handled below, in order; not an unhandled rejection meanwhile
    const next = this.emitChain.then(async () => {
      const event = await appended
      this.state = reduceEvent(this.state, event)
      this.opts.onEvent?.(event, this.sessionId)
      return event
    })
    this.emitChain = next.then(
      () => undefined,
      () => undefined,
    )
    return next
  }

  private sharedCaptureHost: CaptureHost | undefined
  private readonly openPreimageStore = (): Promise<PreimageStore> => this.preimageStore()
  private readonly logEvent = (draft: SessionEventDraft): Promise<SessionEvent> => this.emit(draft)

  /**
   * What a command's change capture needs of the session (its store, its log), made once: every call gets a
   * context, and a context's functions were most of what making one cost. A call's own `review` is added to it.
   */
  private captureHost(): CaptureHost {
    this.sharedCaptureHost ??= Object.freeze({
      keep: async (path: string, content: Buffer) => (await this.preimageStore()).put(path, content),
      content: async (hash: string) => (await this.preimageStore()).get(hash),
      log: this.logEvent,
      // The store and the log side by side, one round of fsyncs: the landing needs both durable before
      // anything moves, and neither before the other (nothing moves until both are).
      sync: async () => {
        const store = await this.preimageStore()
        await Promise.all([store.flush(), this.writer.sync()])
      },
      landProtected: this.opts.landProtected === true,
      ...(this.opts.approvals === 'interactive'
        ? {
            learnSecrets: (relPath: string, text: string) => this.secrets.learnHeldSecretFile(relPath, text),
          }
        : {}),
    })
    return this.sharedCaptureHost
  }

  /** The context one call runs with; `flush` sends its last live output before its result. */
  toolContext(callId: string, signal: AbortSignal): { ctx: ToolContext; flush: () => void } {
    let buffer = ''
    let timer: NodeJS.Timeout | null = null
    // Live chunks pass the redactor too, as a stream: a value split between two chunks is still caught.
    const redact = new RedactTextStream(this.secrets.redactor())
    const send = (): void => {
      if (timer) clearTimeout(timer)
      timer = null
      if (buffer.length === 0) return
      const chunk = buffer
      buffer = ''
      void this.emit({ type: 'tool.output', callId, chunk })
    }
    // The last chunk: what the redactor held back (a possible start of a value) is let through, redacted.
    const flush = (): void => {
      buffer += redact.end()
      send()
    }
    const ctx: ToolContext = {
      workspace: this.opts.workspace,
      pathRules: this.pathRules,
      signal,
      snapshots: this.snapshots,
      outputDir: this.writer.outputDir,
      callId,
      bashTimeoutSec: this.opts.bashTimeoutSec,
      changes: changeKeeper(this.openPreimageStore, callId, this.logEvent),
      // Only a person can review: headless runs discard held changes (or land them with --land-protected).
      capture:
        this.opts.approvals === 'interactive'
          ? { ...this.captureHost(), review: () => this.waitForHeldReview(callId, signal) }
          : this.captureHost(),
      onProgress: (chunk) => {
        // At most one output event per call every 100 ms, however chatty the command; the full output is in
        // the session folder, so what the live view drops in a flood is only the middle of a burst.
        buffer += redact.push(chunk)
        if (buffer.length > OUTPUT_EVENT_MAX_CHARS) buffer = buffer.slice(-OUTPUT_EVENT_MAX_CHARS)
        timer ??= setTimeout(send, 100)
      },
    }
    return { ctx, flush }
  }

  // What a turn sees of the session (TurnLoopHost).

  get options(): Readonly<AgentOptions> {
    return this.opts
  }

  get stopSignal(): AbortSignal {
    return this.stopController.signal
  }

  get conversation(): MessageParam[] {
    return this.messages
  }

  /** A decision the user gave before this process knew the call (a continue). */
  takePreDecision(callId: string): (UserDecision & HeldReply) | undefined {
    const d = this.preDecisions.get(callId)
    this.preDecisions.delete(callId)
    return d
  }

  private readonly toldNotes = new Set<string>()

  newSecretNotes(): string[] {
    const fresh = this.secrets.notes().filter((n) => !this.toldNotes.has(n))
    for (const n of fresh) this.toldNotes.add(n)
    return fresh
  }

  track(call: PendingCall, gate: ApprovalGate): void {
    this.pending.set(call.callId, { call, gate })
  }

  logged(): Promise<void> {
    return this.emitChain
  }

  sync(): Promise<void> {
    return this.writer.sync()
  }
}
