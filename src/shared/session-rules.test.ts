import { describe, expect, it } from 'vitest'
import {
  describeSessionRule,
  rulesAllowCommand,
  rulesAllowEdits,
  rulesAllowTool,
  sameRule,
} from './session-rules'

describe('session rules', () => {
  const npmTest = { kind: 'command' as const, words: ['npm', 'test'] }

  it('match a command on whole leading words, never on a string prefix', () => {
    expect(rulesAllowCommand([npmTest], ['npm', 'test'])).toBe(true)
    expect(rulesAllowCommand([npmTest], ['npm', 'test', '--', '--run', 'a.test.ts'])).toBe(true)
    expect(rulesAllowCommand([npmTest], ['npm', 'testx'])).toBe(false)
    expect(rulesAllowCommand([npmTest], ['npm'])).toBe(false)
    expect(rulesAllowCommand([npmTest], ['npm', 'test;', 'rm'])).toBe(false)
    expect(rulesAllowCommand([npmTest], ['npx', 'test'])).toBe(false)
    expect(rulesAllowCommand([{ kind: 'edits' }, { kind: 'tool', tool: 'npm' }], ['npm', 'test'])).toBe(false)
  })

  it('keep each kind to its own calls', () => {
    expect(rulesAllowEdits([npmTest, { kind: 'tool', tool: 'write_file' }])).toBe(false)
    expect(rulesAllowEdits([{ kind: 'edits' }])).toBe(true)
    expect(rulesAllowTool([{ kind: 'tool', tool: 'mcp__a__b' }], 'mcp__a__b')).toBe(true)
    expect(rulesAllowTool([{ kind: 'tool', tool: 'mcp__a__b' }], 'mcp__a__bc')).toBe(false)
    expect(rulesAllowTool([{ kind: 'edits' }], 'write_file')).toBe(false)
  })

  it('are named as the user reads them, and compared by what they cover', () => {
    expect(describeSessionRule(npmTest)).toBe('Commands starting with npm test')
    expect(describeSessionRule({ kind: 'command', words: ['make', "it's here"] })).toBe(
      `Commands starting with make 'it'\\''s here'`,
    )
    expect(sameRule(npmTest, { kind: 'command', words: ['npm', 'test'] })).toBe(true)
    expect(sameRule(npmTest, { kind: 'command', words: ['npm', 'test', 'x'] })).toBe(false)
    expect(sameRule({ kind: 'edits' }, { kind: 'edits' })).toBe(true)
  })
})
