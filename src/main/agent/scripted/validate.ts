import { arrayOf, hasCacheControl } from './shared'

/**
 * The checks the real Messages API makes that an agent loop can get wrong (DESIGN 9, `--strict`). Each returns
 * the API's error message, or null when the request is acceptable. The base checks always run (unless a
 * scenario turns validation off); the strict ones need to know what this server answered, kept in a
 * `ResponseLedger`.
 */

const MAX_CACHE_BREAKPOINTS = 4
const TOOL_ID = /^[a-zA-Z0-9_-]+$/

type Block = Record<string, unknown>

/** What the server sent in each response, so a request can be checked against it. */
export interface ServedResponse {
  content: Block[]
  stopReason: string
}

export class ResponseLedger {
  private readonly served: ServedResponse[] = []
  /** Every compaction block served, as JSON: a request may only send these back, unchanged. */
  readonly compactions = new Set<string>()
  /** The latest compaction served, until a request carries it back (the docs: "append the response"). */
  owed: string | undefined

  add(response: ServedResponse): void {
    this.served.push(response)
    for (const block of response.content) {
      if (block.type !== 'compaction' || block.content === null) continue
      const key = canonical(block)
      this.compactions.add(key)
      this.owed = key
    }
  }

  /** The response an assistant message of a request stands for: the one that issued its tool calls, or the same text. */
  find(content: Block[]): ServedResponse | undefined {
    const ids = new Set(content.filter((b) => b.type === 'tool_use').map((b) => String(b.id)))
    if (ids.size > 0) {
      return this.served.findLast((r) =>
        r.content.some((b) => b.type === 'tool_use' && ids.has(String(b.id))),
      )
    }
    const texts = textsOf(content)
    return texts === '' ? undefined : this.served.findLast((r) => textsOf(r.content) === texts)
  }
}

function textsOf(content: Block[]): string {
  return content
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text))
    .join('\n')
}

function withoutCacheControl(block: Block): Block {
  const { cache_control: _ignored, ...rest } = block
  return rest
}

const isThinking = (b: Block): boolean => b.type === 'thinking' || b.type === 'redacted_thinking'

export function requestProblem(body: unknown, strict?: { ledger: ResponseLedger }): string | null {
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
  if (strict) {
    const thinking = b.thinking as { type?: unknown } | undefined
    if (thinking?.type === 'disabled') {
      return 'thinking.type: "disabled" is not supported on this model; use "between_tools" for the lowest thinking setting.'
    }
    if (b.tool_choice !== undefined && (b.tool_choice as { type?: unknown })?.type !== 'auto') {
      return 'tool_choice: forced tool use is not supported on this model.'
    }
    for (const param of ['temperature', 'top_p', 'top_k']) {
      if (b[param] !== undefined) return `${param}: sampling parameters are not supported on this model.`
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
    ) as Block[]
    if (blocks.length === 0 && !(isFinal && message.role === 'assistant')) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`
    }
    const toolUses = new Set<string>()
    const answered = new Set<string>()
    for (const [j, block] of blocks.entries()) {
      if (typeof block !== 'object' || block === null || typeof block.type !== 'string') {
        return `messages.${i}.content.${j}: each content block must be an object with a "type"`
      }
      if (hasCacheControl(block)) {
        cacheBlocks++
        if (strict && isThinking(block)) {
          return `messages.${i}.content.${j}.${block.type}.cache_control: thinking blocks cannot be marked for caching directly.`
        }
      }
      switch (block.type) {
        case 'text':
          if (typeof block.text !== 'string' || block.text.length === 0) {
            return `messages.${i}.content.${j}.text: text content blocks must be non-empty`
          }
          if (strict && block.text.trim() === '') {
            return `messages.${i}.content.${j}.text: text content blocks must contain non-whitespace text`
          }
          break
        case 'tool_use': {
          if (message.role !== 'assistant')
            return `messages.${i}.content.${j}: tool_use blocks belong to assistant messages`
          const id = block.id
          if (typeof id !== 'string' || !TOOL_ID.test(id)) {
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
  return strict
    ? (compactionProblem(b, messages, strict.ledger) ?? thinkingProblem(messages, strict.ledger))
    : null
}

/**
 * The compaction round trip: "Send the block back unchanged" (the SDK's BetaCompactionBlock), and the response
 * that carried one is appended to the conversation, so the next agent request (one with tools: a summary
 * request made without tools is not one) carries it.
 */
function compactionProblem(
  body: Record<string, unknown>,
  messages: unknown[],
  ledger: ResponseLedger,
): string | null {
  const sent = new Set<string>()
  for (const [i, raw] of messages.entries()) {
    const message = raw as { role: string; content: unknown }
    for (const [j, block] of blocksOf(message.content).entries()) {
      if (block.type !== 'compaction') continue
      const key = canonical(withoutCacheControl(block))
      if (message.role !== 'assistant' || !ledger.compactions.has(key)) {
        return `messages.${i}.content.${j}: a \`compaction\` block must be sent back exactly as it was returned, in an assistant message.`
      }
      sent.add(key)
    }
  }
  if (ledger.owed !== undefined && arrayOf(body.tools).length > 0) {
    if (!sent.has(ledger.owed)) {
      return 'messages: the `compaction` block of an earlier response is missing; append each response to the messages you send.'
    }
    ledger.owed = undefined
  }
  return null
}

/**
 * The thinking rules: the latest assistant message carries the thinking blocks of the response it stands for,
 * complete, unchanged and in their order before anything else; and the conversation ends with a user message,
 * except to continue a `pause_turn` response.
 */
function thinkingProblem(messages: unknown[], ledger: ResponseLedger): string | null {
  const last = messages.length - 1
  const lastMessage = messages[last] as { role: string; content: unknown }
  const latest = messages.findLastIndex((m) => (m as { role: string }).role === 'assistant')
  if (latest === -1) return null
  const content = blocksOf((messages[latest] as { content: unknown }).content)
  const served = ledger.find(content)
  if (lastMessage.role === 'assistant') {
    if (served?.stopReason !== 'pause_turn' && served?.stopReason !== 'compaction') {
      return 'This model does not support assistant message prefill. The conversation must end with a user message.'
    }
  }
  if (!served) return null
  // Thinking blocks exactly as sent, in their order and in their places among the calls (interleaved thinking
  // puts them between tool_use blocks); text around them may differ (whitespace-only text is dropped).
  const shape = (blocks: Block[]): string[] =>
    blocks.flatMap((b) =>
      isThinking(b) ? [JSON.stringify(withoutCacheControl(b))] : b.type === 'tool_use' ? ['tool_use'] : [],
    )
  if (!served.content.some(isThinking)) return null
  const sent = shape(served.content)
  const given = shape(content)
  if (sent.length !== given.length || sent.some((key, k) => key !== given[k])) {
    return `messages.${latest}.content: \`thinking\` or \`redacted_thinking\` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.`
  }
  return null
}

/** JSON with sorted keys: the same block whatever order a client wrote its fields in. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  )
}

function blocksOf(content: unknown): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : (arrayOf(content) as Block[])
}
