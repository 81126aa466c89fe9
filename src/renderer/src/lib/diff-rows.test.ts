import { structuredPatch } from 'diff'
import { describe, expect, it } from 'vitest'
import { diffLines, diffStats, editedHunk, splitRows } from './diff-rows'

const hunks = (before: string, after: string) =>
  structuredPatch('a', 'b', before, after, '', '', { context: 2 }).hunks

describe('diffLines', () => {
  it('numbers old and new lines and marks additions and deletions', () => {
    const rows = diffLines(hunks('a\nb\nc\n', 'a\nB\nc\nd\n'), undefined)
    const lines = rows.flatMap((r) =>
      r.kind === 'line' ? [[r.line.kind, r.line.oldNo, r.line.newNo, r.line.text]] : [],
    )
    expect(rows[0]).toMatchObject({ kind: 'hunk', header: 'Part 1 · lines 1–4' })
    expect(diffLines(hunks('a\nb\nc\n', ''), undefined)[0]).toMatchObject({
      header: 'Part 1 · removes lines 1–3',
    })
    expect(lines).toEqual([
      ['context', 1, 1, 'a'],
      ['del', 2, undefined, 'b'],
      ['add', undefined, 2, 'B'],
      ['context', 3, 3, 'c'],
      ['add', undefined, 4, 'd'],
    ])
  })

  it('notes a missing final newline on the line it belongs to', () => {
    const rows = diffLines(hunks('a\n', 'a'), undefined)
    const added = rows.find((r) => r.kind === 'line' && r.line.kind === 'add')
    expect(added?.kind === 'line' && added.line.noNewline).toBe(true)
  })

  it('highlights with the file language', () => {
    const rows = diffLines(hunks('const a = 1\n', 'const a = 2\n'), 'js')
    const add = rows.find((r) => r.kind === 'line' && r.line.kind === 'add')
    expect(add?.kind === 'line' && add.line.tokens[0]).toEqual({ kind: 'keyword', text: 'const' })
  })
})

describe('splitRows', () => {
  it('pairs each deletion with the addition that replaces it, and pads the longer side', () => {
    const pairs = splitRows(diffLines(hunks('x\na\nb\ny\n', 'x\nA\ny\n'), undefined)).filter(
      (r) => r.kind === 'pair',
    )
    expect(pairs.map((p) => (p.kind === 'pair' ? [p.left?.text, p.right?.text] : []))).toEqual([
      ['x', 'x'],
      ['a', 'A'],
      ['b', undefined],
      ['y', 'y'],
    ])
  })

  it('gives every row a unique key', () => {
    const rows = splitRows(
      diffLines(hunks('1\n2\n3\n4\n5\n6\n7\n8\n9\n', '1\nX\n3\n4\n5\n6\n7\nY\nZ\n9\n'), undefined),
    )
    expect(new Set(rows.map((r) => r.key)).size).toBe(rows.length)
  })
})

describe('diffStats', () => {
  it('counts added and removed lines', () => {
    expect(diffStats(hunks('a\nb\n', 'a\nc\nd\n'))).toEqual({ added: 2, removed: 1 })
  })
})

describe('editedHunk', () => {
  it("shows the user's text against the old side, not the agent's proposal", () => {
    const [hunk] = hunks('a\nb\nc\n', 'a\nB\nc\n')
    const edited = editedHunk(hunk!, 'a\nmine\nc\nmore')
    expect(edited.lines).toEqual([' a', '-b', '+mine', ' c', '+more'])
    expect(edited.newLines).toBe(4)
    expect(edited.oldStart).toBe(hunk!.oldStart)
    const rows = diffLines([edited], undefined, 2)
    expect(rows[0]).toMatchObject({ kind: 'hunk', header: 'Part 3 · lines 1–4', hunk: 2 })
    expect(
      rows
        .filter((r) => r.kind === 'line' && r.line.kind === 'add')
        .map((r) => r.kind === 'line' && r.line.text),
    ).toEqual(['mine', 'more'])
  })

  it('an edit back to the old text leaves no change', () => {
    const [hunk] = hunks('x\ny\n', 'x\nY\n')
    expect(editedHunk(hunk!, 'x\ny').lines).toEqual([' x', ' y'])
  })
})
