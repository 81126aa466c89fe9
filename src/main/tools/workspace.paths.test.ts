import { describe, expect, it } from 'vitest'
import { isInside, toWorkspaceRelative } from './workspace'

// workspace.ts's path comparisons, on strings alone: no disk, unlike workspace.test.ts.

describe('isInside', () => {
  it('compares segment by segment, never by string prefix', () => {
    expect(isInside('/a/ws', '/a/ws')).toBe(true)
    expect(isInside('/a/ws', '/a/ws/b')).toBe(true)
    expect(isInside('/a/ws', '/a/ws-evil/b')).toBe(false)
    expect(isInside('/a/ws', '/a/wsx')).toBe(false)
    expect(isInside('/a/ws', '/a')).toBe(false)
    expect(isInside('/a/ws/', '/a/ws/..foo')).toBe(true)
    expect(isInside('/', '/etc')).toBe(true)
  })
})

describe('toWorkspaceRelative', () => {
  it('shows paths relative to the root with "/" and the root as "."', () => {
    expect(toWorkspaceRelative('/a/ws', '/a/ws/src/x.ts')).toBe('src/x.ts')
    expect(toWorkspaceRelative('/a/ws', '/a/ws')).toBe('.')
    expect(toWorkspaceRelative('/a/ws', '/a/other/x')).toBe('/a/other/x')
  })
})
