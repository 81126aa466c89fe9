import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk'
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  Model,
  RawMessageStreamEvent,
  StopReason,
  ThinkingConfigParam,
  Tool,
} from '@anthropic-ai/sdk/resources/messages'
import { createHash } from 'node:crypto'
import type { RetryReason, StopDetails, Usage } from '../../shared/events'
import { thinkingSettingsFor, type ThinkingSetting } from '../../shared/models'
import type { ToolDefinition } from '../tools/registry'

/**
 * The model client: one streamed turn of the Messages API, reported block by block.
 *
 * It reads the raw SSE events (`messages.create({ stream: true })`) and keeps every tool call's argument text
 * itself. The SDK's `messages.stream()` helper parses tool input with its partial-JSON parser on every
 * `content_block_stop`, and that parser throws on malformed JSON (`{"a": 1,}`): the helper would fail the
 * whole turn on exactly the input DESIGN 3.1 says must reach the engine as raw text. Nothing here ever
 * parses arguments in a way that can fail the turn.
 *
 * Retries (429, 5xx, 529/overloaded, connection errors, an SSE error, a stream that ends early) happen only
 * while nothing has been streamed; once a content block started, a failure ends the turn with a
 * `ModelError` carrying what was received, and the engine decides. A `retry-after` longer than we wait ends
 * the turn with the time the user can try again (`retryAt`).
 *
 * Thinking (https://platform.claude.com/docs/en/build-with-claude/extended-thinking): `thinking` and
 * `redacted_thinking` blocks are kept complete (text, signature, data) and in their place, because the API
 * refuses a tool-use conversation whose latest assistant message lost or changed them. They are never marked
 * for caching. Every request goes through `apiMessages`, the one place that makes a conversation acceptable
 * to the API (no whitespace-only text, valid tool ids, at most four cache breakpoints).
 */

export type { MessageParam, ToolDefinition }

/** Newest Sonnet in the SDK's `Model` union. */
export const DEFAULT_MODEL: Model = 'claude-sonnet-5-5'
/** Room for a large write_file in one call; the stream makes a long answer cost nothing until it is used. */
export const DEFAULT_MAX_TOKENS = 32_000
const DEFAULT_MAX_RETRIES = 5
const DEFAULT_RETRY_BASE_MS = 500
const MAX_BACKOFF_MS = 20_000
/** A `retry-after` longer than this is not waited for: the user gets the error and can continue later. */
const MAX_RETRY_AFTER_MS = 60_000
/** No event for this long (the API pings well within it) means the connection is dead. */
const DEFAULT_IDLE_TIMEOUT_MS = 120_000
/** With a base URL (the scripted model, a proxy) and no key, the SDK still needs one to send. */
const PLACEHOLDER_KEY = 'lanes-no-key'

export type StreamEvent =
  | { type: 'text'; index: number; text: string }
  | { type: 'tool_start'; index: number; id: string; name: string }
  | { type: 'tool_input'; index: number; partialJson: string }
  /** For a tool block, with its id, name and the full raw argument text as received. */
  | { type: 'block_stop'; index: number; id?: string; name?: string; rawInput?: string }
  /** A thinking block closed, complete with its signature (or a redacted one with its data). */
  | { type: 'thinking'; index: number; block: ThinkingContent }

export type ThinkingContent =
  { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string }

/** Assistant content for the conversation. Tool input is the parsed arguments, or {} when they do not parse. */
export type ContentBlock =
  | ThinkingContent
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }

export interface ToolUse {
  id: string
  name: string
  /** The argument text exactly as streamed. */
  rawInput: string
  /** Content block index in the message. */
  index: number
  /** Its content_block_stop arrived. */
  closed: boolean
}

export interface TurnResult {
  content: ContentBlock[]
  toolUses: ToolUse[]
  /** As the API sent it: a reason newer than this client arrives as its own name. */
  stopReason: StopReason | (string & {}) | null
  /** With `refusal`: the policy category and an explanation to show the user (either may be null). */
  stopDetails: StopDetails | null
  usage: Usage
}

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
  /** Told before each retry, so the UI can say why nothing is happening. */
  onRetry?: (info: RetryInfo) => void
}

export interface ModelClient {
  readonly model: string
  streamTurn(req: TurnRequest): Promise<TurnResult>
}

export interface ModelClientOptions {
  apiKey?: string
  baseUrl?: string
  model?: string
  maxTokens?: number
  /** Retries after the first attempt (default 5). */
  maxRetries?: number
  /** First backoff delay; doubles each retry, with jitter (default 500 ms). */
  retryBaseDelayMs?: number
  /** Silence that counts as a dead connection (default 120 s). */
  idleTimeoutMs?: number
  /** Sent only to models that take it (shared/models.ts); absent: adaptive where the model has it. */
  thinking?: ThinkingSetting
}

/**
 * auth: the key was refused or is missing; rate_limit / overloaded: try again later; network: the server was
 * not reached or the connection broke; bad_request: the request itself was refused (model name, size);
 * server: the API failed; aborted: the user stopped.
 */
export type ModelErrorKind =
  'auth' | 'rate_limit' | 'overloaded' | 'network' | 'bad_request' | 'server' | 'aborted'

export class ModelError extends Error {
  readonly kind: ModelErrorKind
  readonly status: number | undefined
  readonly retryable: boolean
  /** The wait the server asked for (retry-after), if any. */
  readonly retryAfterMs: number | undefined
  /** What the model had sent when a stream broke after content started. */
  partial: TurnResult | undefined
  /** The server asked us to wait longer than we do: the time (epoch ms) it can be tried again. */
  retryAt: number | undefined

  constructor(
    kind: ModelErrorKind,
    message: string,
    extra: { status?: number; retryable?: boolean; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, extra.cause !== undefined ? { cause: extra.cause } : undefined)
    // Callers that test for an abort by name (`e.name === 'AbortError'`) recognise a stop.
    this.name = kind === 'aborted' ? 'AbortError' : 'ModelError'
    this.kind = kind
    this.status = extra.status
    this.retryable = extra.retryable ?? false
    this.retryAfterMs = extra.retryAfterMs
    this.partial = undefined
    this.retryAt = undefined
  }
}

function abortError(): ModelError {
  return new ModelError('aborted', 'The request to the model was stopped.')
}

export function createModelClient(opts: ModelClientOptions = {}): ModelClient {
  const apiKey = opts.apiKey || process.env.ANTHROPIC_API_KEY || undefined
  const baseUrl = opts.baseUrl || process.env.ANTHROPIC_BASE_URL || undefined
  const model = opts.model || DEFAULT_MODEL
  const maxTokens = opts.maxTokens ?? DEFAULT_MAX_TOKENS
  const maxRetries = Math.max(0, Math.floor(opts.maxRetries ?? DEFAULT_MAX_RETRIES))
  const retryBaseMs = opts.retryBaseDelayMs ?? DEFAULT_RETRY_BASE_MS
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  const where = baseUrl ?? 'https://api.anthropic.com'

  let client: Anthropic | null = null
  let setupError: ModelError | null = null
  if (!apiKey && !baseUrl) {
    setupError = new ModelError(
      'auth',
      'No API key is set. Add your Anthropic API key in Settings, or set the ANTHROPIC_API_KEY environment variable.',
    )
  } else {
    try {
      client = new Anthropic({
        apiKey: apiKey ?? PLACEHOLDER_KEY,
        baseURL: baseUrl ?? null,
        // Retries are ours: the SDK's cannot know whether content was already shown to the user.
        maxRetries: 0,
      })
    } catch (e) {
      setupError = new ModelError(
        'bad_request',
        `The model client could not be set up: ${(e as Error).message}`,
      )
    }
  }

  const attempt = async (
    params: MessageCreateParamsStreaming,
    req: TurnRequest,
    turn: TurnAccumulator,
  ): Promise<void> => {
    const controller = new AbortController()
    const onAbort = (): void => controller.abort()
    req.signal.addEventListener('abort', onAbort, { once: true })
    let stalled = false
    let idle: NodeJS.Timeout | undefined
    const armIdle = (): void => {
      clearTimeout(idle)
      idle = setTimeout(() => {
        stalled = true
        controller.abort()
      }, idleTimeoutMs)
    }
    try {
      armIdle()
      const stream = await (client as Anthropic).messages.create(params, { signal: controller.signal })
      for await (const event of stream) {
        armIdle()
        turn.apply(event as RawMessageStreamEvent, req.onEvent)
      }
    } catch (e) {
      if (e instanceof ListenerError) throw e
      if (req.signal.aborted) throw abortError()
      if (stalled) throw stalledError(idleTimeoutMs, e)
      throw e instanceof ModelError ? e : classify(e, { where, model, started: turn.started })
    } finally {
      clearTimeout(idle)
      req.signal.removeEventListener('abort', onAbort)
    }
    // The SDK ends the iteration quietly when the request is aborted: say why it ended.
    if (req.signal.aborted) throw abortError()
    if (stalled) throw stalledError(idleTimeoutMs)
    if (!turn.complete) {
      throw new ModelError(
        'network',
        `The connection to the model at ${where} closed before the answer was complete.`,
        {
          retryable: true,
        },
      )
    }
  }

  return {
    model,
    async streamTurn(req: TurnRequest): Promise<TurnResult> {
      if (setupError) throw setupError
      if (req.signal.aborted) throw abortError()
      const params = buildParams(model, maxTokens, opts.thinking, req)
      for (let retry = 0; ; retry++) {
        const turn = new TurnAccumulator()
        try {
          await attempt(params, req, turn)
          return turn.result()
        } catch (e) {
          // The engine's own listener threw: not a model failure, never retried, seen as it is.
          if (e instanceof ListenerError) throw e.cause
          const error = e as ModelError
          if (error.kind === 'aborted') throw error
          if (turn.started) {
            throw midStreamError(error, turn.result())
          }
          const delay =
            error.retryable && retry < maxRetries ? retryDelay(retry, retryBaseMs, error.retryAfterMs) : null
          if (delay === null) throw finalError(error, retry)
          req.onRetry?.({
            attempt: retry + 2,
            of: maxRetries + 1,
            delayMs: delay,
            reason: retryReason(error),
            error,
          })
          try {
            await sleepUnlessAborted(delay, req.signal)
          } catch {
            throw abortError()
          }
        }
      }
    },
  }
}

/** A throw from the engine's `onEvent`, carried out of the stream loop untouched. */
class ListenerError extends Error {
  constructor(override readonly cause: unknown) {
    super('onEvent listener failed')
  }
}

function stalledError(ms: number, cause?: unknown): ModelError {
  return new ModelError(
    'network',
    `The model stopped sending data for ${Math.round(ms / 1000)} s, so the connection was dropped.`,
    { retryable: true, ...(cause !== undefined ? { cause } : {}) },
  )
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

function buildParams(
  model: string,
  maxTokens: number,
  thinking: ThinkingSetting | undefined,
  req: TurnRequest,
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
    messages: withCacheBreakpoints(apiMessages(req.messages)),
  }
}

const TOOL_ID = /^[a-zA-Z0-9_-]+$/

/**
 * A tool id the API accepts, for one a gateway made up (`call:1.2`). Deterministic, so the tool_use and its
 * tool_result map to the same id, in this process and after a restart; the hash keeps two ids that differ only
 * in their invalid characters apart.
 */
export function apiToolId(id: string): string {
  if (TOOL_ID.test(id) && id.length <= 128) return id
  const readable = id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64)
  return `${readable}_${createHash('sha256').update(id).digest('hex').slice(0, 12)}`
}

/**
 * The conversation as the API accepts it, whatever the log or a gateway produced: whitespace-only text blocks
 * dropped (the API refuses them), tool ids mapped with `apiToolId` on both sides. Thinking blocks pass
 * untouched: any change to them is a 400.
 */
function apiMessages(messages: MessageParam[]): MessageParam[] {
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
    default:
      return true
  }
}

/** Per attempt: the blocks as they arrive, the raw argument text of every tool call, the stop and usage. */
class TurnAccumulator {
  /** A content block started: from here a failure ends the turn instead of being retried. */
  started = false
  /** message_stop arrived. */
  complete = false
  private readonly blocks = new Map<
    number,
    | { kind: 'text'; text: string; closed: boolean }
    | { kind: 'tool'; id: string; name: string; raw: string; startInput: unknown; closed: boolean }
    | { kind: 'thinking'; text: string; signature: string; closed: boolean }
    | { kind: 'redacted'; data: string; closed: boolean }
    | { kind: 'other' }
  >()
  private stopReason: TurnResult['stopReason'] = null
  private stopDetails: StopDetails | null = null
  private usage: Usage = { inputTokens: 0, outputTokens: 0 }

  apply(event: RawMessageStreamEvent, onEvent: (e: StreamEvent) => void): void {
    const emit = (e: StreamEvent): void => {
      try {
        onEvent(e)
      } catch (error) {
        throw new ListenerError(error)
      }
    }
    switch (event.type) {
      case 'message_start':
        this.readUsage(event.message?.usage)
        break
      case 'content_block_start': {
        const { index, content_block: block } = event
        if (typeof index !== 'number' || !block) break
        this.started = true
        if (block.type === 'text') {
          const text = typeof block.text === 'string' ? block.text : ''
          this.blocks.set(index, { kind: 'text', text, closed: false })
          if (text.length > 0) emit({ type: 'text', index, text })
        } else if (block.type === 'thinking') {
          const text = typeof block.thinking === 'string' ? block.thinking : ''
          const signature = typeof block.signature === 'string' ? block.signature : ''
          this.blocks.set(index, { kind: 'thinking', text, signature, closed: false })
        } else if (block.type === 'redacted_thinking') {
          const data = typeof block.data === 'string' ? block.data : ''
          this.blocks.set(index, { kind: 'redacted', data, closed: false })
        } else if (block.type === 'tool_use') {
          // Gateways that make up ids the API refuses: the conversation uses a valid one from the start.
          const id = apiToolId(String(block.id))
          const name = String(block.name)
          this.blocks.set(index, { kind: 'tool', id, name, raw: '', startInput: block.input, closed: false })
          emit({ type: 'tool_start', index, id, name })
        } else {
          // Server-tool blocks are not requested; if a proxy sends them they are left out.
          this.blocks.set(index, { kind: 'other' })
        }
        break
      }
      case 'content_block_delta': {
        const block = this.blocks.get(event.index)
        const delta = event.delta
        if (!block || !delta) break
        if (block.kind === 'text' && delta.type === 'text_delta' && typeof delta.text === 'string') {
          block.text += delta.text
          if (delta.text.length > 0) emit({ type: 'text', index: event.index, text: delta.text })
        } else if (
          block.kind === 'tool' &&
          delta.type === 'input_json_delta' &&
          typeof delta.partial_json === 'string'
        ) {
          block.raw += delta.partial_json
          if (delta.partial_json.length > 0) {
            emit({ type: 'tool_input', index: event.index, partialJson: delta.partial_json })
          }
        } else if (
          block.kind === 'thinking' &&
          delta.type === 'thinking_delta' &&
          typeof delta.thinking === 'string'
        ) {
          block.text += delta.thinking
        } else if (
          block.kind === 'thinking' &&
          delta.type === 'signature_delta' &&
          typeof delta.signature === 'string'
        ) {
          // The signature arrives whole, once, at the end of the block: it replaces, never appends.
          block.signature = delta.signature
        }
        break
      }
      case 'content_block_stop': {
        const block = this.blocks.get(event.index)
        if (!block || block.kind === 'other') break
        block.closed = true
        if (block.kind === 'thinking' || block.kind === 'redacted') {
          const thinking = thinkingContent(block)
          if (thinking) emit({ type: 'thinking', index: event.index, block: thinking })
        } else if (block.kind === 'tool') {
          // Some proxies send the whole input in content_block_start and no deltas.
          if (block.raw === '' && isNonEmptyObject(block.startInput))
            block.raw = JSON.stringify(block.startInput)
          emit({
            type: 'block_stop',
            index: event.index,
            id: block.id,
            name: block.name,
            rawInput: block.raw,
          })
        } else {
          emit({ type: 'block_stop', index: event.index })
        }
        break
      }
      case 'message_delta': {
        if (event.delta?.stop_reason !== undefined) this.stopReason = event.delta.stop_reason
        const details = (event.delta as { stop_details?: unknown } | undefined)?.stop_details
        if (typeof details === 'object' && details !== null) {
          const d = details as Record<string, unknown>
          this.stopDetails = {
            category: typeof d.category === 'string' ? d.category : null,
            explanation: typeof d.explanation === 'string' ? d.explanation : null,
          }
        }
        this.readUsage(event.usage)
        break
      }
      case 'message_stop':
        this.complete = true
        break
      default:
        // Event types newer than this client are ignored, as the API's versioning policy asks.
        break
    }
  }

  private readUsage(usage: unknown): void {
    if (typeof usage !== 'object' || usage === null) return
    const u = usage as Record<string, unknown>
    const count = (v: unknown): number | undefined =>
      typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined
    const input = count(u.input_tokens)
    const output = count(u.output_tokens)
    const read = count(u.cache_read_input_tokens)
    const created = count(u.cache_creation_input_tokens)
    // message_delta carries cumulative totals: overwrite, never add.
    if (input !== undefined) this.usage.inputTokens = input
    if (output !== undefined) this.usage.outputTokens = output
    if (read !== undefined) this.usage.cacheReadTokens = read
    if (created !== undefined) this.usage.cacheCreationTokens = created
  }

  result(): TurnResult {
    const content: ContentBlock[] = []
    const toolUses: ToolUse[] = []
    for (const index of [...this.blocks.keys()].sort((a, b) => a - b)) {
      const block = this.blocks.get(index)
      if (!block) continue
      switch (block.kind) {
        case 'text':
          // The API refuses empty and whitespace-only text blocks in a conversation.
          if (block.text.trim().length > 0) content.push({ type: 'text', text: block.text })
          break
        case 'thinking':
        case 'redacted': {
          // Only a block that closed with its signature can be sent back; a cut one is dropped whole.
          const thinking = thinkingContent(block)
          if (thinking) content.push(thinking)
          break
        }
        case 'tool':
          content.push({ type: 'tool_use', id: block.id, name: block.name, input: parseObject(block.raw) })
          toolUses.push({ id: block.id, name: block.name, rawInput: block.raw, index, closed: block.closed })
          break
        case 'other':
          break
      }
    }
    return {
      content,
      toolUses,
      stopReason: this.stopReason,
      stopDetails: this.stopDetails,
      usage: { ...this.usage },
    }
  }
}

/** A closed thinking block as it goes back to the API: these exact fields, in this order. */
function thinkingContent(
  block:
    | { kind: 'thinking'; text: string; signature: string; closed: boolean }
    | { kind: 'redacted'; data: string; closed: boolean },
): ThinkingContent | null {
  if (!block.closed) return null
  if (block.kind === 'redacted')
    return block.data === '' ? null : { type: 'redacted_thinking', data: block.data }
  return block.signature === ''
    ? null
    : { type: 'thinking', thinking: block.text, signature: block.signature }
}

function isNonEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length > 0
}

/** Arguments larger than this are refused by the engine anyway (DESIGN 3.1); parsing them is wasted work. */
const MAX_PARSED_INPUT_CHARS = 1024 * 1024
/** Deeper than any real tool input; deep enough nesting would overflow the stack of a later JSON.stringify. */
const MAX_INPUT_DEPTH = 64

function parseObject(raw: string): Record<string, unknown> {
  if (raw.length > MAX_PARSED_INPUT_CHARS || nestingDepth(raw) > MAX_INPUT_DEPTH) return {}
  try {
    const value = JSON.parse(raw) as unknown
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return value as Record<string, unknown>
  } catch {
    // Malformed arguments stay raw in toolUses; the conversation gets {} (DESIGN 3.1).
  }
  return {}
}

/** Bracket depth of JSON text, outside strings; stops counting past the limit. */
function nestingDepth(raw: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < raw.length && max <= MAX_INPUT_DEPTH; i++) {
    const c = raw.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth)
    else if (c === 0x7d || c === 0x5d) depth--
  }
  return max
}

/** Exponential backoff with jitter (50-100 % of the step), or the server's own retry-after. */
function retryDelay(retry: number, baseMs: number, retryAfterMs: number | undefined): number | null {
  if (retryAfterMs !== undefined) return retryAfterMs > MAX_RETRY_AFTER_MS ? null : retryAfterMs
  const step = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** retry)
  return Math.round(step * (0.5 + Math.random() * 0.5))
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError())
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(abortError())
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

function parseRetryAfter(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '')
  if (Number.isFinite(ms) && ms >= 0) return ms
  const value = headers.get('retry-after')
  if (value === null) return undefined
  const seconds = Number.parseFloat(value)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  const date = Date.parse(value)
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined
}

/**
 * Turns whatever the SDK or fetch threw into a ModelError a person can act on: SDK errors, fetch's TypeError
 * ("fetch failed", "terminated"), socket errors, a SyntaxError from an SSE line that is not JSON.
 */
function classify(e: unknown, ctx: { where: string; model: string; started: boolean }): ModelError {
  if (e instanceof APIUserAbortError) return abortError()
  if (!(e instanceof Error))
    return new ModelError('server', `The model request failed: ${String(e)}`, { cause: e })
  if (e instanceof SyntaxError) {
    return new ModelError('server', `The model API sent data that could not be read (${e.message}).`, {
      retryable: true,
      cause: e,
    })
  }
  if (e instanceof APIConnectionError || !(e instanceof APIError)) {
    const cause = describeCause(e)
    const message = ctx.started
      ? `The connection to the model was lost${cause ? ` (${cause})` : ''}.`
      : `Could not reach the model API at ${ctx.where}${cause ? ` (${cause})` : ''}. Check the internet connection, a proxy or firewall, or the base URL in Settings.`
    return new ModelError('network', message, { retryable: true, cause: e })
  }
  const status = e.status
  const apiMessage = e.apiMessage ?? undefined
  const detail = apiMessage ? ` The API said: ${apiMessage}` : ''
  const requestId = e.requestID ? ` (request id ${e.requestID})` : ''
  const shouldRetry = e.headers?.get('x-should-retry')
  const retryAfterMs = parseRetryAfter(e.headers)
  const retryable = (fallback: boolean): boolean =>
    shouldRetry === 'true' ? true : shouldRetry === 'false' ? false : fallback
  const make = (kind: ModelErrorKind, message: string, canRetry: boolean): ModelError =>
    new ModelError(kind, `${message}${detail}${requestId}`, {
      ...(status !== undefined ? { status } : {}),
      retryable: retryable(canRetry),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      cause: e,
    })
  // An error event inside the stream has no status: its `type` says what happened.
  const type = e.type ?? undefined
  if (status === 401 || (status === undefined && type === 'authentication_error')) {
    return make(
      'auth',
      'The API key was refused (HTTP 401). Check the key in Settings or in ANTHROPIC_API_KEY.',
      false,
    )
  }
  if (status === 403 || (status === undefined && type === 'permission_error')) {
    return make('auth', 'The API key was refused for this request (HTTP 403: no permission).', false)
  }
  // A spent monthly cap looks like a rate limit but does not pass with waiting: retrying only repeats it.
  if (e.errorCode === 'enforced_spend_limit_reached') {
    return make(
      'rate_limit',
      'This API key’s organization has reached its monthly spend limit; requests fail until the limit resets or is raised.',
      false,
    )
  }
  if (status === 429 || type === 'rate_limit_error') {
    return make(
      'rate_limit',
      'The model API is rate-limiting this API key (too many requests or tokens per minute).',
      true,
    )
  }
  if (status === 529 || type === 'overloaded_error') {
    return make('overloaded', 'The model API is overloaded right now.', true)
  }
  if (status === 404) {
    return make(
      'bad_request',
      `The model "${ctx.model}" was not found at ${ctx.where}: check the model name and the base URL.`,
      false,
    )
  }
  if (status === 413) {
    return make('bad_request', 'The conversation is too large to send to the model.', false)
  }
  if (status === 408 || status === 409 || (status !== undefined && status >= 500) || status === undefined) {
    const what =
      status === undefined
        ? 'The model API reported an error while answering.'
        : `The model API failed (HTTP ${status}).`
    return make('server', what, true)
  }
  return make('bad_request', `The model API refused the request (HTTP ${status}).`, false)
}

function describeCause(e: Error): string {
  let cur: unknown = e
  for (let depth = 0; depth < 5 && cur instanceof Error; depth++) {
    const code = (cur as NodeJS.ErrnoException).code
    switch (code) {
      case 'ECONNREFUSED':
        return 'connection refused: nothing is listening there'
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
        return 'the host name could not be resolved'
      case 'ECONNRESET':
      case 'UND_ERR_SOCKET':
        return 'the connection was reset'
      case 'ETIMEDOUT':
      case 'UND_ERR_CONNECT_TIMEOUT':
        return 'the connection timed out'
      case 'CERT_HAS_EXPIRED':
      case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
      case 'SELF_SIGNED_CERT_IN_CHAIN':
        return 'the server certificate was not trusted'
      default:
        break
    }
    cur = cur.cause
  }
  const message =
    e.message && e.message !== 'Connection error.' ? e.message : (e.cause as Error | undefined)?.message
  return message ?? ''
}

function retryReason(error: ModelError): RetryReason {
  switch (error.kind) {
    case 'overloaded':
      return 'overloaded'
    case 'rate_limit':
      return 'rate_limited'
    case 'network':
      return 'connection_lost'
    default:
      return 'server_error'
  }
}

/** "14:32": the minute after `at`, in local time, so "try again after" it is never too early. */
export function clockTime(at: number): string {
  const d = new Date(Math.ceil(at / 60_000) * 60_000)
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`
}

/** The last failure after retries, with how many attempts it took, or when it can be tried again. */
function finalError(error: ModelError, retries: number): ModelError {
  if (error.retryable && error.retryAfterMs !== undefined && error.retryAfterMs > MAX_RETRY_AFTER_MS) {
    const retryAt = Date.now() + error.retryAfterMs
    const out = new ModelError(
      error.kind,
      `${error.message.replace(/\.$/, '')}. It asked to wait longer than Lanes waits on its own: try again after ${clockTime(retryAt)} (continue the run then).`,
      {
        ...(error.status !== undefined ? { status: error.status } : {}),
        retryable: true,
        retryAfterMs: error.retryAfterMs,
        cause: error.cause ?? error,
      },
    )
    out.retryAt = retryAt
    return out
  }
  if (retries === 0 || !error.retryable) return error
  const extra =
    error.kind === 'rate_limit' || error.kind === 'overloaded'
      ? ` Tried ${retries + 1} times; wait a minute and continue the run.`
      : ` Tried ${retries + 1} times.`
  const out = new ModelError(error.kind, `${error.message}${extra}`, {
    ...(error.status !== undefined ? { status: error.status } : {}),
    retryable: error.retryable,
    cause: error.cause ?? error,
  })
  return out
}

/** A failure after content started: never retried; it carries what was received. */
function midStreamError(error: ModelError, partial: TurnResult): ModelError {
  const out = new ModelError(
    error.kind,
    `The model's answer broke off. ${error.message} What it had sent before that is kept; continue the run to try again.`,
    { ...(error.status !== undefined ? { status: error.status } : {}), retryable: false, cause: error },
  )
  out.partial = partial
  return out
}
