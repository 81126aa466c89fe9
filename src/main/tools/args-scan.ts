/**
 * The lenient scanner behind parseToolArgs (args.ts, DESIGN 3.1): it reads a tool call's argument text
 * independently of jsonrepair, so a repair can be checked against what the model wrote, key by key and value
 * by value.
 */

// Our schemas are flat objects; real arguments never nest deeply. The cap also keeps zod, JSON.stringify and
// jsonrepair (recursive) away from inputs built to exhaust the stack.
const MAX_DEPTH = 64
// Keys that reach Object.prototype when the value is later spread or merged (`{...args}`, lodash merge).
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])
const QUOTE_PAIRS: Record<string, string> = { '"': '"', "'": "'", '\u201c': '\u201d', '\u2018': '\u2019' }
const ESCAPES: Record<string, string> = {
  '"': '"',
  "'": "'",
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
}
const LITERALS: Record<string, boolean | null> = {
  true: true,
  false: false,
  null: null,
  True: true,
  False: false,
  None: null,
}
const NUMBER = /-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y
const WORD = /[A-Za-z_$][A-Za-z0-9_$]*/y
const LEADING_FENCE = /^\s*```[A-Za-z0-9_-]*[ \t]*(?:\r?\n)?/
const TRAILING_FENCE = /```\s*$/
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

type Scalar =
  | { role: 'key'; value: string }
  | { role: 'value'; kind: 'string'; value: string }
  | { role: 'value'; kind: 'number'; value: number }
  | { role: 'value'; kind: 'literal'; value: boolean | null }

type Frame =
  { type: 'array' } | { type: 'object'; expect: 'key' | 'colon' | 'value' | 'comma'; keys: Set<string> }

interface Scan {
  scalars: Scalar[]
  /** Why the text cannot be read safely, in words for the model; null when it can. */
  problem: string | null
  duplicateKey: string | null
  forbiddenKey: string | null
}

/**
 * Our own reading of the text: JSON plus the slips models make that have one obvious meaning (single,
 * smart or missing quotes around keys, Python literals, comments, a code fence, trailing commas, missing
 * closing brackets after a complete value, raw newlines inside strings). Iterative, so depth costs no stack.
 */
export function scanJson(source: string): Scan {
  const text = source.replace(LEADING_FENCE, '').replace(TRAILING_FENCE, '')

  const scalars: Scalar[] = []
  const stack: Frame[] = []
  let rootClosed = false
  let last: 'open' | 'close' | 'colon' | 'comma' | 'key' | 'string' | 'number' | 'literal' | null = null
  let duplicateKey: string | null = null
  let forbiddenKey: string | null = null
  const fail = (problem: string): Scan => ({ scalars, problem, duplicateKey, forbiddenKey })

  // Where the next scalar or container goes; returns its role or a problem.
  const place = (): 'key' | 'value' | string => {
    if (rootClosed) return 'there is text after the closing brace of the object'
    const top = stack[stack.length - 1]
    if (top === undefined || top.type === 'array') return 'value'
    switch (top.expect) {
      // A missing comma between members (`"a": 1 "b": 2`) has one meaning; the comparison with the
      // repair still checks that nothing moved.
      case 'key':
      case 'comma':
        top.expect = 'colon'
        return 'key'
      case 'value':
        top.expect = 'comma'
        return 'value'
      case 'colon':
        return 'a key is not followed by ":"'
    }
  }
  const addKey = (key: string): void => {
    const top = stack[stack.length - 1]
    if (top?.type !== 'object') return
    if (FORBIDDEN_KEYS.has(key)) forbiddenKey ??= key
    if (top.keys.has(key)) duplicateKey ??= key
    top.keys.add(key)
    scalars.push({ role: 'key', value: key })
  }

  let i = 0
  while (i < text.length) {
    const char = text[i] ?? ''
    if (/\s/.test(char)) {
      i += 1
      continue
    }
    if (char === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i)
      i = end === -1 ? text.length : end + 1
      continue
    }
    if (char === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2)
      if (end === -1) return fail('a /* comment is never closed')
      i = end + 2
      continue
    }
    if (char === '{' || char === '[') {
      const role = place()
      if (role === 'key') return fail(`a key is expected at position ${i}, not "${char}"`)
      if (role !== 'value') return fail(role)
      stack.push(char === '{' ? { type: 'object', expect: 'key', keys: new Set() } : { type: 'array' })
      if (stack.length > MAX_DEPTH) return fail(`the arguments are nested more than ${MAX_DEPTH} levels deep`)
      last = 'open'
      i += 1
      continue
    }
    if (char === '}' || char === ']') {
      // Extra closing brackets after the object is complete are a harmless slip (`{"a": 1}}`).
      if (stack.length > 0) stack.pop()
      if (stack.length === 0) rootClosed = true
      last = 'close'
      i += 1
      continue
    }
    if (char === ':') {
      const top = stack[stack.length - 1]
      if (top?.type !== 'object' || top.expect !== 'colon') return fail(`unexpected ":" at position ${i}`)
      top.expect = 'value'
      last = 'colon'
      i += 1
      continue
    }
    if (char === ',') {
      const top = stack[stack.length - 1]
      if (top === undefined) return fail(`unexpected "," at position ${i}`)
      if (top.type === 'object') {
        if (top.expect === 'colon' || top.expect === 'value')
          return fail(`a value is missing before "," at position ${i}`)
        top.expect = 'key'
      }
      last = 'comma'
      i += 1
      continue
    }
    const close = QUOTE_PAIRS[char]
    if (close !== undefined) {
      // Find the closing quote first (a backslash always takes the next character with it), one char code
      // at a time: a megabyte of content costs milliseconds.
      const closeCode = close.charCodeAt(0)
      let j = i + 1
      let standard = close === '"'
      while (j < text.length) {
        const code = text.charCodeAt(j)
        if (code === closeCode) break
        if (code === 0x5c) {
          j += 2
          continue
        }
        if (code < 0x20) standard = false
        j += 1
      }
      if (j >= text.length) return fail('the arguments end inside a string, so they look cut off')
      let value: string | null = null
      if (standard) {
        try {
          value = JSON.parse(text.slice(i, j + 1)) as string
        } catch {
          // An escape JSON does not know (`\d`, `\'`): decoded below the way the writer meant it.
        }
      }
      if (value === null) {
        const body = text.slice(i + 1, j)
        const parts: string[] = []
        let k = 0
        for (let slash = body.indexOf('\\'); slash !== -1; slash = body.indexOf('\\', k)) {
          parts.push(body.slice(k, slash))
          const next = body[slash + 1] ?? ''
          const hex = body.slice(slash + 2, slash + 6)
          const simple = ESCAPES[next]
          if (simple !== undefined) {
            parts.push(simple)
            k = slash + 2
          } else if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(hex)) {
            parts.push(String.fromCharCode(parseInt(hex, 16)))
            k = slash + 6
          } else {
            // Not a JSON escape (`\d` in a regex): the writer meant a backslash. If the repair reads it any
            // other way, the comparison refuses it.
            parts.push('\\' + next)
            k = slash + 2
          }
        }
        parts.push(body.slice(k))
        value = parts.join('')
      }
      // UTF-8 cannot carry a lone surrogate: written to a file it would silently become U+FFFD.
      if (LONE_SURROGATE.test(value))
        return fail('a string contains an unpaired UTF-16 surrogate (\\ud800-\\udfff)')
      const role = place()
      if (role === 'key') {
        addKey(value)
        last = 'key'
      } else if (role === 'value') {
        scalars.push({ role: 'value', kind: 'string', value })
        last = 'string'
      } else {
        return fail(role)
      }
      i = j + 1
      continue
    }
    NUMBER.lastIndex = i
    const number = NUMBER.exec(text)
    WORD.lastIndex = i
    const word = number ? null : WORD.exec(text)
    const lexeme = number?.[0] ?? word?.[0]
    if (lexeme === undefined) return fail(`unexpected character "${char}" at position ${i}`)
    const after = text[i + lexeme.length]
    if (after !== undefined && !/[\s,:}\]/]/.test(after))
      return fail(`unexpected text "${text.slice(i, i + lexeme.length + 1)}" at position ${i}`)
    const role = place()
    if (role === 'key') {
      // Unquoted keys (`{pattern: "x"}`) are only identifiers, so where they end is never in doubt.
      if (number) return fail(`a key is expected at position ${i}, not a number`)
      addKey(lexeme)
      last = 'key'
    } else if (role === 'value') {
      if (number) {
        scalars.push({ role: 'value', kind: 'number', value: Number(lexeme) })
        last = 'number'
      } else if (Object.hasOwn(LITERALS, lexeme)) {
        scalars.push({ role: 'value', kind: 'literal', value: LITERALS[lexeme] ?? null })
        last = 'literal'
      } else {
        return fail(`the unquoted value ${lexeme} at position ${i} is not JSON (strings need double quotes)`)
      }
    } else {
      return fail(role)
    }
    i += lexeme.length
  }

  // Missing closing brackets are fine only right after a complete string or literal value (or a closed
  // container). After a number (`"timeout": 6` may be `600` cut short), a key, ":" or "," the call was cut
  // mid-way and guessing the rest would run something the model did not finish writing.
  if (stack.length > 0 && last !== 'string' && last !== 'literal' && last !== 'close')
    return fail('the arguments stop before the object is complete, so they look cut off')
  return { scalars, problem: null, duplicateKey, forbiddenKey }
}

export function sameScalars(a: Scalar[], b: Scalar[]): boolean {
  if (a.length !== b.length) return false
  return a.every((x, index) => {
    const y = b[index]
    if (y === undefined || x.role !== y.role) return false
    if (x.role === 'key' || y.role === 'key') return x.value === y.value
    return x.kind === y.kind && Object.is(x.value, y.value)
  })
}
