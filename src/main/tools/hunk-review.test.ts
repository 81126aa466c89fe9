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
