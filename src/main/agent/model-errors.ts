import { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk'
import type { RetryReason, RunFailureKind } from '../../shared/events'
import type { TurnResult } from './model-stream'

/**
 * The model client's failures and retry policy (model.ts): what the SDK or fetch threw becomes a ModelError a
 * person can act on, with whether and how long to wait before trying again.
 */

const MAX_BACKOFF_MS = 20_000
/** A `retry-after` longer than this is not waited for: the user gets the error and can continue later. */
const MAX_RETRY_AFTER_MS = 60_000

/**
 * auth: the key was refused or is missing; rate_limit / overloaded: try again later; network: the server was
 * not reached or the connection broke; bad_request: the request itself was refused (model name, size);
 * server: the API failed; aborted: the user stopped.
 */
export type ModelErrorKind =
  | 'auth'
  | 'rate_limit'
  | 'overloaded'
  | 'network'
  | 'bad_request'
  | 'server'
  | 'aborted'
  /** The request does not fit the model's context window ("prompt is too long"): compact and send it again. */
  | 'context_full'

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
  /** A network failure before any answer came: no connection was ever made, so none was "lost". */
  readonly unreachable: boolean

  constructor(
    kind: ModelErrorKind,
    message: string,
    extra: {
      status?: number
      retryable?: boolean
      retryAfterMs?: number
      cause?: unknown
      unreachable?: boolean
    } = {},
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
    this.unreachable = extra.unreachable ?? false
  }
}

export function abortError(): ModelError {
  return new ModelError('aborted', 'The request to the model was stopped.')
}

export function stalledError(ms: number, cause?: unknown): ModelError {
  return new ModelError(
    'network',
    `The model stopped sending data for ${Math.round(ms / 1000)} s, so the connection was dropped.`,
    { retryable: true, ...(cause !== undefined ? { cause } : {}) },
  )
}

/** Exponential backoff with jitter (50-100 % of the step), or the server's own retry-after. */
export function retryDelay(retry: number, baseMs: number, retryAfterMs: number | undefined): number | null {
  if (retryAfterMs !== undefined) return retryAfterMs > MAX_RETRY_AFTER_MS ? null : retryAfterMs
  const step = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** retry)
  return Math.round(step * (0.5 + Math.random() * 0.5))
}

export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
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
export function classify(
  e: unknown,
  ctx: {
    where: string
    model: string
    started: boolean
    /** The API had answered (status and headers) before the failure; `started` implies it. */
    connected?: boolean
  },
): ModelError {
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
    const connected = ctx.connected ?? ctx.started
    const message = connected
      ? `The connection to the model was lost${cause ? ` (${cause})` : ''}.`
      : `Could not reach the model API at ${ctx.where}${cause ? ` (${cause})` : ''}. Check the internet connection, a proxy or firewall, or the base URL in Settings.`
    return new ModelError('network', message, { retryable: true, cause: e, unreachable: !connected })
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
    return make('context_full', 'The conversation is too large to send to the model.', false)
  }
  // "prompt is too long: 201234 tokens > 200000 maximum": the API's words for a request over the window.
  if (
    status === 400 &&
    /prompt is too long|exceeds? the (model's )?context window|too many (input )?tokens/i.test(
      apiMessage ?? '',
    )
  ) {
    return make('context_full', 'The conversation no longer fits in the model’s context window.', false)
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

export function retryReason(error: ModelError): RetryReason {
  switch (error.kind) {
    case 'overloaded':
      return 'overloaded'
    case 'rate_limit':
      return 'rate_limited'
    case 'network':
      return error.unreachable ? 'unreachable' : 'connection_lost'
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
export function finalError(error: ModelError, retries: number): ModelError {
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
export function midStreamError(error: ModelError, partial: TurnResult): ModelError {
  const out = new ModelError(
    error.kind,
    `The model's answer broke off. ${error.message} What it had sent before that is kept; continue the run to try again.`,
    { ...(error.status !== undefined ? { status: error.status } : {}), retryable: false, cause: error },
  )
  out.partial = partial
  return out
}

/** How a model failure ends a run: the message for the user, its kind, and when it can be tried again. */
export function describeModelError(e: unknown): { message: string; kind: RunFailureKind; retryAt?: number } {
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
