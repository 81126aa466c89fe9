import { describe, expect, it } from 'vitest'
import { HELD_GROUPS_MAX } from '../../../../shared/events'
import { fileToken } from '../../../fs/path-token'
import { HeldDecider, HeldGroups } from './held-review'

describe('held changes counted by folder', () => {
  it('stay within HELD_GROUPS_MAX groups, cut shallower as needed, and keep every count', () => {
    const groups = new HeldGroups()
    for (let i = 0; i < 3000; i++)
      groups.add(`top${i % 3}/mid${i % 100}/leaf${i}/f.txt`, 'added', i % 2 === 0)
    groups.add('root.txt', 'changed', false)
    const list = groups.list()
    expect(list.length).toBeLessThanOrEqual(HELD_GROUPS_MAX)
    expect(groups.depth).toBe(2)
    expect(list.reduce((n, g) => n + g.added + g.changed, 0)).toBe(3001)
    expect(list.reduce((n, g) => n + g.protected, 0)).toBe(1500)
    expect(list.find((g) => g.folder === '')).toMatchObject({ changed: 1, added: 0 })
    expect(list.find((g) => g.folder === 'top1/mid1')?.added).toBeGreaterThan(0)
  })
})

describe('the decisions on held changes', () => {
  const line = (rel: string) => ({ rel, before: null, after: fileToken('a'.repeat(64)), held: 'x' })
  it('take a file’s own decision first, then its folder row’s, then the deepest folder’s', () => {
    const decider = new HeldDecider({
      by: 'user',
      files: [{ relPath: 'a/b/keep.txt', decision: 'accepted' }],
      folders: [
        { folder: '', decision: 'accepted' },
        { folder: 'a/b', decision: 'rejected' },
      ],
    })
    expect(decider.decide(line('top.txt'))).toBeNull()
    expect(decider.decide(line('a/b/other.txt'))).toMatch(/rejected by the user/)
    expect(decider.decide(line('a/b/keep.txt'))).toBeNull()
    expect(decider.decide(line('a/c/x.txt'))).toBeNull()
  })
  it('reject everything when nothing covers a change, and every change of a stopped run', () => {
    expect(new HeldDecider({ by: 'user', files: [] }).decide(line('x.txt'))).toMatch(/rejected/)
    const stopped = new HeldDecider({
      by: 'stopped',
      files: [],
      folders: [{ folder: '', decision: 'accepted' }],
    })
    expect(stopped.decide(line('x.txt'))).toMatch(/stopped/)
  })
})
