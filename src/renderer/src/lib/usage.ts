import type { Usage } from '../../../shared/events'
import { costOf, totalTokens } from '../../../shared/pricing'
import { formatCount } from './format'

/** Tokens and their estimated cost as the header and a run's end show them ("12.3k tokens · ~$0.04"). */

export function formatTokens(n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(2)}M`
}

/** An estimate: "about $0.42", or "under $0.01" for the small ones. */
function formatUsd(usd: number): string {
  if (usd === 0) return '$0'
  if (usd < 0.01) return 'under $0.01'
  return `~$${usd.toFixed(usd < 10 ? 2 : 0)}`
}

export function usageSummary(usage: Usage, model: string, demo: boolean): string {
  const tokens = `${formatTokens(totalTokens(usage))} tokens`
  if (demo) return `${tokens} · demo, free`
  const cost = costOf(usage, model)
  return cost === undefined ? tokens : `${tokens} · ${formatUsd(cost)}`
}

/** The breakdown, for a tooltip. */
export function usageDetail(usage: Usage, model: string, demo: boolean): string {
  const lines = [
    `Input: ${formatCount(usage.inputTokens)} tokens`,
    `Output: ${formatCount(usage.outputTokens)} tokens`,
    `Cache reads: ${formatCount(usage.cacheReadTokens ?? 0)} tokens`,
    `Cache writes: ${formatCount(usage.cacheCreationTokens ?? 0)} tokens`,
  ]
  const cost = costOf(usage, model)
  if (demo) lines.push('The demo model costs nothing.')
  else if (cost === undefined) lines.push(`No price known for ${model}.`)
  else lines.push(`Estimated cost: ${formatUsd(cost)} at ${model}'s list prices.`)
  return lines.join('\n')
}

/** The usage of several model answers together; undefined when none reported any. */
export function sumUsage(parts: readonly (Usage | undefined)[]): Usage | undefined {
  let total: Usage | undefined
  for (const u of parts) {
    if (!u) continue
    total = {
      inputTokens: (total?.inputTokens ?? 0) + u.inputTokens,
      outputTokens: (total?.outputTokens ?? 0) + u.outputTokens,
      cacheReadTokens: (total?.cacheReadTokens ?? 0) + (u.cacheReadTokens ?? 0),
      cacheCreationTokens: (total?.cacheCreationTokens ?? 0) + (u.cacheCreationTokens ?? 0),
    }
  }
  return total
}
