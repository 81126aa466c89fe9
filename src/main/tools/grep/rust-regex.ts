import { own } from '../../../shared/own'

/**
 * Rust regex syntax the model writes for ripgrep, translated to a JavaScript RegExp, or refused with a
 * reason when the meaning would change (JavaScript would otherwise silently read it differently).
 */
export function translateRegex(
  pattern: string,
  caseInsensitive: boolean,
): { ok: true; source: string; flags: string } | { ok: false; reason: string } {
  const flags = new Set<string>()
  if (caseInsensitive) flags.add('i')
  let rest = pattern
  // A leading flag group applies to the whole pattern; `s` and `m` change nothing when matching one line.
  const leading = /^\(\?([imsU]+)\)/.exec(rest)
  if (leading) {
    const letters = leading[1] ?? ''
    if (letters.includes('U'))
      return { ok: false, reason: 'the flag (?U) (swap greedy and lazy) has no JavaScript equivalent' }
    if (letters.includes('i')) flags.add('i')
    rest = rest.slice(leading[0].length)
  }

  let out = ''
  let inClass = false
  let needsUnicode = false
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i] as string
    const next = rest[i + 1]
    if (c === '\\') {
      if (next === undefined) return { ok: false, reason: 'the pattern ends with a lone backslash' }
      if (next === 'Q' && !inClass) {
        // \Q...\E quotes everything literally.
        const end = rest.indexOf('\\E', i + 2)
        const literal = rest.slice(i + 2, end === -1 ? rest.length : end)
        out += literal.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')
        i = end === -1 ? rest.length : end + 1
        continue
      }
      if ((next === 'A' || next === 'z' || next === 'Z') && !inClass) {
        out += next === 'A' ? '^' : '$'
        i += 1
        continue
      }
      if ((next === '<' || next === '>') && !inClass) {
        out += next === '<' ? '\\b(?=\\w)' : '\\b(?<=\\w)'
        i += 1
        continue
      }
      if (next === 'p' || next === 'P') {
        needsUnicode = true
        const brace = rest[i + 2] === '{'
        if (brace) {
          const end = rest.indexOf('}', i + 3)
          if (end === -1) return { ok: false, reason: `unclosed \\${next}{` }
          // Rust takes scripts bare (`\p{Greek}`) and `:` for `=`; JavaScript wants `\p{Script=Greek}`.
          const name = rest.slice(i + 3, end).replace(':', '=')
          out += `\\${next}{${isUnicodeProperty(name) || name.includes('=') ? name : `Script=${name}`}}`
          i = end
        } else {
          const letter = rest[i + 2]
          if (letter === undefined) return { ok: false, reason: `\\${next} needs a Unicode class name` }
          out += `\\${next}{${letter}}`
          i += 2
        }
        continue
      }
      if (next === 'x' && rest[i + 2] === '{') {
        const end = rest.indexOf('}', i + 3)
        if (end === -1) return { ok: false, reason: 'unclosed \\x{' }
        needsUnicode = true
        out += `\\u{${rest.slice(i + 3, end)}}`
        i = end
        continue
      }
      out += c + next
      i += 1
      continue
    }
    if (inClass) {
      if (c === ']') {
        inClass = false
        out += c
        continue
      }
      if (c === '[' && next === ':') {
        const end = rest.indexOf(':]', i + 2)
        const name = end === -1 ? '' : rest.slice(i + 2, end)
        const negated = name.startsWith('^')
        const ascii = own(POSIX_CLASSES, negated ? name.slice(1) : name)
        if (ascii === undefined || negated)
          return { ok: false, reason: `the POSIX class [:${name}:] is not supported by the built-in search` }
        out += ascii
        i = end + 1
        continue
      }
      if (c === '[')
        return {
          ok: false,
          reason: 'nested character classes ([a[b]]) are not supported by the built-in search',
        }
      if ((c === '&' || c === '~' || c === '-') && next === c && rest[i - 1] !== '[')
        return {
          ok: false,
          reason: `character class set operations (${c}${c}) are not supported by the built-in search`,
        }
      out += c
      continue
    }
    if (c === '[') {
      inClass = true
      out += c
      // `]` right after `[` or `[^` is a literal in Rust, and must be escaped in JavaScript.
      if (next === '^') {
        out += '^'
        i += 1
      }
      if (rest[i + 1] === ']') {
        out += '\\]'
        i += 1
      }
      continue
    }
    if (c === '(' && next === '?') {
      const group = rest.slice(i)
      const named = /^\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(group)
      if (named) {
        out += `(?<${named[1]}>`
        i += named[0].length - 1
        continue
      }
      const backref = /^\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)/.exec(group)
      if (backref) {
        out += `\\k<${backref[1]}>`
        i += backref[0].length - 1
        continue
      }
      if (/^\(\?(?::|=|!|<=|<!)/.test(group)) {
        out += c
        continue
      }
      return {
        ok: false,
        reason:
          'inline flags inside the pattern (e.g. (?i:...) or (?x)) are not supported by the built-in search; use case_insensitive instead',
      }
    }
    out += c
  }
  if (inClass) return { ok: false, reason: 'unclosed character class [' }
  if (needsUnicode) flags.add('u')
  const flagText = [...flags].sort().join('')
  try {
    new RegExp(out, flagText)
  } catch (error) {
    // V8 says "Invalid regular expression: /<source>/<flags>: <problem>"; the source is our translation.
    return {
      ok: false,
      reason: (error as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, ''),
    }
  }
  return { ok: true, source: out, flags: flagText }
}

function isUnicodeProperty(name: string): boolean {
  try {
    new RegExp(`\\p{${name}}`, 'u')
    return true
  } catch {
    return false
  }
}

const POSIX_CLASSES: Record<string, string> = {
  alnum: 'a-zA-Z0-9',
  alpha: 'a-zA-Z',
  ascii: '\\x00-\\x7F',
  blank: ' \\t',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\s',
  upper: 'A-Z',
  word: '\\w',
  xdigit: '0-9A-Fa-f',
}
