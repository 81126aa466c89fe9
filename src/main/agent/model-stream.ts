import type { RawMessageStreamEvent, StopReason } from '@anthropic-ai/sdk/resources/messages'
import type { StopDetails, Usage } from '../../shared/events'
import { apiToolId } from './model-request'

/**
 * Stream accumulation for the model client (model.ts): the raw SSE events of one attempt become the turn's
 * blocks, the raw argument text of every tool call, the stop and the usage. Argument text is kept exactly as
 * received; parsing it can never fail the turn (DESIGN 3.1).
 */

export type StreamEvent =
  | { type: 'text'; index: number; text: string }
  | { type: 'tool_start'; index: number; id: string; name: string }
  | { type: 'tool_input'; index: number; partialJson: string }
  /** For a tool block, with its id, name and the full raw argument text as received. */
  | { type: 'block_stop'; index: number; id?: string; name?: string; rawInput?: string }
  /** A thinking block closed, complete with its signature (or a redacted one with its data). */
  | { type: 'thinking'; index: number; block: ThinkingContent }
  /** The API compacted the conversation (server-side compaction): the block as it must go back. */
  | { type: 'compaction'; index: number; block: CompactionContent }

export type ThinkingContent =
  { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string }

/**
 * A `compaction` block (https://platform.claude.com/docs/en/build-with-claude/compaction). The SDK's
 * `BetaCompactionBlock`: `{ type: "compaction", content: string | null, encrypted_content: string | null,
 * signature?: string | null, tool_changes?: [...] | null }` - "Send the block back unchanged". Content null means
 * the compaction failed ("the server treats these as no-ops"). Every field the API sent is kept as it came,
 * including fields newer than this client.
 */
export type CompactionContent = { type: 'compaction'; content: string | null; [field: string]: unknown }

/** Assistant content for the conversation. Tool input is the parsed arguments, or {} when they do not parse. */
export type ContentBlock =
  | ThinkingContent
  | CompactionContent
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

/** A throw from the engine's `onEvent`, carried out of the stream loop untouched. */
export class ListenerError extends Error {
  constructor(override readonly cause: unknown) {
    super('onEvent listener failed')
  }
}

/** Per attempt: the blocks as they arrive, the raw argument text of every tool call, the stop and usage. */
export class TurnAccumulator {
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
    | { kind: 'compaction'; block: CompactionContent; closed: boolean }
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
        } else if ((block.type as string) === 'compaction') {
          // The start carries the block's fields (content usually null until its compaction_delta).
          const start = { ...(block as unknown as Record<string, unknown>) }
          const content = typeof start.content === 'string' ? start.content : null
          this.blocks.set(index, {
            kind: 'compaction',
            block: { ...start, type: 'compaction', content },
            closed: false,
          })
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
        } else if (block.kind === 'compaction') {
          // `compaction_delta` ({ content, encrypted_content }): the summary text (appended, should it come in
          // pieces) and the opaque metadata, which replaces. A signature, if one is streamed, replaces too.
          const d = delta as unknown as Record<string, unknown>
          if ((d.type as string) === 'compaction_delta') {
            if (typeof d.content === 'string') block.block.content = (block.block.content ?? '') + d.content
            if (d.encrypted_content !== undefined && d.encrypted_content !== null)
              block.block.encrypted_content = d.encrypted_content
          } else if (d.type === 'signature_delta' && typeof d.signature === 'string') {
            block.block.signature = d.signature
          }
        }
        break
      }
      case 'content_block_stop': {
        const block = this.blocks.get(event.index)
        if (!block || block.kind === 'other') break
        block.closed = true
        if (block.kind === 'compaction') {
          emit({ type: 'compaction', index: event.index, block: block.block })
        } else if (block.kind === 'thinking' || block.kind === 'redacted') {
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
    // "Calculate the context window size from the last `message` entry" of `usage.iterations`; a `compaction`
    // entry is the cost of summarizing, not a context size (the SDK's BetaIterationsUsage).
    if (Array.isArray(u.iterations)) {
      const last = (u.iterations as unknown[]).findLast(
        (it): it is Record<string, unknown> =>
          typeof it === 'object' && it !== null && (it as { type?: unknown }).type === 'message',
      )
      if (last) {
        this.usage.contextTokens =
          (count(last.input_tokens) ?? 0) +
          (count(last.cache_read_input_tokens) ?? 0) +
          (count(last.cache_creation_input_tokens) ?? 0) +
          (count(last.output_tokens) ?? 0)
      }
    }
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
        case 'compaction':
          // Only a whole block goes back: a cut one would be a changed one.
          if (block.closed) content.push(block.block)
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
