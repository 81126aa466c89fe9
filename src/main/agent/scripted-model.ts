import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { parseScenario, Scenario, type ScenarioTurn } from './scenario'
import { CacheSimulator } from './scripted/cache'
import { errorBody, errorTypeFor } from './scripted/errors'
import { Recorder } from './scripted/recorder'
import { arrayOf } from './scripted/shared'
import { requestProblem, ResponseLedger } from './scripted/validate'
import { answerTurn, messageContent, stopReasonOf, streamTurn, wireBlocks } from './scripted/wire'

/**
 * The scripted model (DESIGN 9): a plain node:http server that speaks the Messages API well enough for the real
 * `@anthropic-ai/sdk` to stream from it. Each POST /v1/messages plays the next scripted turn.
 *
 * Choices worth knowing when writing a scenario:
 * - A "token" is 4 characters (Unicode code points), the usual rule of thumb for English and code. Pacing
 *   (`tokensPerSecond`) and the reported `output_tokens` both count in those tokens. Unpaced streams send
 *   deltas of 2 tokens (bigger for very large blocks, so one block never takes more than 4096 events).
 * - `firstTokenMs` is the wait between `message_start` (sent at once, as the real API does when the request
 *   is accepted) and the first content block.
 * - `stop: "max_tokens"` cuts the LAST block halfway: mid-text for a text block, and for a tool block at a
 *   point where the arguments are not valid JSON (a cut-off call must never look complete). Like the real
 *   API, the cut block still gets its `content_block_stop`, then `message_delta` says `max_tokens`: the
 *   engine knows the call is cut from the stop reason, not from a missing stop event.
 * - `failAfterBlocks: N` sends N complete blocks, then `event: error` (overloaded_error) and ends the
 *   response; `closeAfterBlocks: N` destroys the socket instead. With `failMidBlock` the break lands halfway
 *   through block N+1, which then never gets its `content_block_stop`.
 * - Tool-use ids are `toolu_t<turn>m<messages>b<block>`: the request number, the number of messages in the
 *   request and the block index. Stable across runs of the same scenario, and unique within a conversation
 *   even across servers: a session continued by a new server (which starts counting requests at 1 again)
 *   sends a longer conversation than any request the old one answered.
 * - Requests the real API would refuse are refused the same way (HTTP 400 invalid_request_error), unless the
 *   scenario sets `validateRequests: false`; such a request does not consume a turn. `strict` (the CLI's
 *   `--strict`) adds the checks that need what this server answered before: thinking blocks sent back
 *   unchanged, no assistant prefill, no whitespace-only text, no cache_control on thinking.
 * - `http: { status, retryAfter, times }` and `errorBeforeContent` answer requests for a turn with an error
 *   before serving it; those requests do not consume the turn.
 *
 * The parts: scripted/wire.ts (a turn on the wire), scripted/validate.ts (the API's request rules),
 * scripted/cache.ts (prompt caching usage), scripted/recorder.ts (`--record`).
 */

export interface ScriptedModelOptions {
  scenario: Scenario
  /** 0 or absent: a free port. */
  port?: number
  /** Every request body received is appended here as one JSON line, before the answer starts. */
  recordFile?: string
  host?: '127.0.0.1'
  /** Refuse, as the API does, requests that break the rules that need this server's memory (see above). */
  strict?: boolean
  /** Called once per POST /v1/messages after it is answered or rejected (the CLI logs with it). */
  onRequest?: (info: RequestInfo) => void
  /**
   * Chooses every turn from the request instead of the scenario's list (the demo, which answers the task in
   * the conversation). The scenario then only carries its settings.
   */
  respond?: (request: unknown) => Promise<ScenarioTurn>
}

export interface RequestInfo {
  /** 1-based turn number played, or null when the request was rejected before taking a turn. */
  turn: number | null
  status: number
  note: string
}

export interface ScriptedModel {
  baseUrl: string
  /** Every request body received, parsed, in arrival order. */
  requests: unknown[]
  close(): Promise<void>
}

const MAX_BODY_BYTES = 64 * 1024 * 1024
const EXHAUSTED_TEXT = 'The scripted conversation has no more turns, so I am stopping here.'

export async function startScriptedModel(opts: ScriptedModelOptions): Promise<ScriptedModel> {
  const checked = Scenario.safeParse(opts.scenario)
  if (!checked.success) {
    const parsed = parseScenario(opts.scenario)
    throw new Error(parsed.ok ? 'The scenario is not valid.' : parsed.error)
  }
  const scenario = checked.data
  const validate = scenario.validateRequests !== false
  const strict = validate && (opts.strict === true || scenario.strict === true)
  const ledger = new ResponseLedger()
  /** Per scripted turn: how many `http` error answers it gave, and whether it sent its error event. */
  const httpErrorsGiven = new Map<number, number>()
  const errorEventGiven = new Set<number>()
  const requests: unknown[] = []
  const recorder = opts.recordFile ? await Recorder.open(opts.recordFile) : null
  const cache = new CacheSimulator()
  const sockets = new Set<Socket>()
  const closing = new AbortController()
  let turnsServed = 0

  const report = (info: RequestInfo): void => {
    try {
      opts.onRequest?.(info)
    } catch {
      // A logging callback must not break the answer.
    }
  }

  const handleMessages = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const text = await readBody(req)
    if (text === null) {
      sendJson(res, 413, errorBody('request_too_large'))
      report({ turn: null, status: 413, note: 'request body too large' })
      return
    }
    let body: unknown
    try {
      body = JSON.parse(text) as unknown
    } catch (e) {
      sendJson(
        res,
        400,
        errorBody('invalid_request_error', `The request body is not valid JSON: ${(e as Error).message}`),
      )
      report({ turn: null, status: 400, note: 'body is not JSON' })
      return
    }
    requests.push(body)
    if (recorder) await recorder.append(body)
    const betas = String(req.headers['anthropic-beta'] ?? '')
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b !== '')
    const problem =
      betaProblem(betas, body, scenario.rejectBetas ?? []) ??
      (validate ? requestProblem(body, strict ? { ledger } : undefined) : null)
    if (problem !== null) {
      sendJson(res, 400, errorBody('invalid_request_error', problem))
      report({ turn: null, status: 400, note: problem })
      return
    }
    const request = body as Record<string, unknown>
    const computed = cache.usage(request)
    const size =
      computed.input_tokens + computed.cache_creation_input_tokens + computed.cache_read_input_tokens
    if (scenario.contextWindow !== undefined && size > scenario.contextWindow) {
      const message = `prompt is too long: ${size} tokens > ${scenario.contextWindow} maximum`
      sendJson(res, 400, errorBody('invalid_request_error', message))
      report({ turn: null, status: 400, note: message })
      return
    }
    const next = turnsServed + 1
    const scripted = opts.respond ? await opts.respond(request) : scenario.turns[next - 1]
    const turn: ScenarioTurn = scripted ?? { blocks: [{ text: EXHAUSTED_TEXT }], stop: 'end_turn' }
    const given = httpErrorsGiven.get(next) ?? 0
    if (turn.http !== undefined && given < (turn.http.times ?? 1)) {
      httpErrorsGiven.set(next, given + 1)
      const headers: Record<string, string> = {}
      if (turn.http.retryAfter !== undefined) headers['retry-after'] = String(turn.http.retryAfter)
      const body = errorBody(errorTypeFor(turn.http.status), turn.errorMessage, turn.http.errorCode)
      sendJson(res, turn.http.status, body, headers)
      report({
        turn: null,
        status: turn.http.status,
        note: `scripted HTTP ${turn.http.status} before turn ${next}`,
      })
      return
    }
    const errorFirst = turn.errorBeforeContent === true && !errorEventGiven.has(next)
    if (errorFirst) errorEventGiven.add(next)
    const turnNumber = errorFirst ? next : ++turnsServed
    if (turn.httpStatus !== undefined) {
      const headers: Record<string, string> = {}
      if (turn.retryAfter !== undefined) headers['retry-after'] = String(turn.retryAfter)
      sendJson(res, turn.httpStatus, errorBody(errorTypeFor(turn.httpStatus), turn.errorMessage), headers)
      report({ turn: turnNumber, status: turn.httpStatus, note: 'scripted HTTP error' })
      return
    }
    const model = typeof request.model === 'string' ? request.model : 'scripted'
    const usage = turn.usage
      ? { input_tokens: turn.usage.input_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
      : computed
    const signal = AbortSignal.any([closing.signal, closedSignal(res)])
    const play = request.stream === true ? streamTurn : answerTurn
    const idPrefix = `toolu_t${turnNumber}m${arrayOf(request.messages).length}`
    if (!errorFirst) {
      ledger.add({ content: messageContent(wireBlocks(turn, idPrefix)), stopReason: stopReasonOf(turn) })
    }
    await play(res, {
      turn,
      turnNumber,
      idPrefix,
      model,
      usage,
      signal,
      errorBeforeContent: errorFirst,
      requestId: requestId(),
    })
    report({
      turn: errorFirst ? null : turnNumber,
      status: 200,
      note: errorFirst
        ? `scripted error event before turn ${turnNumber}`
        : scripted
          ? `${stopReasonOf(turn)}, ${turn.blocks.length} block(s)`
          : 'script exhausted: end_turn',
    })
  }

  const server = createServer((req, res) => {
    res.on('error', () => undefined)
    const path = (req.url ?? '/').split('?')[0]
    if (req.method === 'POST' && path === '/v1/messages') {
      handleMessages(req, res).catch((e: unknown) => {
        if (!res.headersSent)
          sendJson(res, 500, errorBody('api_error', `Scripted model failure: ${String(e)}`))
        else res.destroy()
      })
      return
    }
    req.resume()
    sendJson(
      res,
      404,
      errorBody('not_found_error', `${req.method ?? 'GET'} ${path} is not served by the scripted model.`),
    )
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })

  const host = opts.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      server.off('listening', onListening)
      void recorder?.close()
      reject(
        new Error(
          e.code === 'EADDRINUSE'
            ? `Port ${opts.port ?? 0} on ${host} is already in use; choose another with --port, or 0 for a free one.`
            : `The scripted model could not listen on ${host}:${opts.port ?? 0}: ${e.message}`,
        ),
      )
    }
    const onListening = (): void => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(opts.port ?? 0, host)
  })
  const { port } = server.address() as AddressInfo

  let closed: Promise<void> | null = null
  return {
    baseUrl: `http://${host}:${port}`,
    requests,
    close(): Promise<void> {
      closed ??= (async () => {
        closing.abort()
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
        for (const socket of sockets) socket.destroy()
        await stopped
        await recorder?.close()
      })()
      return closed
    },
  }
}

/**
 * The API's answer to betas it does not know, and to `context_management` sent without the beta that enables
 * compaction (the field is then "extra input").
 */
function betaProblem(betas: string[], body: unknown, rejected: readonly string[]): string | null {
  const unknown = betas.filter((b) => rejected.includes(b))
  if (unknown.length > 0) {
    return `Unexpected value(s) \`${unknown.join(', ')}\` for the \`anthropic-beta\` header. Please consult our documentation at docs.claude.com or try again without the header.`
  }
  const cm = (body as { context_management?: { edits?: { type?: unknown }[] } } | null)?.context_management
  const edits = Array.isArray(cm?.edits) ? cm.edits : []
  if (edits.some((e) => e?.type === 'compact_20260112') && !betas.includes('compact-2026-01-12')) {
    return 'context_management.edits.0: compact_20260112 requires the `compact-2026-01-12` beta header.'
  }
  if (
    edits.some((e) => e?.type === 'clear_tool_uses_20250919') &&
    !betas.includes('context-management-2025-06-27')
  ) {
    return 'context_management: Extra inputs are not permitted (the context-management-2025-06-27 beta header enables it).'
  }
  return null
}

function closedSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  res.once('close', () => controller.abort())
  return controller.signal
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) {
      req.resume()
      return null
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'request-id': requestId(),
    ...headers,
  })
  res.end(body)
}

let requestCounter = 0
function requestId(): string {
  return `req_scripted_${(++requestCounter).toString().padStart(6, '0')}`
}
