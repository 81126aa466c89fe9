import { describe, expect, it } from 'vitest'
import { highlightLine, languageOf, START } from './highlight'

const kinds = (line: string, lang: string) =>
  highlightLine(line, lang)
    .tokens.filter((t) => t.kind !== 'plain' && t.kind !== 'punct')
    .map((t) => [t.kind, t.text])

describe('highlightLine', () => {
  it('marks keywords, strings, numbers, types and comments in TypeScript', () => {
    expect(kinds("export const x: Map = new Map('a', 42) // done", 'js')).toEqual([
      ['keyword', 'export'],
      ['keyword', 'const'],
      ['type', 'Map'],
      ['keyword', 'new'],
      ['type', 'Map'],
      ['string', "'a'"],
      ['number', '42'],
      ['comment', '// done'],
    ])
  })

  it('carries a block comment and a template literal across lines', () => {
    const first = highlightLine('const a = 1 /* starts', 'js')
    expect(first.state).toEqual({ kind: 'comment' })
    const second = highlightLine('still comment */ return', 'js', first.state)
    expect(second.tokens[0]).toEqual({ kind: 'comment', text: 'still comment */' })
    expect(second.state).toEqual(START)
    const tpl = highlightLine('const s = `multi', 'js')
    expect(tpl.state).toEqual({ kind: 'string', close: '`' })
  })

  it('does not let an unclosed ordinary quote leak into the next line', () => {
    expect(highlightLine("print('oops", 'py').state).toEqual(START)
  })

  it('respects escapes inside strings', () => {
    const { tokens } = highlightLine('"a \\" b" + c', 'js')
    expect(tokens[0]).toEqual({ kind: 'string', text: '"a \\" b"' })
  })

  it('leaves unknown languages and very long lines plain', () => {
    expect(highlightLine('const x = 1', undefined).tokens).toEqual([{ kind: 'plain', text: 'const x = 1' }])
    const long = 'x'.repeat(5000)
    expect(highlightLine(long, 'js').tokens).toEqual([{ kind: 'plain', text: long }])
  })

  it('reproduces the line exactly from its tokens', () => {
    const line = `fn main() { let s = "hi"; /* c */ 0x1F }`
    expect(
      highlightLine(line, 'rs')
        .tokens.map((t) => t.text)
        .join(''),
    ).toBe(line)
  })
})

describe('languageOf', () => {
  it('finds the language by extension and a few well-known names', () => {
    expect(languageOf('src/app.tsx')).toBe('js')
    expect(languageOf('a/b/main.PY')).toBe('py')
    expect(languageOf('Dockerfile')).toBe('sh')
    expect(languageOf('.env.local')).toBe('sh')
    expect(languageOf('notes.unknown')).toBeUndefined()
    expect(languageOf('LICENSE')).toBeUndefined()
  })
})
