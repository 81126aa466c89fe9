import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { MAX_ARGS_BYTES, parseToolArgs } from './args'
import { BashInput } from './bash/bash'
import { EditFileInput } from './edit-file'
import { GlobInput } from './glob'
import { GrepInput } from './grep'
import { toolInputSchemas } from './index'
import { ReadFileInput } from './read-file'
import { WriteFileInput } from './write-file'
import { argsRaw, loadCorpus, type ArgsCase } from '../test-fixtures/corpus'
import { drawPieces, seededInts } from '../test-fixtures/seeded'

function accepted(
  raw: string,
  schema: z.ZodType,
  opts?: { truncated?: boolean },
): { value: unknown; repaired: boolean } {
  const result = parseToolArgs(raw, schema, opts)
  if (!result.ok) throw new Error(`expected ${JSON.stringify(raw)} to be accepted, got: ${result.error}`)
  return { value: result.value, repaired: result.repaired }
}

function rejected(raw: string, schema: z.ZodType, opts?: { truncated?: boolean }): string {
  const result = parseToolArgs(raw, schema, opts)
  if (result.ok)
    throw new Error(`expected ${JSON.stringify(raw)} to be rejected, got ${JSON.stringify(result.value)}`)
  return result.error
}

describe('parseToolArgs: the shared corpus', () => {
  const cases = loadCorpus<ArgsCase>('args-sample')
  for (const [index, c] of cases.entries()) {
    it(`#${index} ${c.category}: ${c.expect}s ${JSON.stringify(c.raw ?? '<built>').slice(0, 50)} (${c.why.slice(0, 50)})`, () => {
      const raw = argsRaw(c)
      const schema = toolInputSchemas[c.tool as keyof typeof toolInputSchemas]
      expect(schema, `the corpus names an unknown tool: ${c.tool}`).toBeDefined()
      if (c.expect === 'repair') {
        expect(accepted(raw, schema).value).toEqual(c.parsed)
      } else {
        expect(rejected(raw, schema)).toMatch(new RegExp(`^Invalid arguments for ${c.tool}: `))
      }
    })
  }
})

describe('parseToolArgs: valid JSON', () => {
  it('accepts valid JSON as is and says it was not repaired', () => {
    expect(accepted('{"path":"src/a.ts","offset":3,"limit":10}', ReadFileInput)).toEqual({
      value: { path: 'src/a.ts', offset: 3, limit: 10 },
      repaired: false,
    })
  })

  it('keeps unicode exactly: emoji, CJK, escapes and surrogate pairs', () => {
    const content = 'héllo 中文 \u{1F600} \u00e9 tab\there "q" \\ back'
    expect(accepted(JSON.stringify({ path: 'a.txt', content }), WriteFileInput).value).toEqual({
      path: 'a.txt',
      content,
    })
    const escaped = '{"path":"a.txt","content":"\\ud83d\\ude00 \\u00e9\\u4e2d"}'
    expect(accepted(escaped, WriteFileInput).value).toEqual({ path: 'a.txt', content: '\u{1F600} é中' })
  })

  it('rejects an unpaired surrogate, which cannot be written as UTF-8', () => {
    expect(rejected('{"path":"a.txt","content":"x\\ud800y"}', WriteFileInput)).toContain('surrogate')
  })

  it('accepts any text in file content, including control characters', () => {
    const content = 'a\u0000b\u001b[31mred\r\n'
    expect(accepted(JSON.stringify({ path: 'a.bin', content }), WriteFileInput).value).toEqual({
      path: 'a.bin',
      content,
    })
  })
})

describe('parseToolArgs: safe repairs', () => {
  it.each([
    ['```json\n{"path": "a.ts"}\n```', { path: 'a.ts' }],
    ['```\n{"path": "a.ts"}\n```\n', { path: 'a.ts' }],
    ['```json{"path":"a.ts"}```', { path: 'a.ts' }],
    ['{"path": "a.ts", "limit": 5,}', { path: 'a.ts', limit: 5 }],
    ['{"path": "a.ts" // the file\n}', { path: 'a.ts' }],
    ['{"path": /* c */ "a.ts"}', { path: 'a.ts' }],
    ["{'path': 'a.ts'}", { path: 'a.ts' }],
    ["{'path': 'say \"hi\".txt'}", { path: 'say "hi".txt' }],
    ["{'path': 'it\\'s.txt'}", { path: "it's.txt" }],
    ['{\u201cpath\u201d: \u201ca.ts\u201d}', { path: 'a.ts' }],
    ['{\u2018path\u2019: \u2018a.ts\u2019}', { path: 'a.ts' }],
    ['{path: "a.ts", limit: 2}', { path: 'a.ts', limit: 2 }],
    ['{"path": "a.ts"}}', { path: 'a.ts' }],
    ['{"path": "a.ts"}]', { path: 'a.ts' }],
    ['\ufeff{"path": "a.ts"}', { path: 'a.ts' }],
    ['{"path": "a.ts"', { path: 'a.ts' }],
  ])('repairs %j', (raw, value) => {
    expect(accepted(raw, ReadFileInput)).toEqual({ value, repaired: true })
  })

  it('repairs Python literals and a missing brace after a literal', () => {
    const raw = "{'path': 'x.ts', 'old_string': 'a', 'new_string': 'b', 'replace_all': True"
    expect(accepted(raw, EditFileInput).value).toEqual({
      path: 'x.ts',
      old_string: 'a',
      new_string: 'b',
      replace_all: true,
    })
  })

  it('repairs raw newlines and tabs inside a string without changing them', () => {
    const raw = '{"path":"a.txt","content":"line1\nline2\r\n\tindented"}'
    expect(accepted(raw, WriteFileInput).value).toEqual({
      path: 'a.txt',
      content: 'line1\nline2\r\n\tindented',
    })
  })

  it('keeps smart quotes that are part of a string while repairing around them', () => {
    const raw = '{"path":"a.md","content":"He said \u201chi\u201d and it\u2019s fine",}'
    expect(accepted(raw, WriteFileInput).value).toEqual({
      path: 'a.md',
      content: 'He said \u201chi\u201d and it\u2019s fine',
    })
  })
})

describe('parseToolArgs: repairs that are refused', () => {
  it('refuses a repair that rewrites a string', () => {
    for (const raw of [
      "{'path': 'a.py', 'content': 'print(\"it's\")'}",
      '{"pattern": "\\d+",}',
      '{"pattern": "C:\\path",}',
      '{"pattern": "a "quoted" word"}',
      '{"pattern": "a" + "b"}',
    ])
      expect(rejected(raw, GrepInput)).toMatch(/not valid JSON/)
  })

  it('refuses unquoted values, JavaScript-only literals and extra text', () => {
    for (const raw of [
      '{"path": a.ts}',
      '{"path": "a.ts", "limit": NaN}',
      '{"path": "a.ts", "limit": undefined}',
      '{"path": "a.ts", "limit": 0x10}',
      'here you go: {"path": "a.ts"}',
      '{"path": "a.ts"} thanks',
      '{"path": "a.ts"}{"path": "b.ts"}',
      '{"path": "a.ts"}\n{"path": "b.ts"}',
      '{"path": `a.ts`}',
      '{"path": "a.ts",,}',
    ])
      rejected(raw, ReadFileInput)
  })

  it('refuses arguments that end inside a string or mid-object', () => {
    for (const raw of [
      '{"command": "rm -rf buil',
      '{"command": "ls", "description": "',
      '{"command": "ls", "timeout": 6',
      '{"command": "ls",',
      '{"command": "ls", "timeout":',
      '{"command": "ls", "timeout"',
      '{"command": "ls\\',
      '{"command": "ls", "timeout": tr',
      '{"command": "ls" /* unfinished',
    ])
      rejected(raw, BashInput)
  })

  it('refuses every call of a turn cut by max_tokens, even when its JSON looks complete', () => {
    expect(rejected('{"command": "npm test"', BashInput, { truncated: true })).toContain('cut off')
    expect(rejected('{"command": "npm test"}', BashInput, { truncated: true })).toContain('not run')
  })

  it('refuses deep nesting in broken JSON without overflowing the stack', () => {
    const raw = "{'path': 'a.ts', 'x': " + '['.repeat(200_000) + ']'.repeat(200_000) + '}'
    expect(rejected(raw, ReadFileInput)).toContain('nested')
  })
})

describe('parseToolArgs: keys', () => {
  it('refuses duplicate keys at the top level, nested, escaped or in repaired text', () => {
    expect(rejected('{"command":"ls","command":"rm -rf build"}', BashInput)).toContain(
      '"command" appears more than once',
    )
    expect(rejected('{"command":"ls","comm\\u0061nd":"rm -rf build"}', BashInput)).toContain('more than once')
    expect(rejected('{"path":"a","x":{"k":1,"k":2}}', ReadFileInput)).toContain('"k" appears more than once')
    expect(rejected('{command: "ls", "command": "rm -rf build",}', BashInput)).toContain('more than once')
  })

  it('refuses prototype keys at any depth and never pollutes Object.prototype', () => {
    for (const raw of [
      '{"path":"a.ts","__proto__":{"polluted":true}}',
      '{"path":"a.ts","\\u005f_proto__":{"polluted":true}}',
      '{"path":"a.ts","x":{"constructor":{"prototype":{"polluted":true}}}}',
      '{"path":"a.ts","prototype":1}',
      "{'path': 'a.ts', '__proto__': {'polluted': true},}",
    ])
      expect(rejected(raw, ReadFileInput)).toMatch(/is not allowed/)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('names the unknown field and the valid ones, with a hint when one is close', () => {
    expect(rejected('{"file_path":"a.ts"}', ReadFileInput)).toContain(
      'unknown field "file_path" — valid fields: path, offset, limit (did you mean "path"?)',
    )
    expect(
      rejected('{"path":"a.ts","old_string":"a","new_string":"b","force":true}', EditFileInput),
    ).toContain('unknown field "force"')
  })

  it('keeps the message short when thousands of unknown keys arrive', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `"k${i}":${i}`).join(',')
    const error = rejected(`{"path":"a.ts",${keys}}`, ReadFileInput)
    expect(error.length).toBeLessThan(2000)
    expect(error).toContain('more problems')
  })
})

describe('parseToolArgs: types and messages', () => {
  it('explains a wrong type in words the model can act on', () => {
    expect(rejected('{"path":"a.ts","offset":"5"}', ReadFileInput)).toBe(
      'Invalid arguments for read_file: "offset" must be an integer >= 1 (got "5", a string)',
    )
    expect(rejected('{"command":"sleep 1","timeout":600000}', BashInput)).toContain(
      '"timeout" must be an integer from 1 to 600 (got 600000',
    )
    expect(rejected('{"pattern":"x","case_insensitive":"true"}', GrepInput)).toContain(
      '"case_insensitive" must be true or false',
    )
    expect(rejected('{"path":"a.ts","offset":1.5}', ReadFileInput)).toContain(
      '"offset" must be an integer >= 1 (got 1.5',
    )
    expect(rejected('{"command":"ls","timeout":0}', BashInput)).toContain('"timeout"')
  })

  it('names missing required fields', () => {
    expect(rejected('{}', WriteFileInput)).toBe(
      'Invalid arguments for write_file: missing required field "path" (a non-empty string); missing required field "content" (a string)',
    )
    expect(rejected('{"cmd":"ls"}', BashInput)).toMatch(
      /missing required field "command".*unknown field "cmd"/,
    )
  })

  it('refuses non-object arguments, including JSON encoded twice', () => {
    for (const raw of ['"{\\"path\\": \\"a.ts\\"}"', '42', 'true', 'null', '[]', '[{"path":"a.ts"}]'])
      expect(rejected(raw, ReadFileInput)).toContain('must be a JSON object')
    expect(rejected('', ReadFileInput)).toContain('no arguments')
  })

  it('uses the tool name it is given, or finds it from the schema', () => {
    expect(rejected('{}', GlobInput)).toMatch(/^Invalid arguments for glob: /)
    const custom = z.object({ a: z.string() }).strict()
    expect(parseToolArgs('{}', custom, { toolName: 'mine' })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^Invalid arguments for mine: /),
    })
  })
})

describe('parseToolArgs: size', () => {
  const framing = '{"path":"a.txt","content":""}'
  it('accepts exactly 1 MiB and refuses 1 MiB + 1 byte', () => {
    const exact = `{"path":"a.txt","content":"${'x'.repeat(MAX_ARGS_BYTES - framing.length)}"}`
    expect(Buffer.byteLength(exact)).toBe(MAX_ARGS_BYTES)
    expect(accepted(exact, WriteFileInput).repaired).toBe(false)
    const over = `{"path":"a.txt","content":"${'x'.repeat(MAX_ARGS_BYTES - framing.length + 1)}"}`
    expect(rejected(over, WriteFileInput)).toContain('too large for the user to review')
    // The user reads it on the card too: a sentence, not "Invalid arguments for write_file".
    expect(rejected(over, WriteFileInput)).toMatch(/^Not run: this call's input is 1 MB, more than one call/)
  })

  it('counts bytes, not characters', () => {
    const chars = Math.ceil(MAX_ARGS_BYTES / 2)
    const raw = `{"path":"a.txt","content":"${'é'.repeat(chars)}"}`
    expect(raw.length).toBeLessThan(MAX_ARGS_BYTES)
    expect(rejected(raw, WriteFileInput)).toContain('too large for the user to review')
  })

  it('parses a large valid call quickly', () => {
    const content = 'const x = "y"\n'.repeat(60_000)
    const raw = JSON.stringify({ path: 'big.ts', content })
    const started = performance.now()
    expect(accepted(raw, WriteFileInput).value).toEqual({ path: 'big.ts', content })
    expect(performance.now() - started).toBeLessThan(1000)
  })
})

describe('parseToolArgs: never throws', () => {
  it('answers non-string input and odd schemas with an error value', () => {
    expect(parseToolArgs(undefined as unknown as string, ReadFileInput)).toMatchObject({ ok: false })
    expect(parseToolArgs(42 as unknown as string, ReadFileInput)).toMatchObject({ ok: false })
    expect(parseToolArgs('{"a":1}', z.string())).toMatchObject({ ok: false })
  })

  it('returns a verdict for thousands of generated inputs, and every accepted one satisfies the schema', () => {
    const pieces = [
      '{',
      '}',
      '[',
      ']',
      '"',
      "'",
      ':',
      ',',
      'path',
      'command',
      '"ls"',
      '1',
      '-',
      'True',
      '\\',
      '\n',
      ' ',
      '/*',
      '*/',
      '//',
      '\u201c',
      '__proto__',
      '```',
    ]
    const next = seededInts(7)
    for (let i = 0; i < 3000; i++) {
      const raw = drawPieces(next, pieces, 14).join('')
      const schema = next() % 2 === 0 ? BashInput : ReadFileInput
      const result = parseToolArgs(raw, schema)
      if (result.ok) expect(schema.safeParse(result.value).success).toBe(true)
      else expect(result.error).toMatch(/^Invalid arguments for /)
    }
  })
})

describe('parseToolArgs: whether the text is complete', () => {
  const schema = z.strictObject({ path: z.string() })
  it('says a whole JSON object with wrong content is well formed, so its call can be answered at once', () => {
    for (const raw of ['{"path": 3}', '{"path": "a", "extra": 1}', '{"path": "a", "path": "b"}'])
      expect(parseToolArgs(raw, schema), raw).toMatchObject({ ok: false, wellFormed: true })
  })
  it('does not for text that may have been cut off, or is not an object', () => {
    for (const raw of ['{"path": "a', '{"path": "a",', '[1]', '"x"', ''])
      expect(parseToolArgs(raw, schema), raw).not.toHaveProperty('wellFormed')
  })
})
