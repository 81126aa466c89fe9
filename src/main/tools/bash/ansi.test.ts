import { describe, expect, it } from 'vitest'
import { collapseLine } from '../../../shared/ansi'
import { ANSI_CASES } from '../../../shared/ansi-test-cases'
import { AnsiStripper, stripAnsi } from './ansi'

const ESC = '\u001b'
const BEL = '\u0007'

describe('stripAnsi', () => {
  it('removes colours and keeps the text', () => {
    expect(stripAnsi(`${ESC}[1;31merror${ESC}[0m: ${ESC}[38;2;255;128;0mfailed${ESC}[m`)).toBe(
      'error: failed',
    )
  })

  it('removes cursor movement, erase and private-mode sequences', () => {
    expect(stripAnsi(`${ESC}[2K${ESC}[1G${ESC}[?25lloading${ESC}[?25h${ESC}[3A${ESC}[10;20Hdone`)).toBe(
      'loadingdone',
    )
  })

  it('removes window titles ended by BEL or by ST, and keeps the text of a hyperlink', () => {
    expect(stripAnsi(`${ESC}]0;my title${BEL}a${ESC}]2;other${ESC}\\b`)).toBe('ab')
    expect(stripAnsi(`see ${ESC}]8;;https://example.com${ESC}\\the docs${ESC}]8;;${ESC}\\ now`)).toBe(
      'see the docs now',
    )
  })

  it('removes device control strings and the other control strings', () => {
    expect(
      stripAnsi(`a${ESC}Pq#0;2;0;0;0#0~~${ESC}\\b${ESC}_app${ESC}\\c${ESC}^pm${ESC}\\d${ESC}Xsos${ESC}\\e`),
    ).toBe('abcde')
  })

  it('removes two-character escapes and charset selections', () => {
    expect(stripAnsi(`${ESC}7${ESC}(Bplain${ESC}8${ESC}=${ESC}>${ESC}c${ESC}#8!`)).toBe('plain!')
  })

  it('understands the 8-bit C1 forms of CSI and OSC', () => {
    expect(stripAnsi('\u009b31mred\u009b0m \u009d0;title\u009cok')).toBe('red ok')
  })

  it('drops other control characters but keeps tab, newline, carriage return and backspace', () => {
    expect(stripAnsi('a\u0000b\u0007c\u000bd\u000ce\u007ff\u0085g\th\ni\rj\bk')).toBe('abcdefg\th\ni\rj\bk')
  })

  it('lets an unterminated control string swallow only the rest of its line', () => {
    expect(stripAnsi(`before ${ESC}]0;never terminated\nafter`)).toBe('before \nafter')
  })

  it('abandons a broken sequence and keeps what follows it', () => {
    expect(stripAnsi(`a${ESC}\nb`)).toBe('a\nb')
    expect(stripAnsi(`a${ESC}[12\nb`)).toBe('a\nb')
    expect(stripAnsi(`a${ESC}[12éb`)).toBe('aéb')
    expect(stripAnsi(`${ESC}[${'1;'.repeat(300)}mtext`)).toContain('text')
  })

  it('ends a control string at CAN or at a new escape sequence', () => {
    expect(stripAnsi(`${ESC}]0;title\u0018kept`)).toBe('kept')
    expect(stripAnsi(`${ESC}]0;title${ESC}[31mred`)).toBe('red')
  })

  it('keeps text that only looks like an escape', () => {
    expect(stripAnsi('[31m plain brackets ]0; and \\ backslash')).toBe(
      '[31m plain brackets ]0; and \\ backslash',
    )
  })
})

describe('what the model reads of terminal output (the table shared with the UI)', () => {
  it.each(ANSI_CASES)('$name', ({ input, stripped, shown }) => {
    expect(stripAnsi(input)).toBe(stripped)
    // What the rolling buffer makes of each line.
    expect(stripAnsi(input).split('\n').map(collapseLine).join('\n')).toBe(shown)
  })
})

describe('AnsiStripper', () => {
  const sample =
    `${ESC}[1mbold${ESC}[0m ${ESC}]0;t${BEL}x${ESC}]8;;u${ESC}\\link${ESC}]8;;${ESC}\\\r\n` +
    `\u009b2Kprogress 50%\r${ESC}[Kprogress 100%\n${ESC}P1$r0m${ESC}\\é😀${ESC}(0q${ESC}(B end\u0000`

  it('gives the same text whatever the output is split into', () => {
    const whole = stripAnsi(sample)
    for (let cut = 0; cut <= sample.length; cut++) {
      const stripper = new AnsiStripper()
      expect(stripper.push(sample.slice(0, cut)) + stripper.push(sample.slice(cut))).toBe(whole)
    }
    const oneByOne = new AnsiStripper()
    expect([...sample].map((ch) => oneByOne.push(ch)).join('')).toBe(whole)
  })

  it('finishes a sequence cut at the end of a chunk with the next chunk', () => {
    const stripper = new AnsiStripper()
    expect(stripper.push(`red${ESC}`)).toBe('red')
    expect(stripper.push('[0')).toBe('')
    expect(stripper.push('m plain')).toBe(' plain')
  })

  it('strips a megabyte of colourful output quickly', () => {
    const line = `${ESC}[32m✓${ESC}[0m test ${ESC}[2mpassed${ESC}[22m in 3 ms\n`
    const text = line.repeat(Math.ceil(1_000_000 / line.length))
    const startedAt = performance.now()
    const out = new AnsiStripper().push(text)
    expect(performance.now() - startedAt).toBeLessThan(2000)
    expect(out.startsWith('✓ test passed in 3 ms\n')).toBe(true)
    expect(out).not.toContain(ESC)
  })
})
