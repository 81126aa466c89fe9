import { createHash, type Hash } from 'node:crypto'
import { once } from 'node:events'
import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { parseScenario, Scenario, type ScenarioTurn, type TextBlock, type ToolBlock } from './scenario'

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
 *   scenario sets `validateRequests: false`; such a request does not consume a turn.
 */

export interface ScriptedModelOptions {
  scenario: Scenario
  /** 0 or absent: a free port. */
  port?: number
  /** Every request body received is appended here as one JSON line, before the answer starts. */
  recordFile?: string
  host?: '127.0.0.1'
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

const CHARS_PER_TOKEN = 4
const UNPACED_TOKENS_PER_DELTA = 2
const MAX_DELTAS_PER_BLOCK = 4096
/** A paced stream still sends at most this many tokens in one delta when it falls behind its clock. */
const MAX_PACED_TOKENS_PER_DELTA = 64
const MAX_BODY_BYTES = 64 * 1024 * 1024
const MAX_CACHE_BREAKPOINTS = 4
const EXHAUSTED_TEXT = 'The scripted conversation has no more turns, so I am stopping here.'

/** Anthropic error `type` for an HTTP status, as the real API names them. */
function errorTypeFor(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error'
    case 401:
      return 'authentication_error'
    case 402:
      return 'billing_error'
    case 403:
      return 'permission_error'
    case 404:
      return 'not_found_error'
    case 413:
      return 'request_too_large'
    case 429:
      return 'rate_limit_error'
    case 504:
      return 'timeout_error'
    case 529:
      return 'overloaded_error'
    default:
      return 'api_error'
  }
}

const DEFAULT_ERROR_MESSAGES: Record<string, string> = {
  invalid_request_error: 'Invalid request.',
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found.',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit.',
  timeout_error: 'Request timed out.',
  overloaded_error: 'Overloaded',
  api_error: 'Internal server error',
}

function errorBody(type: string, message?: string): string {
  return JSON.stringify({
    type: 'error',
    error: { type, message: message ?? DEFAULT_ERROR_MESSAGES[type] ?? type },
  })
}

type Outcome = { kind: 'complete' } | { kind: 'error' | 'close'; afterBlocks: number; midBlock: boolean }

function outcomeOf(turn: ScenarioTurn): Outcome {
  const fail = turn.failAfterBlocks ?? null
  const close = turn.closeAfterBlocks ?? null
  if (fail !== null) return { kind: 'error', afterBlocks: fail, midBlock: turn.failMidBlock === true }
  if (close !== null) return { kind: 'close', afterBlocks: close, midBlock: turn.failMidBlock === true }
  return { kind: 'complete' }
}

function isTool(block: TextBlock | ToolBlock): block is ToolBlock {
  return 'tool' in block && typeof block.tool === 'string'
}

/** A block as it goes on the wire: its start payload and the full text its deltas carry. */
interface WireBlock {
  start: Record<string, unknown>
  deltaType: 'text_delta' | 'input_json_delta'
  content: string
}

function wireBlocks(turn: ScenarioTurn, idPrefix: string): WireBlock[] {
  const stop = stopReasonOf(turn)
  return turn.blocks.map((block, index) => {
    const last = index === turn.blocks.length - 1
    if (!isTool(block)) {
      const text = last && stop === 'max_tokens' ? cutText(block.text) : block.text
      return { start: { type: 'text', text: '' }, deltaType: 'text_delta', content: text }
    }
    const raw = block.rawInput ?? JSON.stringify(block.input === undefined ? {} : block.input)
    return {
      start: { type: 'tool_use', id: block.id ?? `${idPrefix}b${index}`, name: block.tool, input: {} },
      deltaType: 'input_json_delta',
      content: last && stop === 'max_tokens' ? cutJson(raw) : raw,
    }
  })
}

function stopReasonOf(turn: ScenarioTurn): 'tool_use' | 'end_turn' | 'max_tokens' {
  return turn.stop ?? (turn.blocks.some(isTool) ? 'tool_use' : 'end_turn')
}

function cutText(text: string): string {
  const cps = Array.from(text)
  return cps.slice(0, Math.floor(cps.length / 2)).join('')
}

/** Half the arguments, moved back until the prefix does not parse: a cut call never looks complete. */
function cutJson(raw: string): string {
  const cps = Array.from(raw.trimEnd())
  for (let end = Math.floor(cps.length / 2); end > 0; end--) {
    const prefix = cps.slice(0, end).join('')
    try {
      JSON.parse(prefix)
    } catch {
      return prefix
    }
  }
  return ''
}

function tokensOf(text: string): number {
  return Math.ceil(Array.from(text).length / CHARS_PER_TOKEN)
}

/**
 * Token counts as the real API reports them, with prompt caching simulated: the prefix up to each block
 * marked `cache_control` (tools, then system, then messages) is "written" the first time it is seen and
 * "read" after that, so the usage a client records behaves like the real thing.
 */
class CacheSimulator {
  private readonly seen = new Set<string>()

  usage(body: Record<string, unknown>): {
    input_tokens: number
    cache_creation_input_tokens: number
    cache_read_input_tokens: number
  } {
    const hash = createHash('sha256')
    let chars = 0
    const breakpoints: { digest: string; chars: number }[] = []
    const feed = (part: unknown, h: Hash): void => {
      const text = JSON.stringify(part) ?? ''
      chars += text.length
      h.update(text)
      if (hasCacheControl(part)) breakpoints.push({ digest: h.copy().digest('hex'), chars })
    }
    for (const tool of arrayOf(body.tools)) feed(tool, hash)
    const system = body.system
    if (typeof system === 'string') feed(system, hash)
    else for (const block of arrayOf(system)) feed(block, hash)
    for (const message of arrayOf(body.messages)) {
      const m = message as { role?: unknown; content?: unknown }
      feed(m.role, hash)
      if (typeof m.content === 'string') feed(m.content, hash)
      else for (const block of arrayOf(m.content)) feed(block, hash)
    }
    let read = 0
    for (const bp of breakpoints) if (this.seen.has(bp.digest)) read = bp.chars
    const cached = breakpoints.at(-1)?.chars ?? 0
    for (const bp of breakpoints) this.seen.add(bp.digest)
    const toTokens = (n: number): number => Math.ceil(n / CHARS_PER_TOKEN)
    return {
      input_tokens: Math.max(1, toTokens(chars - cached)),
      cache_creation_input_tokens: toTokens(cached - read),
      cache_read_input_tokens: toTokens(read),
    }
  }
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

function hasCacheControl(part: unknown): boolean {
  return typeof part === 'object' && part !== null && 'cache_control' in part && part.cache_control != null
}

/**
 * The checks the real Messages API makes that an agent loop can get wrong. Returns the API's error message,
 * or null when the request is acceptable.
 */
function requestProblem(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'The request body must be a JSON object.'
  const b = body as Record<string, unknown>
  if (typeof b.model !== 'string' || b.model.length === 0) return 'model: Field required'
  if (typeof b.max_tokens !== 'number' || !Number.isInteger(b.max_tokens) || b.max_tokens < 1) {
    return 'max_tokens: Field required (a positive integer)'
  }
  if (!Array.isArray(b.messages) || b.messages.length === 0)
    return 'messages: at least one message is required'

  let cacheBlocks = 0
  const tools = arrayOf(b.tools)
  const toolNames = new Set<string>()
  for (const [i, tool] of tools.entries()) {
    const name = (tool as { name?: unknown })?.name
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(name)) {
      return `tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`
    }
    if (toolNames.has(name)) return 'tools: Tool names must be unique.'
    toolNames.add(name)
    if (hasCacheControl(tool)) cacheBlocks++
  }
  if (typeof b.system !== 'string' && b.system !== undefined) {
    for (const [i, block] of arrayOf(b.system).entries()) {
      const text = (block as { text?: unknown })?.text
      if (typeof text !== 'string' || text.length === 0)
        return `system.${i}.text: text content blocks must be non-empty`
      if (hasCacheControl(block)) cacheBlocks++
    }
  }

  const messages = b.messages as unknown[]
  const seenToolUseIds = new Set<string>()
  let previousToolUses = new Set<string>()
  for (const [i, raw] of messages.entries()) {
    const message = raw as { role?: unknown; content?: unknown }
    if (message?.role !== 'user' && message?.role !== 'assistant') {
      return `messages.${i}.role: Input should be 'user' or 'assistant'`
    }
    if (typeof message.content !== 'string' && !Array.isArray(message.content)) {
      return `messages.${i}.content: Input should be a valid string or list`
    }
    const isFinal = i === messages.length - 1
    const blocks = (
      typeof message.content !== 'string'
        ? message.content
        : message.content.length > 0
          ? [{ type: 'text', text: message.content }]
          : []
    ) as Record<string, unknown>[]
    if (blocks.length === 0 && !(isFinal && message.role === 'assistant')) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`
    }
    const toolUses = new Set<string>()
    const answered = new Set<string>()
    for (const [j, block] of blocks.entries()) {
      if (typeof block !== 'object' || block === null || typeof block.type !== 'string') {
        return `messages.${i}.content.${j}: each content block must be an object with a "type"`
      }
      if (hasCacheControl(block)) cacheBlocks++
      switch (block.type) {
        case 'text':
          if (typeof block.text !== 'string' || block.text.length === 0) {
            return `messages.${i}.content.${j}.text: text content blocks must be non-empty`
          }
          break
        case 'tool_use': {
          if (message.role !== 'assistant')
            return `messages.${i}.content.${j}: tool_use blocks belong to assistant messages`
          const id = block.id
          if (typeof id !== 'string' || !/^[a-zA-Z0-9_-]+$/.test(id)) {
            return `messages.${i}.content.${j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`
          }
          if (seenToolUseIds.has(id)) return `messages.${i}.content.${j}: \`tool_use\` ids must be unique`
          if (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input)) {
            return `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`
          }
          seenToolUseIds.add(id)
          toolUses.add(id)
          break
        }
        case 'tool_result': {
          const id = block.tool_use_id
          if (typeof id !== 'string' || !previousToolUses.has(id)) {
            return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`
          }
          answered.add(id)
          break
        }
        default:
          break
      }
    }
    const missing = [...previousToolUses].filter((id) => !answered.has(id))
    if (missing.length > 0) {
      return `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
    }
    previousToolUses = toolUses
    if (isFinal && toolUses.size > 0) {
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...toolUses].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
    }
  }
  if (cacheBlocks > MAX_CACHE_BREAKPOINTS) {
    return `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${cacheBlocks}.`
  }
  return null
}

/** Appends request bodies to the record file in arrival order; each line is on disk before the answer starts. */
class Recorder {
  private chain: Promise<void> = Promise.resolve()

  private constructor(private readonly handle: FileHandle) {}

  /** Opened before the server starts, so a file that cannot be written is an error at start, not a 500 later. */
  static async open(file: string): Promise<Recorder> {
    try {
      await mkdir(dirname(file), { recursive: true })
      return new Recorder(await open(file, 'a'))
    } catch (e) {
      throw new Error(`Cannot open the record file ${file}: ${(e as Error).message}`, { cause: e })
    }
  }

  append(body: unknown): Promise<void> {
    const line = `${JSON.stringify(body)}\n`
    const next = this.chain.then(() => this.handle.appendFile(line, 'utf8'))
    this.chain = next.catch(() => undefined)
    return next
  }

  async close(): Promise<void> {
    await this.chain
    await this.handle.close().catch(() => undefined)
  }
}

export async function startScriptedModel(opts: ScriptedModelOptions): Promise<ScriptedModel> {
  const checked = Scenario.safeParse(opts.scenario)
  if (!checked.success) {
    const parsed = parseScenario(opts.scenario)
    throw new Error(parsed.ok ? 'The scenario is not valid.' : parsed.error)
  }
  const scenario = checked.data
  const validate = scenario.validateRequests !== false
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
    const problem = validate ? requestProblem(body) : null
    if (problem !== null) {
      sendJson(res, 400, errorBody('invalid_request_error', problem))
      report({ turn: null, status: 400, note: problem })
      return
    }
    const request = body as Record<string, unknown>
    const turnNumber = ++turnsServed
    const scripted = opts.respond ? await opts.respond(request) : scenario.turns[turnNumber - 1]
    const turn: ScenarioTurn = scripted ?? { blocks: [{ text: EXHAUSTED_TEXT }], stop: 'end_turn' }
    if (turn.httpStatus !== undefined) {
      const headers: Record<string, string> = {}
      if (turn.retryAfter !== undefined) headers['retry-after'] = String(turn.retryAfter)
      sendJson(res, turn.httpStatus, errorBody(errorTypeFor(turn.httpStatus), turn.errorMessage), headers)
      report({ turn: turnNumber, status: turn.httpStatus, note: 'scripted HTTP error' })
      return
    }
    const model = typeof request.model === 'string' ? request.model : 'scripted'
    const usage = cache.usage(request)
    const signal = AbortSignal.any([closing.signal, closedSignal(res)])
    const play = request.stream === true ? streamTurn : answerTurn
    const idPrefix = `toolu_t${turnNumber}m${arrayOf(request.messages).length}`
    await play(res, { turn, turnNumber, idPrefix, model, usage, signal })
    report({
      turn: turnNumber,
      status: 200,
      note: scripted ? `${stopReasonOf(turn)}, ${turn.blocks.length} block(s)` : 'script exhausted: end_turn',
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

interface PlayContext {
  turn: ScenarioTurn
  turnNumber: number
  /** Prefix of this turn's tool-use ids. */
  idPrefix: string
  model: string
  usage: { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number }
  signal: AbortSignal
}

function messageId(turnNumber: number): string {
  return `msg_scripted_${String(turnNumber).padStart(4, '0')}`
}

/** Resolves after `ms`, or at once (false) when the request goes away or the server closes. */
async function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted
  try {
    await sleep(ms, undefined, { signal })
    return true
  } catch {
    return false
  }
}

async function streamTurn(res: ServerResponse, ctx: PlayContext): Promise<void> {
  const { turn, signal } = ctx
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': requestId(),
  })
  res.flushHeaders()

  const write = async (chunk: string): Promise<boolean> => {
    if (signal.aborted || res.writableEnded) return false
    if (!res.write(chunk)) {
      try {
        await once(res, 'drain', { signal })
      } catch {
        return false
      }
    }
    return !signal.aborted
  }
  const send = (event: string, data: unknown): Promise<boolean> =>
    write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)

  const blocks = wireBlocks(turn, ctx.idPrefix)
  const outcome = outcomeOf(turn)
  const tps = turn.tokensPerSecond ?? null
  let outputTokens = 0

  const ok =
    (await send('message_start', {
      type: 'message_start',
      message: {
        id: messageId(ctx.turnNumber),
        type: 'message',
        role: 'assistant',
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...ctx.usage, output_tokens: 1 },
      },
    })) && (await send('ping', { type: 'ping' }))
  if (!ok || !(await wait(turn.firstTokenMs ?? 0, signal))) return

  // The pacing clock: token k is due at `startedAt + k * msPerToken`. Deltas carry every token that is due,
  // so timer granularity and event-loop stalls slow nothing down over a whole stream.
  const startedAt = performance.now()
  const msPerToken = tps === null ? 0 : 1000 / tps
  const streamContent = async (index: number, block: WireBlock, cps: string[]): Promise<boolean> => {
    const unpacedChars =
      Math.max(UNPACED_TOKENS_PER_DELTA, Math.ceil(cps.length / CHARS_PER_TOKEN / MAX_DELTAS_PER_BLOCK)) *
      CHARS_PER_TOKEN
    let pos = 0
    while (pos < cps.length) {
      let chars = unpacedChars
      if (tps !== null) {
        const dueAt = startedAt + outputTokens * msPerToken
        if (!(await wait(dueAt - performance.now(), signal))) return false
        const due = Math.floor((performance.now() - startedAt) / msPerToken) + 1 - outputTokens
        chars = Math.min(Math.max(due, 1), MAX_PACED_TOKENS_PER_DELTA) * CHARS_PER_TOKEN
      }
      const piece = cps.slice(pos, pos + chars).join('')
      pos += chars
      outputTokens += tokensOf(piece)
      const delta =
        block.deltaType === 'text_delta'
          ? { type: 'text_delta', text: piece }
          : { type: 'input_json_delta', partial_json: piece }
      if (!(await send('content_block_delta', { type: 'content_block_delta', index, delta }))) return false
    }
    return true
  }

  const fail = async (): Promise<void> => {
    if (outcome.kind === 'error') {
      await send('error', JSON.parse(errorBody('overloaded_error', turn.errorMessage)))
      res.end()
    } else {
      // Let what was written reach the socket first (an SSE comment, ignored by clients, whose callback says
      // so), then drop the connection without ending the response.
      await new Promise<void>((resolve) => res.write(': closing\n\n', () => resolve()))
      res.socket?.destroy()
    }
  }

  for (const [index, block] of blocks.entries()) {
    const failHere = outcome.kind !== 'complete' && outcome.afterBlocks === index
    if (failHere && !outcome.midBlock) return fail()
    if (
      !(await send('content_block_start', { type: 'content_block_start', index, content_block: block.start }))
    )
      return
    const cps = Array.from(block.content)
    if (!(await streamContent(index, block, failHere ? cps.slice(0, Math.floor(cps.length / 2)) : cps)))
      return
    if (failHere) return fail()
    if (!(await send('content_block_stop', { type: 'content_block_stop', index }))) return
  }
  if (outcome.kind !== 'complete') return fail()

  const delivered =
    (await send('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(turn), stop_sequence: null },
      usage: { output_tokens: Math.max(1, outputTokens) },
    })) && (await send('message_stop', { type: 'message_stop' }))
  if (delivered) res.end()
}

/** `stream: false`: the whole message as JSON, after the time the stream would have taken. */
async function answerTurn(res: ServerResponse, ctx: PlayContext): Promise<void> {
  const { turn, signal } = ctx
  const blocks = wireBlocks(turn, ctx.idPrefix)
  const outcome = outcomeOf(turn)
  const outputTokens = blocks.reduce((sum, b) => sum + tokensOf(b.content), 0)
  const seconds = turn.tokensPerSecond ? outputTokens / turn.tokensPerSecond : 0
  if (!(await wait((turn.firstTokenMs ?? 0) + seconds * 1000, signal))) return
  if (outcome.kind === 'error') {
    sendJson(res, 529, errorBody('overloaded_error', turn.errorMessage))
    return
  }
  if (outcome.kind === 'close') {
    res.socket?.destroy()
    return
  }
  const content = blocks.map((b) => {
    if (b.deltaType === 'text_delta') return { type: 'text', text: b.content }
    let input: unknown = {}
    try {
      input = JSON.parse(b.content)
    } catch {
      // The real API always answers an object; arguments that are not one become {}.
    }
    if (typeof input !== 'object' || input === null || Array.isArray(input)) input = {}
    return { ...b.start, input }
  })
  sendJson(
    res,
    200,
    JSON.stringify({
      id: messageId(ctx.turnNumber),
      type: 'message',
      role: 'assistant',
      model: ctx.model,
      content,
      stop_reason: stopReasonOf(turn),
      stop_sequence: null,
      usage: { ...ctx.usage, output_tokens: Math.max(1, outputTokens) },
    }),
  )
}

const FAKE_MODEL_HELP = `Usage: lanes fake-model --scenario FILE [--port N] [--record FILE]

Serves the scripted Anthropic-compatible model on 127.0.0.1 and prints its base URL on the first line.
  --scenario FILE   the scenario (JSON, see DESIGN section 9)
  --port N          port to listen on (default 0: a free port)
  --record FILE     append every request body received to FILE, one JSON line each
Ctrl+C (SIGINT) or SIGTERM stops it.
`

/**
 * `lanes fake-model`: returns the exit code. 0 after a clean stop by signal, 1 when it cannot start (missing or
 * invalid scenario, port in use), 2 for a usage error, as the rest of the `lanes` command does.
 */
export async function runFakeModelCli(argv: string[]): Promise<number> {
  const fail = (message: string, code = 1): number => {
    process.stderr.write(`lanes fake-model: ${message}\n`)
    return code
  }
  let values: { scenario?: string; port?: string; record?: string; help?: boolean }
  try {
    values = parseArgs({
      args: argv,
      options: {
        scenario: { type: 'string' },
        port: { type: 'string' },
        record: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (e) {
    return fail(`${(e as Error).message}\n${FAKE_MODEL_HELP}`, 2)
  }
  if (values.help) {
    process.stdout.write(FAKE_MODEL_HELP)
    return 0
  }
  if (values.scenario === undefined) return fail(`--scenario FILE is required.\n${FAKE_MODEL_HELP}`, 2)
  let port = 0
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535) {
      return fail(`--port must be a number from 0 to 65535, not "${values.port}".`, 2)
    }
    port = Number(values.port)
  }

  let text: string
  try {
    text = await readFile(values.scenario, 'utf8')
  } catch (e) {
    const err = e as NodeJS.ErrnoException
    const why =
      err.code === 'ENOENT'
        ? 'no such file'
        : err.code === 'EISDIR'
          ? 'it is a folder'
          : err.code === 'EACCES'
            ? 'permission denied'
            : err.message
    return fail(`cannot read the scenario file ${values.scenario}: ${why}.`)
  }
  const parsed = parseScenario(text, `The scenario file ${values.scenario}`)
  if (!parsed.ok) return fail(parsed.error)
  for (const warning of parsed.warnings) process.stderr.write(`lanes fake-model: warning: ${warning}\n`)

  let model: ScriptedModel
  try {
    model = await startScriptedModel({
      scenario: parsed.scenario,
      port,
      ...(values.record !== undefined ? { recordFile: values.record } : {}),
      onRequest: (info) => {
        const turn = info.turn === null ? 'rejected' : `turn ${info.turn}/${parsed.scenario.turns.length}`
        process.stderr.write(`lanes fake-model: ${turn}: HTTP ${info.status}, ${info.note}\n`)
      },
    })
  } catch (e) {
    return fail((e as Error).message)
  }
  process.stdout.write(`${model.baseUrl}\n`)
  process.stderr.write(
    `lanes fake-model: serving ${parsed.scenario.turns.length} scripted turn(s) from ${values.scenario}; Ctrl+C stops it.\n`,
  )
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  await model.close()
  return 0
}
