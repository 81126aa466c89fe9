import type { EventOf, ThinkingBlock, Usage } from '../events'
import { anomaly, describe, edit, made, type Mutable, type Reduction } from './draft'
import { editTurn, findTurn, insertTurn, turnFor } from './lookup'
import type { AssistantBlock, TurnState } from './state'

/**
 * Turns and the model's stream: turn.started, assistant.delta, assistant.thinking, model.retrying and the
 * complete assistant.message (with the usage it reports).
 */

export function onTurnStarted(r: Reduction, event: EventOf<'turn.started'>): void {
  const s = r.state
  if (findTurn(s, event.turn) >= 0)
    return anomaly(r, `${describe(event)}: turn ${event.turn} already started`)
  insertTurn(r, event.turn, event.runId, event.at)
}

export function onAssistantDelta(r: Reduction, event: EventOf<'assistant.delta'>): void {
  const s = r.state
  const pos = turnFor(r, event)
  const at = blockPosition((s.turns[pos] as TurnState).blocks, event.index)
  const existing = (s.turns[pos] as TurnState).blocks[at]
  if (existing?.index === event.index && existing.kind !== 'text') {
    return anomaly(r, `${describe(event)}: block ${event.index} of turn ${event.turn} is a tool call`)
  }
  const turn = editTurn(r, pos)
  turn.retry = undefined
  const blocks = (turn.blocks = edit(r, turn.blocks))
  if (existing?.index === event.index) {
    const block = edit(r, existing) as Mutable<Extract<AssistantBlock, { kind: 'text' }>>
    block.text += event.text
    blocks[at] = block
  } else {
    blocks.splice(at, 0, made(r, { kind: 'text', index: event.index, text: event.text }))
  }
}

export function onAssistantThinking(r: Reduction, event: EventOf<'assistant.thinking'>): void {
  const turn = editTurn(r, turnFor(r, event))
  turn.retry = undefined
  const blocks = (turn.blocks = edit(r, turn.blocks))
  const at = blockPosition(blocks, event.index)
  const block = made(r, { kind: 'thinking' as const, index: event.index, block: event.block })
  blocks.splice(at, blocks[at]?.index === event.index ? 1 : 0, block)
}

export function onModelRetrying(r: Reduction, event: EventOf<'model.retrying'>): void {
  const turn = editTurn(r, turnFor(r, event))
  turn.retry = made(r, {
    attempt: event.attempt,
    of: event.of,
    delayMs: event.delayMs,
    reason: event.reason,
    at: event.at,
  })
}

export function onAssistantMessage(r: Reduction, event: EventOf<'assistant.message'>): void {
  const s = r.state
  const turn = editTurn(r, turnFor(r, event))
  turn.retry = undefined
  // The complete message is authoritative for text and thinking: deltas may have been throttled or lost.
  // Its block positions are the message's own (a dropped empty block shifts them): indexes follow it.
  const blocks = (turn.blocks = edit(r, turn.blocks))
  event.message.content.forEach((block, index) => {
    const next = isTextBlock(block)
      ? made(r, { kind: 'text' as const, index, text: block.text })
      : isThinkingBlock(block)
        ? made(r, { kind: 'thinking' as const, index, block })
        : undefined
    if (!next) return
    const at = blockPosition(blocks, index)
    blocks.splice(at, blocks[at]?.index === index ? 1 : 0, next)
  })
  turn.message = event.message
  turn.stopReason = event.stopReason
  turn.usage = event.usage
  if (event.usage) {
    s.usage = addUsage(s.usage, event.usage)
    s.contextTokens = contextTokensOf(event.usage)
  }
}

/**
 * How full the context was for a request: everything the API read (new, cached and cache-written input) and
 * what it wrote back, which the next request carries.
 */
export function contextTokensOf(usage: Usage): number {
  if (usage.contextTokens !== undefined) return usage.contextTokens
  return (
    usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheCreationTokens ?? 0) + usage.outputTokens
  )
}

function isThinkingBlock(block: unknown): block is ThinkingBlock {
  if (typeof block !== 'object' || block === null) return false
  const b = block as Record<string, unknown>
  return (
    (b.type === 'thinking' && typeof b.thinking === 'string' && typeof b.signature === 'string') ||
    (b.type === 'redacted_thinking' && typeof b.data === 'string')
  )
}

function isTextBlock(block: unknown): block is { type: 'text'; text: string } {
  return (
    typeof block === 'object' &&
    block !== null &&
    (block as { type?: unknown }).type === 'text' &&
    typeof (block as { text?: unknown }).text === 'string'
  )
}

/**
 * Where a block with this index is or belongs; blocks nearly always arrive in order, so search from the end.
 */
export function blockPosition(blocks: readonly AssistantBlock[], index: number): number {
  let pos = blocks.length
  while (pos > 0 && (blocks[pos - 1] as AssistantBlock).index >= index) pos--
  return pos
}

function addUsage(total: Usage, usage: Usage): Usage {
  return {
    inputTokens: total.inputTokens + usage.inputTokens,
    outputTokens: total.outputTokens + usage.outputTokens,
    cacheReadTokens: (total.cacheReadTokens ?? 0) + (usage.cacheReadTokens ?? 0),
    cacheCreationTokens: (total.cacheCreationTokens ?? 0) + (usage.cacheCreationTokens ?? 0),
  }
}
