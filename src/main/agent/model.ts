import Anthropic from '@anthropic-ai/sdk'
import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/beta/messages/messages'
import type {
  MessageCreateParamsStreaming as PlainParams,
  Model,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages'
import { modelContext, type ThinkingSetting } from '../../shared/models'
import type { ToolDefinition } from '../tools/registry'
import {
  abortError,
  classify,
  finalError,
  midStreamError,
  ModelError,
  retryDelay,
  retryReason,
  sleepUnlessAborted,
  stalledError,
} from './model-errors'
import { buildParams, type TurnRequest } from './model-request'
import { sentSignal } from './request-sent'

export type { MessageParam, RetryInfo, TurnRequest } from './model-request'
import { ListenerError, TurnAccumulator, type TurnResult } from './model-stream'

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
 *
 * Its parts: model-request.ts builds the request, model-stream.ts accumulates the stream, model-errors.ts
 * classifies failures and holds the retry policy; this file is the client that runs attempts and retries.
 */

export type { ToolDefinition }
export { clockTime, ModelError, type ModelErrorKind } from './model-errors'
export { apiToolId } from './model-stream'
export type {
  AnswerBlock,
  CompactionContent,
  StreamEvent,
  ThinkingContent,
  ToolUse,
  TurnResult,
} from './model-stream'

/** Newest Sonnet in the SDK's `Model` union. */
export const DEFAULT_MODEL: Model = 'claude-sonnet-5-5'
/** Room for a large write_file in one call; the stream makes a long answer cost nothing until it is used. */
export const DEFAULT_MAX_TOKENS = 32_000
const DEFAULT_MAX_RETRIES = 5
const DEFAULT_RETRY_BASE_MS = 500
/** No event for this long (the API pings well within it) means the connection is dead. */
const DEFAULT_IDLE_TIMEOUT_MS = 120_000
/** With a base URL (the scripted model, a proxy) and no key, the SDK still needs one to send. */
const PLACEHOLDER_KEY = 'lanes-no-key'

export interface ModelClient {
  readonly model: string
  /**
   * The model's context window, and whether the API compacts for it: true until the API refuses the beta or
   * its field (then the engine compacts, for the rest of this client's life).
   */
  readonly context: { readonly window: number; readonly serverCompaction: boolean }
  streamTurn(req: TurnRequest): Promise<TurnResult>
}

export interface ModelClientOptions {
  apiKey?: string
  /** Where requests go; absent: ANTHROPIC_BASE_URL, else the Anthropic API; null: the Anthropic API. */
  baseUrl?: string | null
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
  /** Overrides of shared/models.ts's entry (a gateway with another window; tests). */
  contextWindow?: number
  serverCompaction?: boolean
}

/**
 * A 400 that refuses server-side compaction itself (a model or endpoint without the beta): it names the beta
 * header, a beta name, or the context-management field. The request is then sent again without them.
 */
export function refusesCompaction(error: ModelError): boolean {
  if (error.kind !== 'bad_request' || error.status !== 400) return false
  return /anthropic-beta|compact[-_]2026|context[-_]management|context-management-2025|clear_tool_uses|beta/i.test(
    error.message,
  )
}

export function createModelClient(opts: ModelClientOptions = {}): ModelClient {
  const apiKey = opts.apiKey || process.env.ANTHROPIC_API_KEY || undefined
  const baseUrl =
    opts.baseUrl === null ? undefined : opts.baseUrl || process.env.ANTHROPIC_BASE_URL || undefined
  const model = opts.model || DEFAULT_MODEL
  const maxTokens = opts.maxTokens ?? DEFAULT_MAX_TOKENS
  const maxRetries = Math.max(0, Math.floor(opts.maxRetries ?? DEFAULT_MAX_RETRIES))
  const retryBaseMs = opts.retryBaseDelayMs ?? DEFAULT_RETRY_BASE_MS
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  const where = baseUrl ?? 'https://api.anthropic.com'
  const known = modelContext(model)
  const context = {
    window: opts.contextWindow ?? known.window,
    serverCompaction: opts.serverCompaction ?? known.serverCompaction,
  }

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
    const sent = sentSignal(where, req.onSent)
    let stalled = false
    let idle: NodeJS.Timeout | undefined
    const armIdle = (): void => {
      clearTimeout(idle)
      idle = setTimeout(() => {
        stalled = true
        controller.abort()
      }, idleTimeoutMs)
    }
    // The API answered (status and headers came back): from here a network failure lost a connection.
    let connected = false
    try {
      armIdle()
      // With betas (server-side compaction) through the beta endpoint, which sends them as `anthropic-beta`.
      const api = client as Anthropic
      const stream =
        params.betas !== undefined
          ? await api.beta.messages.create(params, { signal: controller.signal })
          : await api.messages.create(params as unknown as PlainParams, { signal: controller.signal })
      connected = true
      sent.answered()
      for await (const event of stream) {
        armIdle()
        turn.apply(event as RawMessageStreamEvent, req.onEvent)
      }
    } catch (e) {
      if (e instanceof ListenerError) throw e
      if (req.signal.aborted) throw abortError()
      if (stalled) throw stalledError(idleTimeoutMs, e)
      throw e instanceof ModelError
        ? e
        : classify(e, { where, model, started: turn.started, connected: connected || turn.started })
    } finally {
      clearTimeout(idle)
      req.signal.removeEventListener('abort', onAbort)
      sent.ended()
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
    context,
    async streamTurn(req: TurnRequest): Promise<TurnResult> {
      if (setupError) throw setupError
      if (req.signal.aborted) throw abortError()
      let params = buildParams(
        model,
        maxTokens,
        opts.thinking,
        req,
        context.serverCompaction ? req.compactAt : undefined,
      )
      for (let retry = 0; ; retry++) {
        const turn = new TurnAccumulator(req.usedToolIds)
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
          // The endpoint does not compact: from now on the engine does; this request goes again without it.
          if (params.betas !== undefined && refusesCompaction(error)) {
            context.serverCompaction = false
            params = buildParams(model, maxTokens, opts.thinking, req)
            retry--
            continue
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
