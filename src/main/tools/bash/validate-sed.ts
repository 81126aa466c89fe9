import { ALLOW, deny, longName, type Verdict } from './validate-options'

/**
 * sed policy. Printing and substituting to stdout is useful and harmless, but GNU sed can also execute
 * commands (`e`, the `e` flag of `s`), write files (`w`, `W`, the `w` flag) and read arbitrary files (`r`,
 * `R`), and `-i` edits in place. Rather than deny sed outright, every script is scanned with a small parser
 * of the sed language that only knows the harmless commands: anything it does not understand is refused
 * (fail-closed). `--sandbox` makes GNU sed itself refuse e/r/w, but -i is still refused then.
 */

const EDIT_HINT = 'use the edit_file tool to change files'

export function checkSed(args: readonly string[]): Verdict {
  const scripts: string[] = []
  let sandbox = false
  let positionalScript = true
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--') {
      // Everything after `--` is positional, and the first positional may still be the script.
      const next = args[i + 1]
      if (positionalScript && next !== undefined) scripts.push(next)
      break
    }
    const long = longName(arg)
    if (long !== null) {
      // getopt_long accepts any unambiguous abbreviation; an ambiguous one is an error, refused here too.
      const matches = SED_LONG.filter((o) => o.name.startsWith(long))
      const option = matches.length === 1 ? matches[0] : undefined
      if (option === undefined) return deny(`sed option \`${long}\` is not allowed here`)
      switch (option.kind) {
        case 'flag':
          if (option.name === '--sandbox') sandbox = true
          break
        case 'value':
          if (!arg.includes('=')) i++
          break
        case 'script': {
          const script = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[++i]
          if (script === undefined) return deny('sed `--expression` needs a script')
          scripts.push(script)
          positionalScript = false
          break
        }
        case 'in-place':
          return deny(`\`sed ${long}\` edits files in place; ${EDIT_HINT}`)
        case 'file':
          return deny(
            `\`sed ${long}\` reads its script from a file the checker cannot inspect; pass the script inline`,
          )
        default:
          option.kind satisfies never
      }
      continue
    }
    if (arg.length > 1 && arg.startsWith('-')) {
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j] as string
        if ('nErsuzb'.includes(letter)) continue
        if (letter === 'i') return deny(`\`sed -i\` edits files in place; ${EDIT_HINT}`)
        if (letter === 'f')
          return deny('`sed -f` reads its script from a file the checker cannot inspect; pass it inline')
        if (letter === 'e' || letter === 'l') {
          // The rest of the cluster, or else the next argument, is the option's value.
          const rest = arg.slice(j + 1)
          const value = rest !== '' ? rest : args[++i]
          if (value === undefined) return deny(`sed \`-${letter}\` needs a value`)
          if (letter === 'e') {
            scripts.push(value)
            positionalScript = false
          }
          break
        }
        return deny(`sed option \`-${letter}\` is not allowed here`)
      }
      continue
    }
    if (positionalScript) {
      scripts.push(arg)
      positionalScript = false
    }
  }
  if (sandbox) return ALLOW
  for (const script of scripts) {
    const verdict = scanSedScript(script)
    if (!verdict.ok) return verdict
  }
  return ALLOW
}

type SedOptionKind = 'flag' | 'value' | 'script' | 'in-place' | 'file'

const SED_LONG: readonly { name: string; kind: SedOptionKind }[] = [
  { name: '--quiet', kind: 'flag' },
  { name: '--silent', kind: 'flag' },
  { name: '--regexp-extended', kind: 'flag' },
  { name: '--separate', kind: 'flag' },
  { name: '--unbuffered', kind: 'flag' },
  { name: '--null-data', kind: 'flag' },
  { name: '--zero-terminated', kind: 'flag' },
  { name: '--posix', kind: 'flag' },
  { name: '--debug', kind: 'flag' },
  { name: '--sandbox', kind: 'flag' },
  { name: '--binary', kind: 'flag' },
  { name: '--help', kind: 'flag' },
  { name: '--version', kind: 'flag' },
  { name: '--line-length', kind: 'value' },
  { name: '--expression', kind: 'script' },
  { name: '--in-place', kind: 'in-place' },
  { name: '--follow-symlinks', kind: 'flag' },
  { name: '--file', kind: 'file' },
]

const BRACKET_UNCLEAR =
  'a sed bracket expression (`[...]`) is unterminated or holds a backslash, so where the expression ends is unclear; write the characters outside brackets, escaped with a backslash'

/**
 * Index of the `]` that closes the bracket expression opening at `start`, the POSIX way: a `]` first (after
 * an optional `^`) is literal, and `[:class:]`, `[=x=]`, `[.x.]` are read whole. Null when it does not
 * close, or when it holds a backslash (literal in POSIX, not always in GNU sed: refused as unclear).
 */
function bracketEnd(script: string, start: number): number | null {
  let j = start + 1
  if (script[j] === '^') j++
  if (script[j] === ']') j++
  while (j < script.length) {
    const ch = script[j] as string
    if (ch === '\\') return null
    if (ch === ']') return j
    if (ch === '[' && ':=.'.includes(script[j + 1] ?? '')) {
      const close = script.indexOf(`${script[j + 1]}]`, j + 2)
      if (close === -1) return null
      j = close + 2
      continue
    }
    j++
  }
  return null
}

/** Commands that take no argument (GNU sed). */
const SIMPLE_COMMANDS = '=dDgGhHnNpPxzF'

/** Scans one sed script (one `-e` chunk: GNU sed ends each chunk with a newline). */
export function scanSedScript(script: string): Verdict {
  let i = 0
  const peek = (): string | undefined => script[i]
  const skipBlanks = (): void => {
    while (peek() === ' ') i++
  }
  /**
   * Reads up to the unescaped delimiter; false when it never comes. In a regular expression GNU sed skips
   * bracket expressions whole, so the delimiter does not end it there: `s/[/]/;#/e` is the regex `[/]`, the
   * replacement `;#` and the `e` flag, not a harmless `s` and a comment.
   */
  const readDelimited = (delimiter: string, regex: boolean): boolean | 'unclear' => {
    while (i < script.length) {
      const ch = script[i] as string
      if (ch === '\\') {
        i += 2
        continue
      }
      if (regex && ch === '[') {
        const end = bracketEnd(script, i)
        if (end === null) return 'unclear'
        i = end + 1
        continue
      }
      i++
      if (ch === delimiter) return true
    }
    return false
  }
  const readAddress = (): Verdict | null => {
    const ch = peek()
    if (ch === undefined) return null
    if (/[0-9]/.test(ch)) {
      while (/[0-9~]/.test(peek() ?? '')) i++
    } else if (ch === '$') {
      i++
    } else if (ch === '/' || ch === '\\') {
      const delimiter = ch === '/' ? '/' : script[i + 1]
      if (delimiter === undefined || delimiter === '\\') return deny('sed address is not terminated')
      i += ch === '/' ? 1 : 2
      const read = readDelimited(delimiter, true)
      if (read === 'unclear') return deny(BRACKET_UNCLEAR)
      if (!read) return deny('sed address is not terminated')
      while (peek() === 'I' || peek() === 'M') i++
    } else {
      return null
    }
    return ALLOW
  }

  for (;;) {
    while (peek() === ' ' || peek() === ';') i++
    if (i >= script.length) return ALLOW
    const first = readAddress()
    if (first !== null && !first.ok) return first
    if (first !== null) {
      skipBlanks()
      if (peek() === ',') {
        i++
        skipBlanks()
        if (peek() === '+' || peek() === '~') {
          i++
          if (!/[0-9]/.test(peek() ?? '')) return deny('sed address is malformed')
          while (/[0-9]/.test(peek() ?? '')) i++
        } else {
          const second = readAddress()
          if (second === null) return deny('sed address is malformed')
          if (!second.ok) return second
        }
      }
    }
    skipBlanks()
    while (peek() === '!') {
      i++
      skipBlanks()
    }
    const command = peek()
    if (command === undefined) return deny('sed address has no command')
    i++
    if (command === '{') continue
    if (command === '#' || command === 'a' || command === 'i' || command === 'c') {
      // A comment, or text to append/insert/change: the rest of the chunk is data, never commands.
      return ALLOW
    }
    if (command === ':') {
      if (peek() === undefined || peek() === ';') return deny('sed `:` needs a label')
      while (i < script.length && peek() !== ';') i++
      continue
    }
    if (command === 'b' || command === 't' || command === 'T' || command === 'v') {
      while (i < script.length && peek() !== ';' && peek() !== '}') i++
      continue
    }
    if (command === 'q' || command === 'Q' || command === 'l' || command === 'L') {
      skipBlanks()
      while (/[0-9]/.test(peek() ?? '')) i++
    } else if (command === 's' || command === 'y') {
      const delimiter = peek()
      if (delimiter === undefined || delimiter === '\\' || delimiter === ' ')
        return deny(`sed \`${command}\` command is malformed`)
      i++
      const pattern = readDelimited(delimiter, command === 's')
      const replacement = pattern === true ? readDelimited(delimiter, false) : pattern
      if (pattern === 'unclear') return deny(BRACKET_UNCLEAR)
      if (replacement !== true) return deny(`sed \`${command}\` command is not terminated`)
      if (command === 's') {
        while (i < script.length && /[gpiImM0-9ew]/.test(peek() ?? '')) {
          const flag = peek() as string
          if (flag === 'e')
            return deny('the sed `e` flag executes the pattern space as a shell command; it is not allowed')
          if (flag === 'w') return deny(`the sed \`w\` flag writes a file; ${EDIT_HINT}`)
          i++
        }
      }
    } else if (command === '}' || SIMPLE_COMMANDS.includes(command)) {
      // no argument
    } else if (command === 'e') {
      return deny('the sed `e` command executes a shell command; it is not allowed')
    } else if (command === 'w' || command === 'W') {
      return deny(`the sed \`${command}\` command writes a file; ${EDIT_HINT}`)
    } else if (command === 'r' || command === 'R') {
      return deny(`the sed \`${command}\` command reads another file; use the read_file tool`)
    } else {
      return deny(`sed command \`${command}\` is not understood by the checker, so it is not allowed`)
    }
    skipBlanks()
    const next = peek()
    if (next !== undefined && next !== ';' && next !== '}' && next !== '#')
      return deny(`unexpected \`${next}\` after the sed \`${command}\` command`)
  }
}
