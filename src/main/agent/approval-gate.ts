import { isPartialReview, rejectsEveryHunk } from '../../shared/events'
import { sameRule } from '../../shared/events'
import type { HunkDecision, SessionEvent, SessionEventDraft, SessionRule } from '../../shared/events'
import type { ToolCallState } from '../../shared/tool-call'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { describeEveryHunkRejected } from '../tools/hunk-review'
import type {
  AlwaysAllowRule,
  Approved,
  PolicyOptions,
  PolicyVerdict,
  Tool,
  ToolContext,
  ToolResult,
} from '../tools/tool'
import type { AgentOptions } from './agent-options'
import { buildPreview, decidePolicy } from './approval-policy'
import type { GateVerdict } from './scheduler'
import type { WorkspaceSecrets } from '../secrets/workspace-secrets'
import type { LoadingPathRules } from '../tools/sensitive-paths'
import { executeReviewed, hunkDecisionError } from '../tools/reviewed-change'

/**
 * The approval gate (DESIGN 5) of one turn: for each call, prepare (the policy, decided the moment its block
 * closes), preview (what the user reviews, built in call order), decide (a person, a decision given before a
 * restart, or a headless run's --approve), and at run time re-check that only what the user saw lands.
 */

export interface Decision {
  decision: 'approved' | 'rejected'
  note?: string
  /** bash, approved: the review's "needs the internet" and "run outside the sandbox" switches. */
  network?: boolean
  outsideSandbox?: boolean
  /** bash, approved: "show me its changes before they land". */
  hold?: boolean
  /** Per-hunk review of an approved write or edit. */
  hunks?: HunkDecision[]
}

/** A decision as the user gives it: also "always allow" (this folder) and "allow for the rest of this session". */
export type UserDecision = Decision & { always?: boolean; forSession?: boolean }

/** The review's sandbox switches as given, kept only for an approved call of a sandboxed tool and only when on. */
function sandboxSwitches(
  tool: Tool | undefined,
  decision: Decision,
): Pick<Decision, 'network' | 'outsideSandbox' | 'hold'> {
  if (!tool?.runsInSandbox || decision.decision !== 'approved') return {}
  return {
    ...(decision.network ? { network: true } : {}),
    ...(decision.outsideSandbox ? { outsideSandbox: true } : {}),
    ...(decision.hold ? { hold: true } : {}),
  }
}

/** Where a call stands at the gate. */
export type GateState =
  /** Its policy is not decided yet. */
  | { kind: 'preparing' }
  /** It gets this result without running: bad arguments, unknown tool, cut off, denied, a change that would not
   * apply, interrupted by a restart. Its own failure: it skips its unsafe siblings. */
  | { kind: 'failed'; result: ToolResult }
  /** Runs without a person (`byRule`: a command the user marked "always allow", run as an approved one). */
  | { kind: 'allowed'; byRule: boolean }
  /** Asked: waits for a decision (`waiter`, once the scheduler reached it). */
  | { kind: 'asking'; review: Approved<unknown>; waiter?: (decision: Decision) => void }
  | { kind: 'decided'; review: Approved<unknown>; decision: Decision }
  /** Was running when the app stopped, with something left waiting for the user (Tool.resume finishes it). */
  | { kind: 'resuming' }

/** A tool call as the loop knows it between its block closing and its result. */
export interface PendingCall {
  callId: string
  name: string
  index: number
  /** The arguments as parsed; null when they could not be. */
  input: unknown
  /** `bash(npm test)`: names it in its siblings' skip texts. */
  label: string
  safe: boolean
  /** Taken over from the log of an earlier process (a continue). */
  resumed: boolean
  /** Changed only by the gate's methods below: the state machine reads in this one file. */
  readonly state: GateState
  /** Its approval events and its tool.started, as they are appended: a side effect waits for them. */
  logged: Promise<unknown>[]
}

/** What the gate needs from the session. */
export interface GateHost {
  readonly options: Readonly<AgentOptions>
  /** The workspace's sensitive-path rules, loading in the background: every policy waits for them. */
  readonly pathRules: LoadingPathRules
  readonly stopSignal: AbortSignal
  emit(draft: SessionEventDraft): Promise<SessionEvent>
  toolContext(callId: string, signal: AbortSignal): { ctx: ToolContext; flush: () => void }
  /** A decision the user gave before this process knew the call (a continue). */
  takePreDecision(callId: string): UserDecision | undefined
  /** The session's "allow for the rest of this session" rules in force (from its log). */
  sessionRules(): readonly SessionRule[]
  /** The workspace's secrets: previews and results pass its redactor. */
  readonly secrets: Pick<WorkspaceSecrets, 'ready' | 'isReady' | 'redactor' | 'notes'>
}

/** The one place a call's state is written. */
function move(call: PendingCall, state: GateState): void {
  ;(call as { state: GateState }).state = state
}

function newRuleId(): string {
  return `rule-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`
}

const INTERRUPTED_TEXT =
  'Interrupted: Lanes stopped while this call was running, so whether it completed is unknown. Check the current state (read the file or list the folder) before issuing it again.'

const REJECTED_TEXT =
  'Rejected by the user: this call was not run. Do not retry it unchanged; ask the user or take another approach.'

export class ApprovalGate {
  /** Content a write of this turn will leave, by path, so later previews of the same file build on it. */
  private readonly overlay = new Map<string, string | null>()
  private preparing: Promise<void> = Promise.resolve()

  constructor(private readonly host: GateHost) {}

  /** A new call, before its policy is decided. */
  newCall(fields: Omit<PendingCall, 'state' | 'logged' | 'resumed'>): PendingCall {
    return { ...fields, resumed: false, state: { kind: 'preparing' }, logged: [] }
  }

  /** The call gets this error result without running (bad arguments, unknown tool, cut off, a repeated id). */
  fail(call: PendingCall, output: string): void {
    move(call, { kind: 'failed', result: { output, isError: true } })
  }

  /**
   * A call of the last turn that the log shows without a result (a continue): interrupted if it was running,
   * else waiting where the log left it (asking, or decided and not started).
   */
  resume(call: PendingCall, logged: ToolCallState): void {
    call.resumed = true
    const approval = logged.approval
    if (logged.status === 'running') {
      // Its tool may know what became of it (bash.resume: a command's changes, kept apart, are reviewed).
      if (this.host.options.registry.get(call.name)?.resume) return move(call, { kind: 'resuming' })
      return this.fail(call, INTERRUPTED_TEXT)
    }
    if (logged.input === null) return this.fail(call, 'Not executed: its arguments could not be parsed.')
    if (!approval?.preview) return
    const review = { preview: approval.preview }
    if (!approval.decision) return move(call, { kind: 'asking', review })
    const decision: Decision = { decision: approval.decision }
    move(call, {
      kind: 'decided',
      review,
      decision: {
        ...decision,
        ...(approval.note ? { note: approval.note } : {}),
        ...sandboxSwitches(this.host.options.registry.get(call.name), { ...approval, ...decision }),
        ...(approval.hunks ? { hunks: approval.hunks } : {}),
      },
    })
  }

  /**
   * The user's decision for a call that asks: checked against what was reviewed (per-hunk decisions must fit
   * the change), recorded ("always allow" as the tool defines it, then `approval.decided`), and handed to the
   * call waiting at the scheduler's gate. It may come before the call reaches its turn; it is used when it does.
   */
  async answer(
    call: PendingCall,
    decision: UserDecision,
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    // What a session rule covers is judged with the workspace's path rules: a call taken over from the log (a
    // continue) may be answered before they are loaded.
    if (!this.host.pathRules.isReady()) await this.host.pathRules.ready()
    const asking = call.state.kind === 'asking' ? call.state : undefined
    if (!asking) return { ok: false, error: 'That call is not waiting for a decision.' }
    const partial = decision.decision === 'approved' && isPartialReview(decision.hunks)
    const refused = partial ? hunkDecisionError(asking.review.preview, decision.hunks ?? []) : undefined
    if (refused) return { ok: false, error: refused }
    const tool = this.host.options.registry.get(call.name)
    const given: Decision = {
      decision: decision.decision,
      ...(decision.note?.trim() ? { note: decision.note.trim() } : {}),
      ...sandboxSwitches(tool, decision),
      // Per-hunk decisions only mean something for an approved write or edit.
      ...(partial ? { hunks: [...(decision.hunks ?? [])] } : {}),
    }
    const rule =
      decision.always && decision.decision === 'approved' ? tool?.alwaysAllowRule?.(call.input) : undefined
    const { alwaysAllow, workspace } = this.host.options
    if (rule && alwaysAllow) await alwaysAllow.add(workspace, rule)
    // The rule is asked of the tool again, now: what it grants is what the tool offers for this call, whatever
    // the reply claims, and it is logged before the decision so a restart between them keeps both or neither.
    const forSession =
      decision.forSession && decision.decision === 'approved'
        ? tool?.sessionRule?.(call.input, this.policyOptions())
        : undefined
    if (forSession && !this.host.sessionRules().some((r) => sameRule(r, forSession)))
      await this.host.emit({
        type: 'rule.granted',
        ruleId: newRuleId(),
        rule: forSession,
        callId: call.callId,
      })
    move(call, { kind: 'decided', review: asking.review, decision: given })
    await this.host.emit({
      type: 'approval.decided',
      callId: call.callId,
      decision: given.decision,
      by: 'user',
      ...(given.note ? { note: given.note } : {}),
      ...(rule ? { always: true } : {}),
      ...sandboxSwitches(tool, given),
      ...(given.hunks ? { hunks: given.hunks } : {}),
    })
    asking.waiter?.(given)
    return { ok: true }
  }

  /**
   * Decides the policy and builds the approval preview as soon as the call's block closes, so every call of
   * the turn that needs the user is on the review screen together. The policy is decided at once, so an
   * allowed call (a read) starts without waiting; previews are built one after another in call order, after
   * the safe calls issued before them (`earlierSafe`), so a write's preview sees the turn's earlier reads and
   * writes; a preview made from the arguments alone (`Tool.previewFromArguments`: a command) does not wait for
   * those reads.
   */
  prepare(call: PendingCall, earlierSafe: Promise<void>[]): Promise<void> {
    if (call.state.kind !== 'preparing') return Promise.resolve()
    const { options } = this.host
    const tool = options.registry.get(call.name)
    const policy = this.policyOptions()
    const decide = (rules: AlwaysAllowRule[]): PolicyVerdict =>
      decidePolicy(tool, call.input, { ...policy, alwaysAllow: rules })
    // Decided now when the folder's "always allow" rules (after the first call, or none kept) and the workspace's
    // path rules (loaded in the background from the session's start) are at hand: a call that needs no one is
    // allowed or failed before the scheduler looks at it, and `verdict` answers without an await, so it starts
    // in the same synchronous run as its block's close (each await let other queued work go first). Until then
    // the policy waits for them: a call is never judged with rules half known. So does it for the workspace's
    // first secret scan, without which no tool may run (its redactor would not know the values yet): a call that
    // arrives before the scan ends waits queued, not started, and its lane says so.
    const alwaysAllow = options.alwaysAllow
    const known = alwaysAllow ? alwaysAllow.rulesNow(options.workspace) : []
    const { pathRules, secrets } = this.host
    let verdictReady: Promise<PolicyVerdict>
    if (known === undefined || !pathRules.isReady() || !secrets.isReady())
      verdictReady = Promise.all([
        known ?? alwaysAllow?.rules(options.workspace),
        pathRules.ready(),
        secrets.ready(),
      ]).then(([rules]) => decide(rules ?? []))
    else {
      try {
        const now = decide(known)
        if (now.kind !== 'ask') {
          if (now.kind === 'deny') this.fail(call, now.reason)
          else move(call, { kind: 'allowed', byRule: now.byRule === true })
          return Promise.resolve()
        }
        verdictReady = Promise.resolve(now)
      } catch (error) {
        // A policy that throws fails the call at its gate (an internal error), never the stream reading it.
        verdictReady = Promise.reject(error as Error)
      }
    }
    const link = this.preparing.then(async () => {
      const verdict = await verdictReady
      if (verdict.kind !== 'ask' || !tool) return
      // The preview is logged through the redactor (AgentSession.emit): it knows the values once its scan is done.
      await Promise.all([...(tool.previewFromArguments ? [] : earlierSafe), this.host.secrets.ready()])
      const { ctx } = this.host.toolContext(call.callId, this.host.stopSignal)
      const target = (call.input as { path?: unknown }).path
      const base =
        typeof target === 'string' && this.overlay.has(target)
          ? { path: target, content: this.overlay.get(target) ?? null }
          : undefined
      const preview = await buildPreview(tool, call.input, ctx, {
        protected: verdict.protected,
        ...(base ? { base } : {}),
      })
      if (!preview.ok) return this.fail(call, preview.error)
      if (preview.after !== undefined && typeof target === 'string') this.overlay.set(target, preview.after)
      const review = {
        preview: preview.preview,
        ...(preview.plan !== undefined ? { plan: preview.plan } : {}),
      }
      move(call, { kind: 'asking', review })
      const sessionRule = verdict.protected ? undefined : tool.sessionRule?.(call.input, policy)
      // Not awaited: the log keeps the order, and the call waits for these lines before it runs.
      call.logged.push(
        this.host.emit({
          type: 'approval.requested',
          callId: call.callId,
          preview: preview.preview,
          ...(sessionRule ? { sessionRule } : {}),
        }),
      )
      await this.decideWithoutAsking(call)
    })
    this.preparing = link.catch(() => undefined)
    return verdictReady.then((verdict) => {
      if (verdict.kind === 'ask') return tool ? link : undefined
      if (verdict.kind === 'deny') this.fail(call, verdict.reason)
      else move(call, { kind: 'allowed', byRule: verdict.byRule === true })
    })
  }

  /** What a tool's policy is decided with (the folder's "always allow" rules are read where they are needed). */
  private policyOptions(): PolicyOptions {
    const { options } = this.host
    return {
      workspace: options.workspace,
      pathRules: this.host.pathRules,
      alwaysAllow: [],
      sessionRules: this.host.sessionRules(),
      autoApproveEdits: options.autoApproveEdits,
      sandbox: sandboxSupport().available,
    }
  }

  /**
   * Decisions that need no one to wait for: one the user already gave (before a restart), or a headless
   * run's --approve all (approves) / none (rejects).
   */
  async decideWithoutAsking(call: PendingCall): Promise<void> {
    if (call.state.kind !== 'asking') return
    const given = this.host.takePreDecision(call.callId)
    if (given) {
      await this.answer(call, given)
      return
    }
    const mode = this.host.options.approvals
    if (mode !== 'all' && mode !== 'none') return
    const decision: Decision = { decision: mode === 'all' ? 'approved' : 'rejected' }
    move(call, { kind: 'decided', review: call.state.review, decision })
    call.logged.push(
      this.host.emit({
        type: 'approval.decided',
        callId: call.callId,
        decision: decision.decision,
        by: 'cli',
      }),
    )
  }

  /**
   * Whether the call may run, once it holds the scheduler's gate: waits for a person when it asked (`waiting`
   * tells the scheduler so). A call's own failure skips its siblings; a rejection is the user's choice and
   * does not.
   */
  verdict(call: PendingCall, ready: Promise<void>, waiting: () => void): GateVerdict | Promise<GateVerdict> {
    // Settled before the call reached the gate (allowed or failed when its block closed, decided while earlier
    // calls ran): answered now, so the scheduler starts it without an await, which would let other queued work
    // go first.
    return this.settledVerdict(call) ?? this.verdictWhenReady(call, ready, waiting)
  }

  private async verdictWhenReady(
    call: PendingCall,
    ready: Promise<void>,
    waiting: () => void,
  ): Promise<GateVerdict> {
    await ready
    const state = call.state
    if (state.kind === 'asking') {
      const decision = await new Promise<Decision>((resolve) => {
        state.waiter = resolve
        waiting()
      })
      move(call, { kind: 'decided', review: state.review, decision })
    }
    return this.settledVerdict(call) ?? { run: true }
  }

  /** The verdict of a call whose state says it (failed, allowed, decided); undefined while it is not settled. */
  private settledVerdict(call: PendingCall): GateVerdict | undefined {
    const state = call.state
    if (state.kind === 'failed') return { run: false, result: state.result, failed: true }
    if (state.kind === 'allowed') return { run: true }
    if (state.kind !== 'decided') return undefined
    const { decision, review } = state
    if (decision.decision === 'approved' && rejectsEveryHunk(review.preview, decision.hunks)) {
      const path = review.preview.kind === 'write' ? review.preview.path : call.label
      return {
        run: false,
        result: {
          output: describeEveryHunkRejected(path, decision.hunks ?? [], decision.note),
          isError: true,
          metadata: { rejected: true, hunks: decision.hunks },
        },
        failed: false,
      }
    }
    if (decision.decision === 'rejected') {
      const note = decision.note
      return {
        run: false,
        result: {
          output: note ? `Rejected by the user, who wrote: ${note}` : REJECTED_TEXT,
          isError: true,
          metadata: { rejected: true },
        },
        failed: false,
      }
    }
    return { run: true }
  }

  /**
   * Runs a call that passed the gate. Only what the user saw may land: the tool carries out the plan its
   * preview made; a change approved hunk by hunk must still be the change reviewed, then only its accepted
   * hunks are written.
   */
  async execute(call: PendingCall, tool: Tool, ctx: ToolContext): Promise<ToolResult> {
    const state = call.state
    if (state.kind === 'resuming')
      return (await tool.resume?.(call.input, ctx)) ?? { output: INTERRUPTED_TEXT, isError: true }
    const approved = state.kind === 'decided' && state.decision.decision === 'approved' ? state : null
    const hunks = approved?.decision.hunks
    const reviewed = approved?.review.preview
    if (approved && reviewed?.kind === 'write' && isPartialReview(hunks)) {
      const current = await buildPreview(tool, call.input, ctx, { protected: false })
      return executeReviewed(reviewed, current, hunks, ctx)
    }
    // A person approved it (now, or earlier with "always allow"): bash runs in the writable sandbox, or as the
    // review's switches say. Without that, the read-only sandbox.
    if (approved || (state.kind === 'allowed' && state.byRule))
      ctx.approval = {
        network: approved?.decision.network === true,
        outsideSandbox: approved?.decision.outsideSandbox === true,
        ...(approved?.decision.hold ? { hold: true } : {}),
      }
    return tool.execute(call.input, ctx, approved ? approved.review : undefined)
  }

  /**
   * The result the model reads: with the note the user typed while approving the call, whatever became of it
   * (run, failed, skipped after a sibling's failure, cancelled). A rejection's note is already its result's
   * text (`verdict`), and so is that of a change whose every hunk was left out.
   */
  withApprovalNote(call: PendingCall, result: ToolResult): ToolResult {
    const state = call.state
    if (state.kind !== 'decided' || state.decision.decision !== 'approved') return result
    const { note, hunks } = state.decision
    if (!note || rejectsEveryHunk(state.review.preview, hunks)) return result
    return { ...result, output: `${result.output}\n\nThe user approved this call with a note: ${note}` }
  }
}
