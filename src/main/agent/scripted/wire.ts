import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AnyScenarioBlock, ScenarioTurn, ToolBlock } from '../scenario'
import type { SimulatedUsage } from './cache'
import { errorBody } from './errors'
import { CHARS_PER_TOKEN, tokensOf } from './shared'

/**
 * One scripted turn on the wire: the SSE events of the Messages API streaming protocol (or, for
 * `stream: false`, the whole message as JSON), built from the scenario's blocks.
 */

const UNPACED_TOKENS_PER_DELTA = 2
const MAX_DELTAS_PER_BLOCK = 4096
/** A paced stream still sends at most this many tokens in one delta when it falls behind its clock. */
const MAX_PACED_TOKENS_PER_DELTA = 64

/** Stop reasons that cut the last block halfway, as the real API's token limits do. */
const CUTTING_STOPS = new Set(['max_tokens', 'model_context_window_exceeded'])

type Outcome = { kind: 'complete' } | { kind: 'error' | 'close'; afterBlocks: number; midBlock: boolean }

function outcomeOf(turn: ScenarioTurn): Outcome {
  const fail = turn.failAfterBlocks ?? null
  const close = turn.closeAfterBlocks ?? null
  if (fail !== null) return { kind: 'error', afterBlocks: fail, midBlock: turn.failMidBlock === true }
  if (close !== null) return { kind: 'close', afterBlocks: close, midBlock: turn.failMidBlock === true }
  return { kind: 'complete' }
}

function isTool(block: AnyScenarioBlock): block is ToolBlock {
  return 'tool' in block && typeof block.tool === 'string'
}

/** A block as it goes on the wire: its start payload, the text its deltas carry, and what follows them. */
export interface WireBlock {
  start: Record<string, unknown>
  deltaType: 'text_delta' | 'input_json_delta' | 'thinking_delta' | 'compaction_delta' | null
  content: string
  /** A thinking block's signature, sent as one signature_delta after its text. */
  signature?: string
  /** A compaction block's opaque `encrypted_content`. */
  encrypted?: string | null
}

export function stopReasonOf(turn: ScenarioTurn): string {
  return turn.rawStop ?? turn.stop ?? (turn.blocks.some(isTool) ? 'tool_use' : 'end_turn')
}

export function wireBlocks(turn: ScenarioTurn, idPrefix: string): WireBlock[] {
  const cutLast = CUTTING_STOPS.has(stopReasonOf(turn))
  return turn.blocks.map((block, index): WireBlock => {
    const cut = cutLast && index === turn.blocks.length - 1
    if ('compaction' in block) {
      // The documented stream: content_block_start with null content, then one compaction_delta carrying the
      // whole summary and the opaque encrypted_content, then content_block_stop.
      return {
        start: { type: 'compaction', content: null, encrypted_content: null },
        deltaType: 'compaction_delta',
        content: block.compaction ?? '',
        encrypted: block.compaction === null ? null : `enc_${idPrefix}b${index}`,
      }
    }
    if ('redactedThinking' in block) {
      return {
        start: { type: 'redacted_thinking', data: block.redactedThinking },
        deltaType: null,
        content: '',
      }
    }
    if ('thinking' in block) {
      // A thinking block cut by a token limit never gets its signature: it cannot be sent back.
      return {
        start: { type: 'thinking', thinking: '', signature: '' },
        deltaType: 'thinking_delta',
        content: cut ? cutText(block.thinking) : block.thinking,
        ...(cut ? {} : { signature: block.signature }),
      }
    }
    if (!isTool(block)) {
      return {
        start: { type: 'text', text: '' },
        deltaType: 'text_delta',
        content: cut ? cutText(block.text) : block.text,
      }
    }
    const raw = block.rawInput ?? JSON.stringify(block.input === undefined ? {} : block.input)
    return {
      start: { type: 'tool_use', id: block.id ?? `${idPrefix}b${index}`, name: block.tool, input: {} },
      deltaType: 'input_json_delta',
      content: cut ? cutJson(raw) : raw,
    }
  })
}

/** The blocks as the API's final message has them (what a client should send back). */
export function messageContent(blocks: WireBlock[]): Record<string, unknown>[] {
  return blocks.map((b) => {
    switch (b.deltaType) {
      case 'text_delta':
        return { type: 'text', text: b.content }
      case 'thinking_delta':
        return { type: 'thinking', thinking: b.content, signature: b.signature ?? '' }
      case 'compaction_delta':
        return {
          type: 'compaction',
          content: b.encrypted === null ? null : b.content,
          encrypted_content: b.encrypted ?? null,
        }
      case 'input_json_delta': {
        let input: unknown = {}
        try {
          input = JSON.parse(b.content)
        } catch {
          // The real API always answers an object; arguments that are not one become {}.
        }
        if (typeof input !== 'object' || input === null || Array.isArray(input)) input = {}
        return { ...b.start, input }
      }
      case null:
        return { ...b.start }
    }
  })
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

export interface PlayContext {
  turn: ScenarioTurn
  turnNumber: number
  /** Prefix of this turn's tool-use ids. */
  idPrefix: string
  model: string
  usage: SimulatedUsage
  signal: AbortSignal
  /** Send an SSE overloaded_error right after message_start and nothing else. */
  errorBeforeContent: boolean
  requestId: string
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

export async function streamTurn(res: ServerResponse, ctx: PlayContext): Promise<void> {
  const { turn, signal } = ctx
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': ctx.requestId,
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
  const ping = (): Promise<boolean> => (turn.ping ? send('ping', { type: 'ping' }) : Promise.resolve(true))

  const blocks = wireBlocks(turn, ctx.idPrefix)
  const outcome = outcomeOf(turn)
  const tps = turn.tokensPerSecond ?? null
  let outputTokens = 0

  const started = await send('message_start', {
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
  })
  if (!started) return
  if (ctx.errorBeforeContent) {
    await send('error', JSON.parse(errorBody('overloaded_error', turn.errorMessage)))
    res.end()
    return
  }
  if (!(await send('ping', { type: 'ping' })) || !(await wait(turn.firstTokenMs ?? 0, signal))) return

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
          : block.deltaType === 'thinking_delta'
            ? { type: 'thinking_delta', thinking: piece }
            : { type: 'input_json_delta', partial_json: piece }
      if (!(await send('content_block_delta', { type: 'content_block_delta', index, delta }))) return false
      if (!(await ping())) return false
    }
    if (block.signature !== undefined) {
      const delta = { type: 'signature_delta', signature: block.signature }
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
    if (block.deltaType === 'compaction_delta') {
      const delta = {
        type: 'compaction_delta',
        content: block.encrypted === null ? null : block.content,
        encrypted_content: block.encrypted ?? null,
      }
      outputTokens += tokensOf(block.content)
      if (!(await send('content_block_delta', { type: 'content_block_delta', index, delta }))) return
      if (failHere) return fail()
      if (!(await send('content_block_stop', { type: 'content_block_stop', index }))) return
      continue
    }
    const cps = Array.from(block.content)
    if (!(await streamContent(index, block, failHere ? cps.slice(0, Math.floor(cps.length / 2)) : cps)))
      return
    if (failHere) return fail()
    if (!(await send('content_block_stop', { type: 'content_block_stop', index }))) return
    if (!(await ping())) return
  }
  if (outcome.kind !== 'complete') return fail()

  const stop = stopReasonOf(turn)
  const delivered =
    (await send('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stop, stop_sequence: null, ...stopDetailsOf(turn) },
      usage: { output_tokens: Math.max(1, outputTokens) },
    })) && (await send('message_stop', { type: 'message_stop' }))
  if (delivered) res.end()
}

function stopDetailsOf(turn: ScenarioTurn): { stop_details?: Record<string, unknown> | null } {
  if (stopReasonOf(turn) !== 'refusal') return {}
  const d = turn.stopDetails
  return {
    stop_details: { type: 'refusal', category: d?.category ?? null, explanation: d?.explanation ?? null },
  }
}

/** `stream: false`: the whole message as JSON, after the time the stream would have taken. */
export async function answerTurn(res: ServerResponse, ctx: PlayContext): Promise<void> {
  const { turn, signal } = ctx
  const blocks = wireBlocks(turn, ctx.idPrefix)
  const outcome = outcomeOf(turn)
  const outputTokens = blocks.reduce((sum, b) => sum + tokensOf(b.content), 0)
  const seconds = turn.tokensPerSecond ? outputTokens / turn.tokensPerSecond : 0
  const json = (status: number, body: string): void => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': ctx.requestId })
    res.end(body)
  }
  if (ctx.errorBeforeContent) return json(529, errorBody('overloaded_error', turn.errorMessage))
  if (!(await wait((turn.firstTokenMs ?? 0) + seconds * 1000, signal))) return
  if (outcome.kind === 'error') return json(529, errorBody('overloaded_error', turn.errorMessage))
  if (outcome.kind === 'close') {
    res.socket?.destroy()
    return
  }
  json(
    200,
    JSON.stringify({
      id: messageId(ctx.turnNumber),
      type: 'message',
      role: 'assistant',
      model: ctx.model,
      content: messageContent(blocks),
      stop_reason: stopReasonOf(turn),
      stop_sequence: null,
      ...stopDetailsOf(turn),
      usage: { ...ctx.usage, output_tokens: Math.max(1, outputTokens) },
    }),
  )
}
