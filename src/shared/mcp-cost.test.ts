import { describe, expect, it } from 'vitest'
import { definitionTokens, overBudget, serverTokens } from './mcp-cost'

describe('what MCP tool definitions cost', () => {
  it('counts a definition at about four characters of JSON a token, and a server as the sum of its tools', () => {
    const definition = { name: 'mcp__s__t', description: 'x'.repeat(100), input_schema: { type: 'object' } }
    expect(definitionTokens(definition)).toBe(Math.ceil(JSON.stringify(definition).length / 4))
    expect(serverTokens([{ tokens: 3 }, { tokens: 4 }])).toBe(7)
    expect(serverTokens([])).toBe(0)
  })

  it('is over budget past a tenth of the context window, not at it', () => {
    expect(overBudget(20_000, 200_000)).toBe(false)
    expect(overBudget(20_001, 200_000)).toBe(true)
  })
})
