import type { EventOf, RunFailureKind, SessionEvent, SessionEventDraft } from '../../shared/events'
import { compactionThreshold } from '../../shared/models'
import type { SessionState } from '../../shared/reducer'
import { buildConversation } from '../session/conversation'
import { toWorkspaceRelative } from '../tools/workspace'
import type { AgentOptions, RunOutcome } from './agent-options'
import type { MessageParam } from './model'
import { describeModelError } from './model-errors'

/**
 * Client-side compaction (issue 21): what Lanes does when the API does not compact for it (a model or endpoint
 * without server-side compaction), and whenever a request no longer fits the window.
 *
 * Two steps, the cheaper first:
 * - clear old tool results: the results of calls before the last few turns are replaced by a short note (the
 *   calls themselves stay, so every tool_use keeps its tool_result and no thinking block is touched). Used when
 *   the context passed the threshold and that alone brings it well below;
 * - summarize: the model is asked (no tools) for a summary of the conversation as a transcript, which replaces
 *   the turns before the most recent ones. The kept turns start at a turn boundary, so each kept tool_use has its
 *   tool_result after it and the latest assistant message, thinking blocks included, is sent as it came.
 *
 * Either is one `context.compacted` event; the conversation is then rebuilt from the log (session/conversation.ts
 * applies it), so a continued session is sent exactly what this process would have sent. Nothing is logged
 * until the summary is in: a stop or a crash while the model writes it leaves the log as it was.
 */

/** Share of the window the summarized transcript may take (harder: half that). */
const TRANSCRIPT_SHARE = 0.5
/** Share of the window the turns kept verbatim may take. */
const KEEP_SHARE = 0.15
/** Turns whose tool results are never cleared. */
const CLEAR_KEEP_TURNS = 3
/** Clearing is enough only if it brings the context below this share of the threshold. */
const CLEAR_TARGET = 0.7
/** Characters per token when nothing better is known (the usual rule of thumb for English and code). */
const CHARS_PER_TOKEN = 4
const RESULT_CHARS = 1500
const TEXT_CHARS = 4000
const INPUT_CHARS = 600

export const SUMMARY_SYSTEM =
  'You write the handover summary of a coding session so that the same agent can go on with the task after the conversation is cleared. You have no tools; answer with the summary only.'

export const SUMMARY_REQUEST = `Summarize the conversation above for the agent that will continue it; it will see only your summary and the most recent turns. Include:
1. The user's task and every instruction or preference the user gave, in their words where they matter.
2. What has been done: files created or changed (with paths) and why, commands run and their outcome.
3. What was learned: relevant file paths, functions, errors and their causes, decisions and their reasons.
4. The current state: what works, what fails, and the exact next steps.
Be specific and complete but brief; do not invent anything.`

export type CompactReason = EventOf<'context.compacted'>['reason']

/** What compaction needs from the session. */
export interface CompactionHost {
  readonly options: Readonly<AgentOptions>
  readonly current: SessionState
  readonly conversation: MessageParam[]
  readonly stopSignal: AbortSignal
  emit(draft: SessionEventDraft): Promise<SessionEvent>
  /** Every event of the session, as logged. */
  events(): Promise<SessionEvent[]>
  /** Replaces the conversation (after a compaction, as the log rebuilds it). */
  replaceConversation(messages: MessageParam[]): void
  /** Reads the project instructions from disk again (after a compaction). */
  reloadInstructions(): Promise<void>
  endStopped(runId: string): Promise<RunOutcome>
  fail(runId: string, error: string, kind: RunFailureKind, retryAt?: number): Promise<RunOutcome>
}

/** The workspace files the session read or wrote (their snapshots), relative to the root. */
export function readFilesOf(state: SessionState, workspace: string): string[] {
  return Object.keys(state.snapshots)
    .map((abs) => toWorkspaceRelative(workspace, abs))
    .sort()
}

/** The context size at which Lanes compacts for this session. */
export function thresholdOf(options: Readonly<AgentOptions>): number {
  return compactionThreshold(options.model.context.window, options.compactAtTokens)
}

/** Lanes compacts before the next turn: the API does not, and the last answer passed the threshold. */
export function needsCompaction(host: CompactionHost): boolean {
  if (host.options.model.context.serverCompaction) return false
  return host.current.contextTokens >= thresholdOf(host.options)
}

/**
 * Compacts the conversation. `harder` (a request that still did not fit, or the user's Continue after that):
 * no turn is kept verbatim and the transcript gets half the room. Undefined when the session goes on; else how
 * the run ended (stopped, or failed in plain words).
 */
export async function compactConversation(
  host: CompactionHost,
  runId: string,
  reason: CompactReason,
  harder: boolean,
): Promise<RunOutcome | undefined> {
  const state = host.current
  const turns = state.turns.filter((t) => t.rewoundBy === undefined)
  const lastTurn = turns.at(-1)?.turn ?? 0
  const before = state.contextTokens
  const conversation = host.conversation as MessageParam[]
  const tokensPerChar = before > 0 ? before / Math.max(1, charsOf(conversation)) : 1 / CHARS_PER_TOKEN
  const readFiles = readFilesOf(state, host.options.workspace)

  const commit = async (
    draft: Omit<EventOf<'context.compacted'>, 'type' | 'seq' | 'at' | 'tokensAfter'>,
  ): Promise<undefined> => {
    const events = await host.events()
    // The conversation as the log will rebuild it once the event is in, to say how big it is.
    const probe = {
      type: 'context.compacted',
      seq: Number.MAX_SAFE_INTEGER,
      at: Date.now(),
      ...draft,
    } as const
    const messages = buildConversation([...events, probe]).messages as MessageParam[]
    const tokensAfter = Math.min(before, Math.round(charsOf(messages as MessageParam[]) * tokensPerChar))
    await host.emit({ type: 'context.compacted', ...draft, tokensAfter })
    host.replaceConversation(messages)
    await host.reloadInstructions()
    return undefined
  }

  if (reason === 'threshold' && !harder) {
    const clearBefore = turns.at(-CLEAR_KEEP_TURNS)?.turn
    const already = Math.max(0, ...state.compactions.map((c) => c.clearedBeforeTurn ?? 0))
    if (clearBefore !== undefined && clearBefore > already) {
      let freed = 0
      for (const turn of turns) {
        if (turn.turn < already || turn.turn >= clearBefore) continue
        for (const id of turn.callIds) freed += turn.calls[id]?.output?.length ?? 0
      }
      const after = before - freed * tokensPerChar
      if (after < thresholdOf(host.options) * CLEAR_TARGET) {
        return commit({
          runId,
          turn: lastTurn,
          mode: 'client',
          strategy: 'cleared_tool_results',
          reason,
          tokensBefore: before,
          clearedBeforeTurn: clearBefore,
        })
      }
    }
  }

  const window = host.options.model.context.window
  const transcript = renderTranscript(
    conversation,
    Math.floor(window * CHARS_PER_TOKEN * TRANSCRIPT_SHARE * (harder ? 0.5 : 1)),
  )
  let summary: string | undefined
  let problem = ''
  for (let attempt = 0; attempt < 2 && summary === undefined; attempt++) {
    try {
      const result = await host.options.model.streamTurn({
        system: SUMMARY_SYSTEM,
        tools: [],
        messages: [
          { role: 'user', content: `<transcript>\n${transcript}\n</transcript>\n\n${SUMMARY_REQUEST}` },
        ],
        signal: host.stopSignal,
        onEvent: () => undefined,
      })
      const text = result.content
        .flatMap((b) => (b.type === 'text' ? [b.text] : []))
        .join('\n')
        .trim()
      const complete =
        result.stopReason === 'end_turn' ||
        result.stopReason === 'stop_sequence' ||
        result.stopReason === null
      if (text !== '' && complete && result.toolUses.length === 0) summary = text
      else
        problem =
          text === '' ? 'it came back empty' : `it was cut off (stop reason "${String(result.stopReason)}")`
    } catch (e) {
      if (host.stopSignal.aborted) return host.endStopped(runId)
      const { message, kind, retryAt } = describeModelError(e)
      if ((e as { kind?: string }).kind === 'context_full') {
        return host.fail(runId, FULL_MESSAGE, 'context')
      }
      return host.fail(runId, `Lanes could not compact the conversation: ${message}`, kind, retryAt)
    }
  }
  if (host.stopSignal.aborted) return host.endStopped(runId)
  if (summary === undefined) {
    return host.fail(
      runId,
      `Lanes could not compact the conversation: the model's summary was unusable twice (${problem}). Continue to try again.`,
      'context',
    )
  }
  // The room for kept turns in characters, at the ratio the API's count gives this conversation.
  const keptFromTurn = harder ? undefined : keptFrom(turns, (window * KEEP_SHARE) / tokensPerChar)
  return commit({
    runId,
    turn: lastTurn,
    mode: 'client',
    strategy: 'summary',
    reason,
    tokensBefore: before,
    summary,
    ...(keptFromTurn !== undefined ? { keptFromTurn } : {}),
    ...(readFiles.length > 0 ? { readFiles } : {}),
  })
}

export const FULL_MESSAGE =
  'The conversation no longer fits in the model’s context window, even after compacting it. Continue the run to compact it harder and go on.'

/**
 * The first of the most recent turns that fit in `budgetChars` together (their messages and results), never
 * the only turn when it alone is over; undefined when none fits.
 */
function keptFrom(turns: SessionState['turns'], budgetChars: number): number | undefined {
  let used = 0
  let first: number | undefined
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i] as SessionState['turns'][number]
    if (turn.stopReason === 'refusal') continue
    let size = JSON.stringify(turn.message?.content ?? []).length
    for (const id of turn.callIds) size += turn.calls[id]?.output?.length ?? 0
    if (used + size > budgetChars) break
    used += size
    first = turn.turn
  }
  return first
}

function charsOf(messages: readonly MessageParam[]): number {
  let n = 0
  for (const m of messages)
    n += typeof m.content === 'string' ? m.content.length : JSON.stringify(m.content).length
  return n
}

function cap(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} [... ${text.length - max} more characters]`
}

/**
 * The conversation as plain text for the summary request: no tool_use or thinking blocks (a request without
 * tools cannot carry them), long results and texts shortened, and when it is still over `budgetChars` the
 * middle left out: the beginning (the task) and the end (the current state) matter most.
 */
export function renderTranscript(messages: readonly MessageParam[], budgetChars: number): string {
  const lines: string[] = []
  for (const message of messages) {
    const who = message.role === 'user' ? 'User' : 'Assistant'
    if (typeof message.content === 'string') {
      lines.push(`${who}: ${cap(message.content, TEXT_CHARS)}`)
      continue
    }
    for (const block of message.content) {
      switch (block.type) {
        case 'text':
          lines.push(`${who}: ${cap(block.text, TEXT_CHARS)}`)
          break
        case 'tool_use':
          lines.push(`Assistant called ${block.name} ${cap(JSON.stringify(block.input), INPUT_CHARS)}`)
          break
        case 'tool_result': {
          const content =
            typeof block.content === 'string'
              ? block.content
              : (block.content ?? []).map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n')
          lines.push(`Result${block.is_error ? ' (error)' : ''}: ${cap(content, RESULT_CHARS)}`)
          break
        }
        case 'compaction':
          if (typeof block.content === 'string') lines.push(`Summary of what came before: ${block.content}`)
          break
        default:
          break
      }
    }
  }
  const text = lines.join('\n')
  if (text.length <= budgetChars) return text
  const head = Math.floor(budgetChars * 0.2)
  const tail = budgetChars - head
  return `${text.slice(0, head)}\n[... ${text.length - budgetChars} characters of the middle of the conversation left out ...]\n${text.slice(text.length - tail)}`
}
