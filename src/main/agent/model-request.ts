import type {
  BetaContentBlockParam as ContentBlockParam,
  BetaContextManagementConfig,
  MessageCreateParamsStreaming,
  BetaThinkingConfigParam as ThinkingConfigParam,
  BetaTool as Tool,
} from '@anthropic-ai/sdk/resources/beta/messages/messages'
import { thinkingSettingsFor, type ThinkingSetting } from '../../shared/models'
import type { RetryReason } from '../../shared/events'
import type { MessageParam } from '../session/conversation'
import type { ToolDefinition } from '../tools/registry'
import type { ModelError } from './model-errors'
import { apiToolId, type StreamEvent } from './model-stream'

/**
 * Request building for the model client (model.ts): the streamed Messages API request, with `apiMessages`,
 * the one place that makes a conversation acceptable to the API (no whitespace-only text, valid tool ids, at
 * most four cache breakpoints).
 */

export type { MessageParam }

export interface RetryInfo {
  /** The attempt about to be made (2 for the first retry). */
  attempt: number
  /** Attempts in all, the first one included. */
  of: number
  delayMs: number
  reason: RetryReason
  error: ModelError
}

export interface TurnRequest {
  system: string
  tools: ToolDefinition[]
  messages: MessageParam[]
  signal: AbortSignal
  onEvent: (event: StreamEvent) => void
  /**
   * Told once per attempt that the request went out (request-sent.ts: the API answered it, or its body has been
   * on the wire a moment, or the attempt ended).
   */
  onSent?: () => void
  /** Told before each retry, so the UI can say why nothing is happening. */
  onRetry?: (info: RetryInfo) => void
  /** Tool ids the session already used: a tool_use repeating one gets a fresh id (model-stream.ts). */
  usedToolIds?: (id: string) => boolean
  /**
   * The context size (input tokens) at which the API should compact, when this client compacts server-side;
   * ignored otherwise (the engine then compacts itself).
   */
  compactAt?: number
}

const EPHEMERAL = { type: 'ephemeral' } as const

/**
 * The `thinking` field: on models that think by default, the display that returns the text between tool calls
 * (their default "omitted" would leave the transcript silent between calls); nothing for other models.
 */
function thinkingParam(model: string, setting: ThinkingSetting | undefined): ThinkingConfigParam | undefined {
  const settings = thinkingSettingsFor(model)
  if (!settings) return undefined
  const chosen = setting && settings.includes(setting) ? setting : 'adaptive'
  return chosen === 'adaptive' ? { type: 'adaptive', display: 'summarized' } : { type: 'between_tools' }
}

/** The beta headers server-side compaction and tool-result clearing need (the compaction and context-editing pages). */
export const COMPACTION_BETAS = ['compact-2026-01-12', 'context-management-2025-06-27'] as const
/** The API's smallest compaction trigger ("minimum 50,000 tokens"). */
const MIN_SERVER_TRIGGER = 50_000
/** Tool uses kept when old results are cleared: the model's recent work stays whole. */
const KEEP_TOOL_USES = 6

/**
 * The context-management edits for server-side compaction at `compactAt` input tokens, as documented:
 *
 *   "context_management": { "edits": [ { "type": "compact_20260112", "trigger": { "type": "input_tokens", "value": N } } ] }
 *
 * Before it, the cheaper edit: old tool results cleared (`clear_tool_uses_20250919`, "the API clears the oldest
 * tool results in chronological order, replacing them with placeholder text") from 60 % of the threshold, so a
 * run that only piles up large outputs never needs a summary. `clear_at_least` keeps each clearing big enough to
 * be worth the prompt-cache write it costs.
 */
export function contextManagement(compactAt: number): BetaContextManagementConfig {
  const trigger = Math.max(MIN_SERVER_TRIGGER, Math.round(compactAt))
  return {
    edits: [
      {
        type: 'clear_tool_uses_20250919',
        trigger: { type: 'input_tokens', value: Math.max(MIN_SERVER_TRIGGER, Math.round(trigger * 0.6)) },
        keep: { type: 'tool_uses', value: KEEP_TOOL_USES },
        clear_at_least: { type: 'input_tokens', value: 10_000 },
      },
      { type: 'compact_20260112', trigger: { type: 'input_tokens', value: trigger } },
    ],
  }
}

export function buildParams(
  model: string,
  maxTokens: number,
  thinking: ThinkingSetting | undefined,
  req: TurnRequest,
  serverCompactAt?: number,
): MessageCreateParamsStreaming {
  const thinkingConfig = thinkingParam(model, thinking)
  const tools: Tool[] = req.tools.map((tool, i) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.input_schema as Tool['input_schema'],
    // Tools come first in the cached prefix; one breakpoint after the last caches them all.
    ...(i === req.tools.length - 1 ? { cache_control: EPHEMERAL } : {}),
  }))
  return {
    model,
    max_tokens: maxTokens,
    stream: true,
    ...(req.system.length > 0
      ? { system: [{ type: 'text', text: req.system, cache_control: EPHEMERAL }] }
      : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(thinkingConfig ? { thinking: thinkingConfig } : {}),
    ...(serverCompactAt !== undefined
      ? { betas: [...COMPACTION_BETAS], context_management: contextManagement(serverCompactAt) }
      : {}),
    messages: withCacheBreakpoints(apiMessages(req.messages)),
  }
}

/**
 * The conversation as the API accepts it, whatever the log or a gateway produced: whitespace-only text blocks
 * dropped (the API refuses them), tool ids mapped with `apiToolId` on both sides. Thinking blocks pass
 * untouched: any change to them is a 400.
 */
function apiMessages(all: MessageParam[]): MessageParam[] {
  const messages = fromLatestCompaction(all)
  return messages.flatMap((message): MessageParam[] => {
    if (typeof message.content === 'string') {
      return message.content.trim() === '' ? [] : [message]
    }
    const content = (message.content as ContentBlockParam[]).flatMap((block): ContentBlockParam[] => {
      switch (block.type) {
        case 'text':
          return block.text.trim() === '' ? [] : [block]
        case 'tool_use':
          return [{ ...block, id: apiToolId(block.id) }]
        case 'tool_result':
          return [{ ...block, tool_use_id: apiToolId(block.tool_use_id) }]
        default:
          return [block]
      }
    })
    return content.length === 0 ? [] : [{ ...message, content } as MessageParam]
  })
}

/** Stands in for the messages a compaction block covers (the request must still open with a user message). */
export const COMPACTED_PLACEHOLDER =
  'The earlier conversation is summarized in the compaction block that follows.'

/**
 * Server-side compaction: "On subsequent requests, append the response to your messages. The API automatically
 * drops all message blocks prior to the compaction block". They are not sent at all: a long day's conversation
 * would otherwise grow every request without end. One short user message stands in for them (a request opens
 * with a user message); the assistant message holding the latest compaction block goes as it is.
 */
function fromLatestCompaction(messages: MessageParam[]): MessageParam[] {
  const at = messages.findLastIndex(
    (m) =>
      m.role === 'assistant' &&
      Array.isArray(m.content) &&
      m.content.some((b) => b.type === 'compaction' && typeof b.content === 'string'),
  )
  if (at <= 0) return messages
  return [{ role: 'user', content: COMPACTED_PLACEHOLDER }, ...messages.slice(at)]
}

/**
 * The conversation grows by one exchange a turn: a breakpoint on the last block of each of the last two user
 * messages caches everything before them, so each turn reads the previous turn's prefix from the cache and
 * writes only what is new. With the system prompt and the tools that makes the API's limit of four. Existing
 * markers are dropped so a conversation built elsewhere can never exceed it.
 */
function withCacheBreakpoints(messages: MessageParam[]): MessageParam[] {
  const marked = new Set<number>()
  for (let i = messages.length - 1; i >= 0 && marked.size < 2; i--) {
    if (messages[i]?.role === 'user') marked.add(i)
  }
  return messages.map((message, i) => {
    if (typeof message.content === 'string') {
      return marked.has(i) && message.content.length > 0
        ? { ...message, content: [{ type: 'text', text: message.content, cache_control: EPHEMERAL }] }
        : message
    }
    const blocks = message.content.map((block) => {
      if (!('cache_control' in block) || block.cache_control == null) return block
      const { cache_control: _dropped, ...rest } = block
      return rest as ContentBlockParam
    })
    const last = blocks.at(-1)
    if (marked.has(i) && last && cacheable(last)) {
      blocks[blocks.length - 1] = { ...last, cache_control: EPHEMERAL } as ContentBlockParam
    }
    return { ...message, content: blocks }
  }) as MessageParam[]
}

function cacheable(block: ContentBlockParam): boolean {
  switch (block.type) {
    case 'text':
      return block.text.length > 0
    case 'thinking':
    case 'redacted_thinking':
      return false
    case 'compaction':
      // Sent back exactly as it came (the docs allow a breakpoint on it; our two go on user messages).
      return false
    default:
      return true
  }
}
