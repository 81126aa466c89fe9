import { describe, expect, it } from 'vitest'
import { costOf, priceOf } from './pricing'

describe('pricing', () => {
  it('prices every kind of token of a known model', () => {
    const usage = {
      inputTokens: 1_000_000,
      outputTokens: 1_000_000,
      cacheReadTokens: 1_000_000,
      cacheCreationTokens: 1_000_000,
    }
    // Sonnet 4.x: $3 in, $15 out, $3.75 cache writes, $0.30 cache reads.
    expect(costOf(usage, 'claude-sonnet-4-5-20250929')).toBeCloseTo(3 + 15 + 3.75 + 0.3, 6)
  })

  it('tells the old Opus 4 from the newer Opus 4.x', () => {
    expect(priceOf('claude-opus-4-20250514')?.input).toBe(15)
    expect(priceOf('claude-opus-4-1')?.input).toBe(15)
    expect(priceOf('claude-opus-4-5')?.input).toBe(5)
  })

  it('gives no estimate for a model it does not know', () => {
    expect(costOf({ inputTokens: 10, outputTokens: 10 }, 'lanes-demo')).toBeUndefined()
  })
})
