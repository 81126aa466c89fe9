import { describe, expect, it } from 'vitest'
import { AnsiTokenizer, collapseLine, visibleTextRanges } from './ansi'
import { ANSI_CASES } from './ansi-test-cases'

const ESC = '\u001b'

/** The tokens of `pieces` read one after another: text runs joined, each SGR as `<params>`. */
function tokens(pieces: readonly string[]): string {
  let out = ''
  const tokenizer = new AnsiTokenizer({
    text: (run) => {
      out += run
    },
    sgr: (params) => {
      out += `<${params}>`
    },
  })
  for (const piece of pieces) tokenizer.push(piece)
  return out
}

describe('AnsiTokenizer', () => {
  it('reports SGR sequences in order with the text, and no other sequence', () => {
    expect(
      tokens([`a${ESC}[1;31mb${ESC}[mc\u009b38:5:1md${ESC}[?25h${ESC}[2Ke${ESC}[>4;1mf${ESC}[1 mg`]),
    ).toBe('a<1;31>b<>c<38:5:1>defg')
  })

  it('gives the same tokens whatever the output is split into', () => {
    const sample = ANSI_CASES.map((c) => c.input).join('\n')
    const whole = tokens([sample])
    for (let cut = 0; cut <= sample.length; cut++) {
      expect(tokens([sample.slice(0, cut), sample.slice(cut)])).toBe(whole)
    }
    expect(tokens([...sample])).toBe(whole)
  })

  it('abandons an over-long CSI without reporting it', () => {
    expect(tokens([`${ESC}[${'1;'.repeat(300)}mtext`])).not.toContain('<')
  })
})

describe('collapseLine and visibleTextRanges', () => {
  it('agree with each other on every line of the shared cases', () => {
    for (const { stripped, shown } of ANSI_CASES) {
      expect(stripped.split('\n').map(collapseLine).join('\n')).toBe(shown)
      const kept = visibleTextRanges(stripped).map(([start, end]) => stripped.slice(start, end))
      expect(kept.join('')).toBe(shown)
    }
  })

  it('returns ranges in order, apart and non-empty', () => {
    for (const { stripped } of ANSI_CASES) {
      const ranges = visibleTextRanges(stripped)
      ranges.forEach(([start, end], i) => {
        expect(end).toBeGreaterThan(start)
        if (i > 0) expect(start).toBeGreaterThan((ranges[i - 1] as [number, number])[1])
      })
    }
  })
})
