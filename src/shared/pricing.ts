import type { Usage } from './events'

/**
 * What model tokens cost: the one price table of Lanes (USD per million tokens), for the estimates in the
 * session header and at the end of each run. From Anthropic's published pricing page ("Model pricing": base
 * input, 5-minute cache writes, cache hits, output); a model that is not listed gets no estimate rather than a
 * guess. Update here, and only here, when prices change.
 */

export interface Price {
  input: number
  output: number
  cacheWrite: number
  cacheRead: number
}

const price = (input: number, output: number, cacheRead = input / 10): Price => ({
  input,
  output,
  cacheWrite: input * 1.25,
  cacheRead,
})

/** By model id prefix, most specific first. */
const PRICES: readonly [prefix: string, price: Price][] = [
  ['claude-fable-5', price(10, 50)],
  ['claude-opus-4-1', price(15, 75)],
  ['claude-opus-4-0', price(15, 75)],
  ['claude-opus-4', price(5, 25)],
  ['claude-opus-5', price(5, 25)],
  ['claude-sonnet-5-5', price(2, 10, 0.1)],
  ['claude-sonnet-5', price(2, 10)],
  ['claude-sonnet-4', price(3, 15)],
  ['claude-3-7-sonnet', price(3, 15)],
  ['claude-haiku-4', price(1, 5)],
  ['claude-3-5-haiku', price(0.8, 4)],
]

export function priceOf(model: string): Price | undefined {
  // "claude-opus-4-20250514" is Opus 4 (the old price), "claude-opus-4-5" the newer one.
  if (/^claude-opus-4-\d{8}/.test(model)) return price(15, 75)
  return PRICES.find(([prefix]) => model.startsWith(prefix))?.[1]
}

/** Estimated USD for some usage, or undefined when the model's price is not known. */
export function costOf(usage: Usage, model: string): number | undefined {
  const p = priceOf(model)
  if (!p) return undefined
  return (
    (usage.inputTokens * p.input +
      usage.outputTokens * p.output +
      (usage.cacheCreationTokens ?? 0) * p.cacheWrite +
      (usage.cacheReadTokens ?? 0) * p.cacheRead) /
    1_000_000
  )
}

export function totalTokens(usage: Usage): number {
  return (
    usage.inputTokens + usage.outputTokens + (usage.cacheCreationTokens ?? 0) + (usage.cacheReadTokens ?? 0)
  )
}
