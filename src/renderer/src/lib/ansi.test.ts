import { describe, expect, it } from 'vitest'
import { ANSI_CASES } from '../../../shared/ansi-test-cases'
import { parseAnsi, stripAnsi } from './ansi'

describe('what the UI shows of terminal output (the table shared with the model)', () => {
  it.each(ANSI_CASES)('$name', ({ input, shown }) => {
    expect(stripAnsi(input)).toBe(shown)
  })
})

describe('parseAnsi', () => {
  it('turns SGR colours into styled segments', () => {
    expect(parseAnsi('\u001b[31mfail\u001b[0m ok')).toEqual([
      { text: 'fail', style: { fg: 'red' } },
      { text: ' ok', style: {} },
    ])
  })

  it('understands bold, bright, 256-colour and true-colour forms', () => {
    const [a, b, c] = parseAnsi('\u001b[1;92ma\u001b[0m\u001b[38;5;196mb\u001b[48;2;10;20;30mc')
    expect(a).toEqual({ text: 'a', style: { bold: true, fg: 'bright-green' } })
    expect(b?.style.fg).toBe('rgb(255, 0, 0)')
    expect(c?.style.bg).toBe('rgb(10, 20, 30)')
  })

  it('drops cursor moves, OSC titles and hyperlinks, keeping their text inert', () => {
    const text =
      '\u001b]0;evil title\u0007\u001b[2K\u001b[1Ghello \u001b]8;;https://x.example\u001b\\link\u001b]8;;\u001b\\'
    expect(stripAnsi(text)).toBe('hello link')
  })

  it('keeps markup as text: nothing here is ever HTML', () => {
    expect(stripAnsi('<img src=x onerror=alert(1)>')).toBe('<img src=x onerror=alert(1)>')
  })

  it('rejects colour values that are not numbers in range', () => {
    const [seg] = parseAnsi('\u001b[38;2;999;0;0mx')
    expect(seg?.style.fg).toBeUndefined()
  })

  it('applies carriage returns like a terminal (progress bars show their last state)', () => {
    expect(stripAnsi('10%\r50%\r100%\ndone\r\n')).toBe('100%\ndone\n')
  })

  it('drops a sequence cut at the end of a chunk and other control characters', () => {
    expect(stripAnsi('abc\u001b[3')).toBe('abc')
    // A backspace erases the character before it, as for the model (it used to be dropped here alone).
    expect(stripAnsi('a\u0000b\u0008c\u001b')).toBe('ac')
  })

  it('keeps the style a carriage return or backspace did not erase', () => {
    expect(parseAnsi('\u001b[31m10%\r\u001b[1m100%\u001b[0m\nman\u001b[4m_\bp\u001b[0mage')).toEqual([
      { text: '100%', style: { fg: 'red', bold: true } },
      { text: '\nman', style: {} },
      { text: 'p', style: { underline: true } },
      { text: 'age', style: {} },
    ])
  })

  it('handles the 8-bit CSI form', () => {
    expect(parseAnsi('\u009b32mgreen')).toEqual([{ text: 'green', style: { fg: 'green' } }])
  })

  it('stays linear on a long hostile input', () => {
    const input = '\u001b['.repeat(50_000) + 'x'
    const t0 = performance.now()
    stripAnsi(input)
    expect(performance.now() - t0).toBeLessThan(500)
  })
})
