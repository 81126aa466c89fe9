import { describe, expect, it } from 'vitest'
import {
  countLines,
  excerptOf,
  formatBytes,
  isBinary,
  isPreviewableImage,
  LARGE_CHANGE_LINES,
  reviewMode,
  sniffType,
  typeLabel,
} from './file-content'

const bytes = (...b: number[]): Uint8Array => new Uint8Array(b)
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)
const PNG = bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13)

describe('isBinary', () => {
  it('takes UTF-8 text as text, whatever its script, and an empty file too', () => {
    expect(isBinary(utf8('plain\r\nlines\twith tabs\n'))).toBe(false)
    expect(isBinary(utf8('naïve 日本語 🎉'))).toBe(false)
    expect(isBinary(new Uint8Array())).toBe(false)
  })

  it('takes a NUL byte anywhere, or bytes that are not valid UTF-8, as binary', () => {
    expect(isBinary(utf8('text\0more'))).toBe(true)
    expect(isBinary(bytes(0x68, 0x69, 0xff))).toBe(true) // "hi" then an invalid byte
    expect(isBinary(bytes(0xc3))).toBe(true) // a cut multi-byte character
    expect(isBinary(bytes(0xed, 0xa0, 0x80))).toBe(true) // an encoded lone surrogate
    expect(isBinary(PNG)).toBe(true)
  })
})

describe('sniffType', () => {
  it('names types by their first bytes, never by a file name', () => {
    expect(sniffType(PNG)).toBe('image/png')
    expect(sniffType(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe('image/jpeg')
    expect(sniffType(utf8('GIF89a....'))).toBe('image/gif')
    expect(sniffType(utf8('RIFF\x10\0\0\0WEBPVP8 '))).toBe('image/webp')
    expect(sniffType(utf8('%PDF-1.7'))).toBe('application/pdf')
    expect(sniffType(bytes(0x50, 0x4b, 3, 4))).toBe('application/zip')
    expect(sniffType(utf8('RIFF\x10\0\0\0WAVEfmt '))).toBeUndefined()
    expect(sniffType(bytes(0x89, 0x50))).toBeUndefined() // too short to be a PNG
    expect(sniffType(utf8('just text'))).toBeUndefined()
  })

  it('labels and previews only the image types a browser draws from bytes', () => {
    expect(typeLabel('image/png')).toBe('PNG image')
    expect(typeLabel(undefined)).toBe('binary data')
    for (const mime of ['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
      expect(isPreviewableImage(mime)).toBe(true)
    expect(isPreviewableImage('application/pdf')).toBe(false)
    expect(isPreviewableImage(undefined)).toBe(false)
  })
})

describe('countLines', () => {
  it('counts a last line without a line break, and none in an empty text', () => {
    expect(countLines('')).toBe(0)
    expect(countLines('a')).toBe(1)
    expect(countLines('a\n')).toBe(1)
    expect(countLines('a\nb')).toBe(2)
    expect(countLines('\n\n')).toBe(2)
    expect(countLines('a\r\nb\r\n')).toBe(2)
  })

  it('counts the same lines in a text’s UTF-8 bytes, undecoded', () => {
    for (const text of ['', 'a', 'a\n', 'a\nb', '\n\n', 'a\r\nb\r\n', 'naïve\n日本語 🎉\nend'])
      expect(countLines(utf8(text))).toBe(countLines(text))
  })

  it('says 11,000 new lines when 11,000 lines are written', () => {
    const text = Array.from({ length: 11_000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n'
    expect(countLines(text)).toBe(11_000)
  })
})

describe('reviewMode', () => {
  const text = { beforeBinary: false, afterBinary: false, diffChars: 100, diffCut: false }
  it('shows a change with a binary side as binary, whatever its size', () => {
    expect(reviewMode({ ...text, beforeBinary: true, added: 0, removed: 0 })).toBe('binary')
    expect(reviewMode({ ...text, afterBinary: true, added: 1, removed: 0 })).toBe('binary')
  })

  it('shows a change past the line or size threshold, or cut by the engine, as large', () => {
    expect(reviewMode({ ...text, added: LARGE_CHANGE_LINES, removed: 0 })).toBe('diff')
    expect(reviewMode({ ...text, added: LARGE_CHANGE_LINES, removed: 1 })).toBe('large')
    expect(reviewMode({ ...text, added: 1, removed: 0, diffChars: 300 * 1024 })).toBe('large')
    expect(reviewMode({ ...text, added: 1, removed: 0, diffCut: true })).toBe('large')
    expect(reviewMode({ ...text, added: 40, removed: 12 })).toBe('diff')
  })
})

describe('excerptOf', () => {
  it('gives the first and last lines of a long text, with the line number the tail starts at', () => {
    const text = Array.from({ length: 11_000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n'
    const excerpt = excerptOf(text, 3)
    expect(excerpt.head).toEqual(['line 1', 'line 2', 'line 3'])
    expect(excerpt.tail).toEqual(['line 10998', 'line 10999', 'line 11000'])
    expect(excerpt.tailFrom).toBe(10_998)
  })

  it('does not repeat lines of a short text, cuts long lines and drops CRs', () => {
    expect(excerptOf('a\r\nb\r\nc\r\n', 2)).toEqual({ head: ['a', 'b'], tail: ['c'], tailFrom: 3 })
    const long = excerptOf(`${'x'.repeat(1000)}\nend`, 1)
    expect(long.head[0]).toBe(`${'x'.repeat(300)}…`)
    expect(long.tail).toEqual(['end'])
  })

  it('cuts a long line after its secret values are hidden, at the head and the tail', () => {
    const value = 'sk-live-Excerpt-9f9f9f9f'
    const line = `${'x'.repeat(295)}${value}${'y'.repeat(500)}`
    const hide = (text: string): string => text.replaceAll(value, '[secret from .env hidden]')
    const excerpt = excerptOf([line, ...Array.from({ length: 10 }, () => 'mid'), line].join('\n'), 1, hide)
    expect(excerpt.head[0]).toBe(`${'x'.repeat(295)}[secr…`)
    expect(excerpt.tail[0]).toBe(`${'x'.repeat(295)}[secr…`)
  })

  it('keeps the tail of a text without a final line break', () => {
    const text = Array.from({ length: 50 }, (_, i) => `${i + 1}`).join('\n')
    expect(excerptOf(text, 2)).toEqual({ head: ['1', '2'], tail: ['49', '50'], tailFrom: 49 })
  })
})

describe('formatBytes', () => {
  it('uses decimal units as file managers do', () => {
    expect(formatBytes(1)).toBe('1 byte')
    expect(formatBytes(812)).toBe('812 bytes')
    expect(formatBytes(600_000)).toBe('600 KB')
    expect(formatBytes(5_000_000)).toBe('5 MB')
    expect(formatBytes(1_400_000)).toBe('1.4 MB')
  })
})
