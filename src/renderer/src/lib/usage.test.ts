import { describe, expect, it } from 'vitest'
import { formatTokens, sumUsage, usageSummary } from './usage'

describe('usage', () => {
  it('sums the answers of a run and prices them at the model', () => {
    const total = sumUsage([
      { inputTokens: 1000, outputTokens: 200_000 },
      undefined,
      { inputTokens: 500, outputTokens: 0, cacheReadTokens: 10_000 },
    ])
    expect(total).toEqual({
      inputTokens: 1500,
      outputTokens: 200_000,
      cacheReadTokens: 10_000,
      cacheCreationTokens: 0,
    })
    // Sonnet 4.x: 1500 × $3 + 200,000 × $15 + 10,000 × $0.30 per million.
    expect(usageSummary(total!, 'claude-sonnet-4-5', false)).toBe('212k tokens · ~$3.01')
    expect(usageSummary(total!, 'lanes-demo', true)).toBe('212k tokens · demo, free')
    expect(usageSummary(total!, 'some-other-model', false)).toBe('212k tokens')
    expect(sumUsage([undefined])).toBeUndefined()
    expect(formatTokens(950)).toBe('950')
    expect(formatTokens(1234)).toBe('1.2k')
  })
})
