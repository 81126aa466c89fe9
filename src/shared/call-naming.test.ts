import { describe, expect, it } from 'vitest'
import type { WritePreview } from './approval-preview'
import { namingArgument, reviewKind, toolInWords } from './call-naming'

describe('namingArgument', () => {
  it('names a call by its description for people and by what it sent for the model', () => {
    const input = { command: 'npm test', description: 'Run the tests' }
    expect(namingArgument(input, 'people')).toBe('Run the tests')
    expect(namingArgument(input, 'model')).toBe('npm test')
    expect(namingArgument({ path: 'a.ts', content: 'x' }, 'people')).toBe('a.ts')
    expect(namingArgument({ pattern: '**/*.ts' }, 'model')).toBe('**/*.ts')
    expect(namingArgument({ query: 'first text' }, 'people')).toBe('first text')
    expect(namingArgument({ command: null, path: 'b.ts' }, 'model')).toBe('b.ts')
    expect(namingArgument(null, 'people')).toBeUndefined()
    // Names every object has are not arguments.
    expect(namingArgument(Object.create({ command: 'inherited' }) as object, 'model')).toBeUndefined()
  })
})

describe('reviewKind', () => {
  it('calls a change by what it does', () => {
    const write: WritePreview = { kind: 'write', path: 'a', hunks: [], protected: false }
    expect(reviewKind('edit_file', { ...write, before: 'x' })).toBe('Edit')
    expect(reviewKind('write_file', { ...write, before: null })).toBe('New file')
    expect(reviewKind('write_file', { ...write, before: 'x' })).toBe('Write')
    expect(reviewKind('bash', { kind: 'bash', command: 'ls', cwd: '/w' })).toBe('Command')
    expect(reviewKind('mcp__x__y', { kind: 'other', summary: 's' })).toBe('mcp__x__y')
  })
})

describe('reviewKind and toolInWords', () => {
  it('calls a binary or large new file (whose text the preview leaves out) a new file', () => {
    const facts = { bytes: 3, binary: true }
    const write: WritePreview = { kind: 'write', path: 'a', hunks: [], protected: false }
    const binary = { ...write, show: 'binary' as const, files: { before: null, after: facts } }
    expect(reviewKind('write_file', binary)).toBe('New file')
    expect(reviewKind('write_file', { ...binary, files: { before: facts, after: facts } })).toBe('Write')
  })

  it('names a built-in tool in words when its arguments are not known, and leaves other names alone', () => {
    expect(toolInWords('write_file')).toBe('Write a file')
    expect(toolInWords('bash')).toBe('Run a command')
    expect(toolInWords('mcp__notes__add')).toBe('mcp__notes__add')
  })
})
