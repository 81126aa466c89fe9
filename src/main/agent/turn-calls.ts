import type { Lane } from '../../shared/events'
import type { SessionState } from '../../shared/reducer'
import type { ToolCallState } from '../../shared/tool-call'
import { z } from 'zod'
import { toolResultContent } from '../../shared/result-text'
import { redactDeep } from '../secrets/redact-deep'
import type { WorkspaceSecrets } from '../secrets/workspace-secrets'
import { parseToolArgs, type ParsedArgs } from '../tools/args'
import { callLabel, formatForModel } from '../tools/result-format'
import { ApprovalGate, type GateHost, type PendingCall } from './approval-gate'
import type { CallOutcome, CallSpec, TurnScheduler } from './scheduler'
import { cutCallText } from './stop-reasons'

/**
 * One turn's calls, from the moment their block closes to their result: parsing their arguments, the approval
 * gate, the scheduler's hooks, and each result formatted once, where it is recorded. It sees the session only
 * through `TurnHost`.
 */

export interface TurnHost extends GateHost {
  readonly current: SessionState
  /** Makes a call reachable by the user's decision (through its gate) while it waits for one. */
  track(call: PendingCall, gate: ApprovalGate): void
  /** The workspace's secrets: every result passes its redactor in `settled` (the one choke point). */
  readonly secrets: WorkspaceSecrets
  /** What the secret scan could not read (a file over the cap, a binary one) not yet told in this session. */
  newSecretNotes(): string[]
}

export interface ToolUseSeen {
  id: string
  name: string
  rawInput: string
  index: number
  /** Never closed, or cut by a token limit: never executed (stop-reasons.ts `isCutCall`). */
  cut: false | 'unclosed' | 'max_tokens' | 'model_context_window_exceeded'
  /** The id the model gave it, which an earlier call already had (model-stream.ts): `id` is a fresh one. */
  duplicateOf?: string
}

export type ToolResultBlock = {
  type: 'tool_result'
  tool_use_id: string
  /** Text, or text and images (a tool that returned images: an MCP server's). */
  content: ReturnType<typeof toolResultContent>
  is_error?: boolean
}

const ANY_OBJECT = z.looseObject({})

/** A call whose id an earlier call already had is answered with this and never run. */
export function duplicateIdText(given: string, fresh: string): string {
  return `Not executed: this call came with the id ${given}, which an earlier call already has (every tool call needs its own id), so it was not run and is answered under the id ${fresh}. Issue it again if it is still needed.`
}

export class TurnCalls {
  private readonly calls = new Map<string, PendingCall>()
  private readonly flushers = new Map<string, () => void>()
  private readonly results = new Map<string, ToolResultBlock>()
  /** Each call's arguments, parsed once: when its block closes, and used again when it is dispatched. */
  private readonly parsed = new Map<string, ParsedArgs>()
  private readonly gate: ApprovalGate
  private resolvePause!: (value: 'paused') => void
  readonly paused = new Promise<'paused'>((resolve) => (this.resolvePause = resolve))
  /** When each safe call of the turn settles: a write's preview waits for the reads issued before it. */
  private readonly safeDone: { callId: string; done: Promise<void>; resolve: () => void }[] = []

  constructor(
    private readonly host: TurnHost,
    private readonly turn: number,
  ) {
    this.gate = new ApprovalGate(host)
  }

  /** A call's input as parsed, else `written` (what the model sent, when it is an object). */
  inputFor(callId: string, written: Record<string, unknown> = {}): Record<string, unknown> {
    const input = this.calls.get(callId)?.input
    return typeof input === 'object' && input !== null && !Array.isArray(input)
      ? (input as Record<string, unknown>)
      : written
  }

  /** The calls that were dispatched, as tool_use blocks (a response broken off keeps only those). */
  dispatchedBlocks(): { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }[] {
    return [...this.calls.values()].map((c) => ({
      type: 'tool_use',
      id: c.callId,
      name: c.name,
      input: this.inputFor(c.callId),
    }))
  }

  waitingIds(): string[] {
    return [...this.calls.values()]
      .filter((c) => c.state.kind === 'asking' && c.state.waiter !== undefined)
      .map((c) => c.callId)
  }

  /** The tool_result of each settled call, in the order given. */
  resultBlocks(callIds: readonly string[]): ToolResultBlock[] {
    return callIds.flatMap((id) => this.results.get(id) ?? [])
  }

  /** The arguments of a tool_use, parsed once (an unknown tool's as any JSON object). */
  private parse(use: { id: string; name: string; rawInput: string }): ParsedArgs {
    let parsed = this.parsed.get(use.id)
    if (parsed === undefined) {
      const schema = this.host.options.registry.get(use.name)?.input ?? ANY_OBJECT
      parsed = parseToolArgs(use.rawInput, schema, { toolName: use.name })
      this.parsed.set(use.id, parsed)
    }
    return parsed
  }

  /**
   * The call's arguments are complete: they parsed as they are, or are a whole JSON object whose content is
   * wrong. Such a call can be dispatched the moment its block closes; one that needs repair may have been cut
   * off, which only the end of the response tells.
   */
  complete(use: { id: string; name: string; rawInput: string }): boolean {
    const parsed = this.parse(use)
    return parsed.ok ? !parsed.repaired : parsed.wellFormed === true
  }

  /** A call whose block closed. */
  dispatch(scheduler: TurnScheduler, use: ToolUseSeen): void {
    const { registry } = this.host.options
    const tool = registry.get(use.name)
    const call = this.newCall(use.id, use.name, use.index, null, tool?.concurrencySafe ?? false)
    let rawForLog: string | undefined
    if (use.duplicateOf !== undefined) {
      this.gate.fail(call, duplicateIdText(use.duplicateOf, use.id))
      rawForLog = use.rawInput
    } else if (use.cut) {
      this.gate.fail(call, cutCallText(use.name, use.cut))
      rawForLog = use.rawInput
    } else if (!tool) {
      this.gate.fail(
        call,
        `Unknown tool "${use.name}". The available tools are: ${registry.names().join(', ')}.`,
      )
    } else {
      const parsed = this.parse(use)
      if (!parsed.ok) {
        this.gate.fail(call, parsed.error)
        rawForLog = use.rawInput
      } else {
        call.input = parsed.value
        if (parsed.repaired) rawForLog = use.rawInput
      }
    }
    call.label = callLabel(use.name, call.input)
    this.add(scheduler, call, rawForLog, false)
  }

  /** A call of the last turn that the log shows without a result. */
  resume(scheduler: TurnScheduler, state: ToolCallState): void {
    const call = this.newCall(state.callId, state.name, state.index, state.input, state.safe)
    this.gate.resume(call, state)
    this.add(scheduler, call, undefined, state.approval?.preview !== undefined)
  }

  private newCall(callId: string, name: string, index: number, input: unknown, safe: boolean): PendingCall {
    return this.gate.newCall({ callId, name, index, input, label: callLabel(name, input), safe })
  }

  private add(
    scheduler: TurnScheduler,
    call: PendingCall,
    rawForLog: string | undefined,
    asked: boolean,
  ): void {
    this.calls.set(call.callId, call)
    const earlierSafe = this.safeDone.map((d) => d.done)
    if (call.safe) {
      let resolve!: () => void
      const done = new Promise<void>((r) => (resolve = r))
      this.safeDone.push({ callId: call.callId, done, resolve })
    }
    this.host.track(call, this.gate)
    const ready = asked ? this.gate.decideWithoutAsking(call) : this.gate.prepare(call, earlierSafe)
    scheduler.add(this.spec(call, ready, rawForLog))
  }

  private spec(
    call: PendingCall,
    ready: Promise<void>,
    rawForLog: string | undefined,
  ): CallSpec & { rawForLog?: string } {
    return {
      callId: call.callId,
      safe: call.safe,
      label: call.label,
      rawForLog,
      gate: (waiting) => this.gate.verdict(call, ready, waiting),
      execute: async (signal) => {
        // Write-ahead: a side effect starts only once the log holds its approval and its start (one write for
        // all of them), so a crash can never leave a command run or a file written that the log does not show
        // as started, and a continue never runs it twice. A read runs at once; repeating it is harmless.
        if (!call.safe || call.state.kind === 'decided') await Promise.all(call.logged)
        const tool = this.host.options.registry.get(call.name)
        if (!tool) return { output: `Unknown tool "${call.name}".`, isError: true }
        // The redactor knows the workspace's values once its first scan (begun when the session opened) is done.
        // Awaited only while it runs: an await even of a settled promise lets everything queued meanwhile (the
        // reducer and listeners of the events just logged) run first, and the tool started that much later.
        if (!this.host.secrets.isReady()) await this.host.secrets.ready()
        // So are the path rules the tools judge with (loaded in the background too): the policy waited for them,
        // but a call taken over from the log (a continue) was not judged by it.
        if (!this.host.pathRules.isReady()) await this.host.pathRules.ready()
        const { ctx, flush } = this.host.toolContext(call.callId, signal)
        this.flushers.set(call.callId, flush)
        return this.gate.execute(call, tool, ctx)
      },
    }
  }

  queued(spec: CallSpec & { rawForLog?: string }, lane: Lane): void {
    const call = this.calls.get(spec.callId) as PendingCall
    // A call resumed from the log was queued by the process that received it.
    if (call.resumed) return
    // The tool's own title, from arguments that parsed (a call that failed to parse has none to show).
    const tool = this.host.options.registry.get(call.name)
    const title = call.input !== null ? tool?.title?.(call.input) : undefined
    void this.host.emit({
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
      // MCP (issue 22): the server that provides the tool.
      ...(tool?.server !== undefined ? { server: tool.server } : {}),
    })
  }

  started(callId: string): void {
    const call = this.calls.get(callId)
    // A call resumed where it was running started in the process that ran it.
    if (call?.state.kind === 'resuming') return
    call?.logged.push(this.host.emit({ type: 'tool.started', callId }))
  }

  /** The scheduler can go no further without a person (it calls this once the response is complete). */
  blocked(): void {
    const waiting = this.waitingIds()
    if (waiting.length === 0) return
    const runId = this.host.current.currentRunId ?? ''
    void this.host.emit({ type: 'run.paused', runId, reason: 'approval', callIds: waiting }).then(() => {
      if (this.host.options.approvals === 'pause') this.resolvePause('paused')
    })
  }

  /** Records a call's result: formatted for the model once, logged, and kept for the tool_result. */
  settled(callId: string, outcome: CallOutcome): void {
    this.flushers.get(callId)?.()
    this.safeDone.find((d) => d.callId === callId)?.resolve()
    const call = this.calls.get(callId)
    const noted = call ? this.gate.withApprovalNote(call, outcome.result) : outcome.result
    // The one choke point: whatever any tool returns (its output, an error, the metadata the UI shows, the note
    // the user typed) passes the redactor here, before it is logged or sent to the model.
    const redactor = this.host.secrets.redactor()
    // For the user, never the model: what the scan could not read (it names files, never their content).
    const notes = outcome.kind === 'finished' ? this.host.newSecretNotes() : []
    const metadata = noted.metadata ? redactDeep(redactor, noted.metadata) : notes.length > 0 ? {} : undefined
    const result = {
      ...noted,
      output: redactor.redactText(noted.output),
      ...(metadata ? { metadata: notes.length > 0 ? { ...metadata, secretNotes: notes } : metadata } : {}),
      ...(noted.title !== undefined ? { title: redactor.redactText(noted.title) } : {}),
    }
    const tool = call ? this.host.options.registry.get(call.name) : undefined
    const elapsed = outcome.kind === 'finished' && tool?.reportsExecutionTime === true && outcome.ran
    const output = formatForModel(result, elapsed ? { elapsedMs: outcome.durationMs } : {})
    this.results.set(callId, {
      type: 'tool_result',
      tool_use_id: callId,
      // MCP (issue 22): images a tool returned go to the model as image blocks after the text.
      content: toolResultContent(output, result.metadata),
      ...(result.isError ? { is_error: true } : {}),
    })
    switch (outcome.kind) {
      case 'finished':
        void this.host.emit({
          type: 'tool.finished',
          callId,
          isError: result.isError,
          output,
          durationMs: outcome.durationMs,
          ...(result.metadata ? { metadata: result.metadata } : {}),
          ...(result.title ? { title: result.title } : {}),
        })
        break
      case 'skipped':
        void this.host.emit({ type: 'tool.skipped', callId, causeCallId: outcome.causeCallId, output })
        break
      case 'cancelled':
        void this.host.emit({ type: 'tool.cancelled', callId, output, durationMs: outcome.durationMs })
        break
    }
  }
}
