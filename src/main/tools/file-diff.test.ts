import { applyPatch } from 'diff'
import { describe, expect, it } from 'vitest'
import { fileDiff, MAX_HUNK_LINES } from './file-diff'

const lines = (n: number, f: (i: number) => string): string =>
  Array.from({ length: n }, (_, i) => f(i) + '\n').join('')

/** The hunks are a real patch: applied to `before` they give `after`. */
function roundTrips(before: string, after: string): boolean {
  const diff = fileDiff('f.txt', before, after)
  return (
    applyPatch(before, {
      hunks: diff.hunks,
      oldFileName: 'f.txt',
      newFileName: 'f.txt',
      oldHeader: '',
      newHeader: '',
    }) === after
  )
}

describe('fileDiff', () => {
  it('gives structured hunks with context and exact line counts', () => {
    const before = lines(20, (i) => `line ${i}`)
    const after = before.replace('line 10\n', 'line ten\nline ten and a half\n')
    const diff = fileDiff('src/a.ts', before, after)
    expect(diff.added).toBe(2)
    expect(diff.removed).toBe(1)
    expect(diff.truncated).toBeUndefined()
    expect(diff.hunks).toHaveLength(1)
    expect(diff.hunks[0]).toMatchObject({ oldStart: 8, oldLines: 7, newStart: 8, newLines: 8 })
    expect(diff.hunks[0]?.lines).toContain('-line 10')
    expect(diff.hunks[0]?.lines).toContain('+line ten')
    expect(roundTrips(before, after)).toBe(true)
  })

  it('shows a new file as all added lines', () => {
    const diff = fileDiff('new.ts', null, 'a\nb\nc\n')
    expect(diff).toMatchObject({ added: 3, removed: 0 })
    expect(diff.hunks[0]?.lines).toEqual(['+a', '+b', '+c'])
  })

  it('gives no hunks for identical text', () => {
    expect(fileDiff('same.ts', 'x\n', 'x\n')).toEqual({ hunks: [], added: 0, removed: 0, chars: 0 })
  })

  it('marks a missing final newline', () => {
    const diff = fileDiff('f.txt', 'a\nb\n', 'a\nb')
    expect(diff.hunks[0]?.lines).toContain('\\ No newline at end of file')
    expect(roundTrips('a\nb\n', 'a\nb')).toBe(true)
  })

  it('caps a huge diff for the UI but keeps the exact counts', () => {
    const after = lines(10_000, (i) => `row ${i}`)
    const diff = fileDiff('big.txt', null, after)
    expect(diff.added).toBe(10_000)
    expect(diff.truncated).toBe(true)
    const shown = diff.hunks.flatMap((h) => h.lines)
    expect(shown.length).toBeLessThanOrEqual(MAX_HUNK_LINES)
    // A cut hunk still describes the lines it shows.
    const last = diff.hunks[diff.hunks.length - 1]
    expect(last?.newLines).toBe(last?.lines.filter((l) => l.startsWith('+') || l.startsWith(' ')).length)
  })

  it('falls back to a linear diff past the size the line diff handles, still a valid patch', () => {
    const before = lines(120_000, (i) => `entry number ${i} with some padding`)
    const after = before.replace('entry number 60000 with', 'ENTRY NUMBER 60000 with')
    expect(before.length).toBeGreaterThan(4 * 1024 * 1024)
    const started = performance.now()
    const diff = fileDiff('huge.txt', before, after)
    expect(performance.now() - started).toBeLessThan(5000)
    expect(diff).toMatchObject({ added: 1, removed: 1 })
    expect(diff.hunks).toHaveLength(1)
    expect(diff.hunks[0]).toMatchObject({ oldStart: 59998, oldLines: 7, newStart: 59998, newLines: 7 })
    expect(roundTrips(before, after)).toBe(true)
  })

  it('handles a missing final newline and pure insertions in the linear fallback', () => {
    const before = lines(120_000, (i) => `entry number ${i} with some padding`)
    const noFinalNewline = before.slice(0, -1)
    expect(roundTrips(before, noFinalNewline)).toBe(true)
    expect(roundTrips(noFinalNewline, noFinalNewline + '\nappended')).toBe(true)
    expect(roundTrips(before, 'inserted first\n' + before)).toBe(true)
    expect(fileDiff('f.txt', before, '')).toMatchObject({ added: 0, removed: 120_000, truncated: true })
  })

  it('keeps CR characters visible so a line-ending change is not an empty diff', () => {
    const diff = fileDiff('crlf.txt', 'a\r\nb\r\n', 'a\nb\n')
    expect(diff.added).toBe(2)
    expect(diff.removed).toBe(2)
  })
})
