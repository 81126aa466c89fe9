import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk'
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  Model,
  RawMessageStreamEvent,
  StopReason,
  Tool,
} from '@anthropic-ai/sdk/resources/messages'
import type { Usage } from '../../shared/events'
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
 * `ModelError` carrying what was received, and the engine decides.
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

/** Assistant content for the conversation. Tool input is the parsed arguments, or {} when they do not parse. */
export type ContentBlock =
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
  stopReason: StopReason | null
  usage: Usage
}

export interface TurnRequest {
  system: string
  tools: ToolDefinition[]
  messages: MessageParam[]
  signal: AbortSignal
  onEvent: (event: StreamEvent) => void
  /** Told before each retry, so the UI can say why nothing is happening. */
  onRetry?: (info: { attempt: number; delayMs: number; error: ModelError }) => void
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
      const params = buildParams(model, maxTokens, req)
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
          req.onRetry?.({ attempt: retry + 1, delayMs: delay, error })
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

function buildParams(model: string, maxTokens: number, req: TurnRequest): MessageCreateParamsStreaming {
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
    messages: withCacheBreakpoints(req.messages),
  }
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
    | { kind: 'other' }
  >()
  private stopReason: StopReason | null = null
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
        } else if (block.type === 'tool_use') {
          const id = String(block.id)
          const name = String(block.name)
          this.blocks.set(index, { kind: 'tool', id, name, raw: '', startInput: block.input, closed: false })
          emit({ type: 'tool_start', index, id, name })
        } else {
          // Thinking and server-tool blocks are not requested; if a proxy sends them they are left out.
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
        }
        break
      }
      case 'content_block_stop': {
        const block = this.blocks.get(event.index)
        if (!block || block.kind === 'other') break
        block.closed = true
        if (block.kind === 'tool') {
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
      case 'message_delta':
        if (event.delta?.stop_reason !== undefined) this.stopReason = event.delta.stop_reason
        this.readUsage(event.usage)
        break
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
          // The API refuses empty text blocks in a conversation.
          if (block.text.length > 0) content.push({ type: 'text', text: block.text })
          break
        case 'tool':
          content.push({ type: 'tool_use', id: block.id, name: block.name, input: parseObject(block.raw) })
          toolUses.push({ id: block.id, name: block.name, rawInput: block.raw, index, closed: block.closed })
          break
        case 'other':
          break
      }
    }
    return { content, toolUses, stopReason: this.stopReason, usage: { ...this.usage } }
  }
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

/** The last failure after retries, with how many attempts it took. */
function finalError(error: ModelError, retries: number): ModelError {
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
