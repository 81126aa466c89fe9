import { describe, expect, it } from 'vitest'
import { countLines, isBinary } from '../../shared/file-content'
import { contentFacts } from './content-facts'

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8')

describe('contentFacts', () => {
  it('tells text from binary and counts lines as the shared rules do, without decoding', () => {
    const samples = [
      utf8(''),
      utf8('plain\n'),
      utf8('naïve\n日本語 🎉\nend'),
      utf8('a\r\nb\r\n'),
      utf8('text\0more'),
      Buffer.from([0x68, 0x69, 0xff]),
      Buffer.from([0xc3]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    ]
    for (const bytes of samples) {
      const facts = contentFacts(bytes)
      expect(facts.binary).toBe(isBinary(bytes))
      expect(facts.lines).toBe(isBinary(bytes) ? undefined : countLines(bytes.toString('utf8')))
    }
  })
})
