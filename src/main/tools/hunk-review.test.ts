import { describe, expect, it } from 'vitest'
import { fileDiff } from './file-diff'
import { applyHunkDecisions, describeReview } from './hunk-review'

const lines = (n: number, tag = 'line') => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`)
/** 30 lines, changed in three places far enough apart to make three hunks. */
const before = lines(30).join('\n') + '\n'
const afterLines = lines(30)
afterLines[1] = 'CHANGED 2'
afterLines[28] = 'CHANGED 29'
afterLines.splice(14, 1, 'NEW 15a', 'NEW 15b')
const after = afterLines.join('\n') + '\n'
const hunks = fileDiff('f.txt', before, after).hunks

function apply(text: string, decisions: Parameters<typeof applyHunkDecisions>[2], h = hunks) {
  const result = applyHunkDecisions(text, h, decisions)
  if (!result.ok) throw new Error(result.error)
  return result
}

describe('applyHunkDecisions', () => {
  it('gives the whole change when every hunk is accepted, and the old text when every one is rejected', () => {
    expect(hunks).toHaveLength(3)
    expect(apply(before, []).after).toBe(after)
    const none = apply(
      before,
      [0, 1, 2].map((index) => ({ index, decision: 'rejected' as const })),
    )
    expect(none.after).toBe(before)
  })

  it('applies exactly the accepted hunks', () => {
    const result = apply(before, [{ index: 1, decision: 'rejected', note: 'keep line 15' }])
    const expected = lines(30)
    expected[1] = 'CHANGED 2'
    expected[28] = 'CHANGED 29'
    expect(result.after).toBe(expected.join('\n') + '\n')
    expect(result.outcomes.map((o) => o.decision)).toEqual(['accepted', 'rejected', 'accepted'])
    expect(result.outcomes[1]?.note).toBe('keep line 15')
  })

  it("replaces an edited hunk's new side with the user's text", () => {
    const hunk = hunks[0]
    const newSide = hunk?.lines.filter((l) => !l.startsWith('-')).map((l) => l.slice(1)) ?? []
    const text = newSide.join('\n').replace('CHANGED 2', 'fixed by hand 2')
    const result = apply(before, [{ index: 0, decision: 'edited', text }])
    expect(result.after.split('\n')[1]).toBe('fixed by hand 2')
    expect(result.after.split('\n')[14]).toBe('NEW 15a')
    expect(result.outcomes[0]).toMatchObject({ decision: 'edited', from: 1 })
  })

  it('keeps CRLF line endings, in rejected, accepted and edited hunks', () => {
    const crlfBefore = before.replace(/\n/g, '\r\n')
    const crlfAfter = after.replace(/\n/g, '\r\n')
    const h = fileDiff('f.txt', crlfBefore, crlfAfter).hunks
    const result = apply(
      crlfBefore,
      [
        { index: 0, decision: 'rejected' },
        { index: 2, decision: 'edited', text: 'line 26\nline 27\nline 28\nmine 29\nline 30' },
      ],
      h,
    )
    expect(result.after).not.toMatch(/[^\r]\n/)
    expect(result.after.split('\r\n')[1]).toBe('line 2')
    expect(result.after.split('\r\n')[14]).toBe('NEW 15a')
    expect(result.after.split('\r\n')[29]).toBe('mine 29')
  })

  it('keeps a last line without a newline as the hunk had it', () => {
    const a = 'one\ntwo\nthree'
    const b = 'one\ntwo\nTHREE'
    const h = fileDiff('f.txt', a, b).hunks
    expect(apply(a, [], h).after).toBe(b)
    expect(apply(a, [{ index: 0, decision: 'rejected' }], h).after).toBe(a)
  })

  it('creates a new file from its one hunk, as proposed, edited, or not at all', () => {
    for (const h of [
      fileDiff('n.txt', null, 'a\nb\n').hunks,
      [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2, lines: ['+a', '+b'] }],
    ]) {
      expect(apply('', [], h).after).toBe('a\nb\n')
      expect(apply('', [{ index: 0, decision: 'edited', text: 'a\nB' }], h).after).toBe('a\nB\n')
      expect(apply('', [{ index: 0, decision: 'rejected' }], h).after).toBe('')
    }
  })

  it('keeps CRLF and the missing final newline when the last hunk is edited', () => {
    const a = ['x', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'last'].join('\r\n')
    const b = a.replace('x', 'X').replace('last', 'LAST')
    const h = fileDiff('f.txt', a, b).hunks
    expect(h).toHaveLength(2)
    const result = apply(a, [{ index: 1, decision: 'edited', text: 'f\ng\nh\nmine' }], h)
    expect(result.after).toBe(a.replace('x', 'X').replace('last', 'mine'))
  })

  it('places later hunks right when an edited hunk grows into the lines of the next one', () => {
    // The user's text for hunk 1 repeats lines that hunk 2 changes: they are the user's words, added once; hunk
    // 2 still applies to its own lines, and the reported regions follow the new line numbers.
    const text = 'line 1\nCHANGED 2\nline 3\nline 4\nline 5\nline 14\nline 15\nline 16'
    const result = apply(before, [{ index: 0, decision: 'edited', text }])
    const out = result.after.split('\n')
    expect(out.slice(0, 8)).toEqual(text.split('\n'))
    expect(out.filter((l) => l === 'NEW 15a')).toHaveLength(1)
    const second = result.outcomes[1]
    expect(second && out.slice(second.from - 1, second.to)).toContain('NEW 15a')
    const third = result.outcomes[2]
    expect(third && out.slice(third.from - 1, third.to)).toContain('CHANGED 29')
  })

  it('refuses when the text no longer matches the preview', () => {
    const moved = before.replace('line 29', 'someone else')
    const result = applyHunkDecisions(moved, hunks, [])
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining('Hunk 3 no longer matches') })
    expect(applyHunkDecisions(before, hunks, [{ index: 7, decision: 'rejected' }])).toMatchObject({
      ok: false,
    })
  })
})

describe('describeReview', () => {
  it('tells the model which hunks applied, which not (with the note), and the resulting lines', () => {
    const review = apply(before, [{ index: 1, decision: 'rejected', note: 'keep line 15' }])
    const text = describeReview('f.txt', review)
    expect(text).toContain('2 of 3 hunks were applied')
    expect(text).toContain('Hunk 2: rejected, not applied; the user wrote: keep line 15')
    expect(text).toMatch(/Hunk 1: applied\. It now reads \(lines \d+-\d+\):/)
    expect(text).toContain('     2|CHANGED 2')
    expect(text).toContain('    15|line 15')
  })
})

describe('a change of 500 hunks', () => {
  const big = lines(10_000, 'row')
  const bigAfter = big.map((l, i) => (i % 20 === 10 ? `${l} changed` : l))
  const bigHunks = fileDiff('big.txt', big.join('\n') + '\n', bigAfter.join('\n') + '\n').hunks

  it('is applied in a few milliseconds and described within a bounded answer that names every choice', () => {
    expect(bigHunks).toHaveLength(500)
    const decisions = Array.from({ length: 500 }, (_, index) =>
      index % 3 === 0
        ? { index, decision: 'rejected' as const, note: `no ${index}` }
        : { index, decision: 'accepted' as const },
    )
    const started = performance.now()
    const result = apply(big.join('\n') + '\n', decisions, bigHunks)
    const text = describeReview('big.txt', result)
    expect(performance.now() - started).toBeLessThan(200)
    expect(text).toContain('333 of 500 hunks were applied')
    // Past the budget of shown lines: rejected hunks still named with their note, accepted ones counted.
    expect(text).toContain('Hunk 499: rejected, not applied; the user wrote: no 498')
    expect(text).toMatch(/\d+ more hunks were applied as proposed \(hunks [\d, -]+\); read the file/)
    expect(text.split('\n').length).toBeLessThan(700)
  })
})
