import type { BetaContentBlockParam as ContentBlock } from '@anthropic-ai/sdk/resources/beta/messages/messages'
import type { RunFailureKind, SessionEvent, SessionEventDraft } from '../../shared/events'
import { readFilesOf, thresholdOf } from './compaction'
import { describeModelError } from './model-errors'
import { getCall } from '../../shared/reducer'
import type { ToolCallState } from '../../shared/tool-call'
import { serverCompactionNote, turnContent } from '../session/conversation'
import { callLabel } from '../tools/result-format'
import type { RunOutcome } from './agent-options'
import type { MessageParam, TurnResult } from './model'
import { buildSystemPrompt } from './prompt'
import { TurnScheduler } from './scheduler'
import { isCutCall, REFUSED_CALL_TEXT, stopPlan } from './stop-reasons'
import { TurnCalls, type ToolResultBlock, type TurnHost } from './turn-calls'

/**
 * One turn of the agent loop (DESIGN 1): stream the model's answer, turn every tool_use into a call (turn-calls.ts:
 * parse, gate, schedule, record), send the results back. It sees the session only through `TurnLoopHost`.
 */

/**
 * The conversation's blocks and messages are the SDK's request types (its beta ones, whose blocks include
 * `compaction`), one definition for the whole engine.
 */
export type { BetaContentBlockParam as ContentBlock } from '@anthropic-ai/sdk/resources/beta/messages/messages'
export type { MessageParam } from './model'

/** What a turn needs from the session, beyond what its calls need. */
export interface TurnLoopHost extends TurnHost {
  /** The conversation as it goes to the model; a finished turn appends to it. */
  readonly conversation: MessageParam[]
  /** The project instructions' marked section of the system prompt ('' when there are none). */
  readonly instructionsText: string
  reloadInstructions(): Promise<void>
  /** Adds a user message, merging with a trailing user message (the API wants roles to alternate). */
  pushUser(content: ContentBlock[]): void
  emit(draft: SessionEventDraft): Promise<SessionEvent>
  /** Resolves once every event emitted so far is in the log and the state. */
  logged(): Promise<void>
  sync(): Promise<void>
  endStopped(runId: string): Promise<RunOutcome>
  fail(runId: string, error: string, kind: RunFailureKind, retryAt?: number): Promise<RunOutcome>
}

/**
 * Plays one turn: streams the model's answer, dispatches each tool call as its block closes (streaming mode)
 * or once the answer is complete, records the answer, waits for every result (or a pause), and says whether
 * the run goes on.
 */
export async function playTurn(
  host: TurnLoopHost,
  runId: string,
  turn: number,
): Promise<'continue' | 'compact' | RunOutcome> {
  await host.emit({ type: 'turn.started', runId, turn })
  const signal = host.stopSignal
  const turnCtx = new TurnCalls(host, turn)
  const scheduler = makeScheduler(host, turnCtx)

  // Tool blocks as they stream: dispatched at once in streaming mode when their arguments are clean JSON.
  // Arguments that need repair wait for the end of the response, when we know whether it was cut off.
  const dispatched = new Set<string>()
  let result: TurnResult | undefined
  let streamError: unknown
  /** The API compacted in this answer: what the model is told after the results. */
  let compactedNote: string | undefined
  let compacted = false
  try {
    result = await host.options.model.streamTurn({
      // Dated by the session's creation, not today: the prompt stays byte-identical for the whole session, so
      // the prompt cache keeps hitting and thinking signatures stay valid across midnight.
      system: buildSystemPrompt({
        workspaceRoot: host.options.workspace,
        date: new Date(host.current.session?.createdAt ?? Date.now()),
        instructions: host.instructionsText,
      }),
      tools: host.options.registry.definitions(),
      messages: host.conversation,
      signal,
      // What waited for the first request to go out (MCP servers' start) starts now.
      onSent: () => host.options.registry.requestSent(),
      compactAt: thresholdOf(host.options),
      usedToolIds: (id) => getCall(host.current, id) !== undefined,
      onRetry: (info) => {
        void host.emit({
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
          void host.emit({ type: 'assistant.delta', turn, index: event.index, text: event.text })
        } else if (event.type === 'thinking') {
          void host.emit({ type: 'assistant.thinking', turn, index: event.index, block: event.block })
        } else if (event.type === 'compaction' && event.block.content !== null) {
          // The API compacted (server-side): the block goes back in this turn's message; this is its marker.
          const readFiles = readFilesOf(host.current, host.options.workspace)
          compacted = true
          compactedNote = serverCompactionNote(readFiles)
          void host.emit({
            type: 'context.compacted',
            runId,
            turn,
            mode: 'server',
            strategy: 'summary',
            reason: 'threshold',
            tokensBefore: host.current.contextTokens,
            summary: event.block.content,
            ...(readFiles.length > 0 ? { readFiles } : {}),
          })
        } else if (event.type === 'block_stop' && event.id !== undefined && event.name !== undefined) {
          const use = { id: event.id, name: event.name, rawInput: event.rawInput ?? '', index: event.index }
          if (host.options.scheduler === 'streaming' && turnCtx.complete(use)) {
            dispatched.add(event.id)
            const duplicateOf = event.duplicateOf !== undefined ? { duplicateOf: event.duplicateOf } : {}
            turnCtx.dispatch(scheduler, { ...use, cut: false, ...duplicateOf })
          }
        }
      },
    })
  } catch (e) {
    streamError = e
  }
  // A model client that does not say when its request went out (the demo): the answer is in, so it did.
  host.options.registry.requestSent()

  // The response is complete (or broken off): dispatch what waited, but never a call that was cut off.
  // After a broken stream nothing more is dispatched: that response is not one the model finished. A refused
  // answer dispatches nothing more, and what already was is abandoned: none of its calls may act.
  const toolUses = result?.toolUses ?? []
  const stopReason = result?.stopReason ?? null
  const plan = stopPlan(stopReason, toolUses.length > 0)
  const lastIndex = toolUses.at(-1)?.index
  for (const use of plan.kind === 'refused' ? [] : toolUses) {
    if (dispatched.has(use.id)) continue
    const cut = isCutCall(use, stopReason, lastIndex, () => turnCtx.complete(use))
    turnCtx.dispatch(scheduler, {
      id: use.id,
      name: use.name,
      rawInput: use.rawInput,
      index: use.index,
      cut,
      ...(use.duplicateOf !== undefined ? { duplicateOf: use.duplicateOf } : {}),
    })
  }

  // The assistant message as it goes back to the model. A call's input is the arguments as parsed (repaired
  // when that was safe), else what the model wrote when it is a JSON object (bad arguments, an unknown tool),
  // else {}: the model sees its own call again as far as the API allows, and the conversation stays valid.
  // A response that broke off is not recorded as a message: what it had sent (thinking, text, the calls
  // dispatched) is rebuilt from the log, in memory now as after a restart, so continuing the run keeps it.
  const content: ContentBlock[] = result
    ? result.content.map((block) =>
        block.type === 'tool_use' ? { ...block, input: turnCtx.inputFor(block.id, block.input) } : block,
      )
    : await brokenOffContent(host, turn, turnCtx)
  if (result) {
    await host.emit({
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
    await host.logged()
    // The refused turn is not sent back (the conversation goes on without it, as a restart rebuilds it).
    await host.emit({
      type: 'run.finished',
      runId,
      reason: 'refusal',
      ...(result.stopDetails ? { stopDetails: result.stopDetails } : {}),
      ...(result.usage ? { usage: result.usage } : {}),
    })
    await host.sync()
    return { status: 'finished' }
  }

  const settled = await Promise.race([scheduler.done(), turnCtx.paused])
  if (settled === 'paused') {
    await host.logged()
    await host.sync()
    return { status: 'paused', callIds: turnCtx.waitingIds() }
  }
  if (content.length > 0) host.conversation.push({ role: 'assistant', content })
  if (settled.length > 0) {
    host.pushUser(turnCtx.resultBlocks(settled.map((o) => o.callId)))
    if (compactedNote) host.pushUser([{ type: 'text', text: compactedNote }])
  }
  await host.logged()
  await host.sync()
  // After a compaction the project instructions are read again (a changed file counts from here on).
  if (compacted) await host.reloadInstructions()

  if (signal.aborted) return host.endStopped(runId)
  if (streamError !== undefined) {
    // A request over the window: nothing was streamed; the loop compacts and plays a new turn.
    if ((streamError as { kind?: string }).kind === 'context_full') return 'compact'
    const { message, kind, retryAt } = describeModelError(streamError)
    return host.fail(runId, message, kind, retryAt)
  }
  // pause_turn: the content just pushed is sent back as it is and the model continues its turn.
  if (plan.kind === 'continue' || plan.kind === 'pause_turn') return 'continue'
  // The window filled while the model answered: its complete calls ran, the cut one did not; compact.
  if (plan.kind === 'compact') return 'compact'
  await host.emit({
    type: 'run.finished',
    runId,
    reason: plan.kind === 'end' ? plan.reason : 'end_turn',
    ...(plan.kind === 'end' && plan.stopReason ? { stopReason: plan.stopReason } : {}),
    ...(result?.usage ? { usage: result.usage } : {}),
  })
  return { status: 'finished' }
}

/** Finishes the interrupted last turn from the log; undefined when the loop may go on. */
export async function resumeTurn(
  host: TurnLoopHost,
  runId: string,
  turn: number,
  calls: ToolCallState[],
): Promise<RunOutcome | undefined> {
  const turnCtx = new TurnCalls(host, turn)
  // A failed unsafe call before the interruption still skips its later unsafe siblings.
  const failed = calls.find((c) => !c.safe && c.status === 'error')
  const scheduler = makeScheduler(
    host,
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
    await host.logged()
    await host.sync()
    return { status: 'paused', callIds: turnCtx.waitingIds() }
  }
  for (const block of turnCtx.resultBlocks(settled.map((o) => o.callId)))
    results.set(block.tool_use_id, block)
  host.pushUser(calls.map((c) => results.get(c.callId) as ToolResultBlock))
  await host.logged()
  await host.sync()
  if (host.stopSignal.aborted) return host.endStopped(runId)
  return undefined
}

function makeScheduler(
  host: TurnLoopHost,
  turnCtx: TurnCalls,
  priorFailure?: { label: string; callId: string },
): TurnScheduler {
  return new TurnScheduler({
    mode: host.options.scheduler,
    concurrency: host.options.concurrency,
    siblingSkip: host.options.siblingSkip,
    signal: host.stopSignal,
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
async function brokenOffContent(
  host: TurnLoopHost,
  turn: number,
  turnCtx: TurnCalls,
): Promise<ContentBlock[]> {
  await host.logged()
  const state = host.current.turns.findLast((t) => t.turn === turn)
  return state ? turnContent(state) : turnCtx.dispatchedBlocks()
}
