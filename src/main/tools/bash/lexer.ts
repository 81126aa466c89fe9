/**
 * The strict word lexer of the bash validator (DESIGN 2.1). tree-sitter tells us the *shape* of a command, but
 * its idea of a word is looser than bash's in places (it keeps `a\ b` as one word, reads `{` as a word,
 * tolerates `$"..."`), so every word is lexed again here from the raw text with a deliberately small language:
 *
 * - plain characters from a conservative set (letters, digits and `_ - . , / : = + @ % ^`),
 * - `~` only where bash never expands it (inside a word, not after `=` or `:`),
 * - `'...'` holding anything but `'` (bash expands nothing inside),
 * - `"..."` holding no `$`, backtick, backslash or `!` (the only characters bash treats specially there),
 * - words separated by plain spaces (U+0020) only.
 *
 * Everything else is refused with a reason the model can act on. The lexer also decodes each word (quote
 * removal), so the deny rules compare what the program will actually receive: `'-exec'` is `-exec`.
 * Indexes are UTF-16 offsets into the source, the same unit web-tree-sitter reports.
 */

export interface Word {
  /** The word exactly as written, quotes included. */
  raw: string
  /** The word after quote removal: the argument the program receives. */
  value: string
  start: number
  end: number
  /** True when any part of the word was quoted. */
  quoted: boolean
}

export type LexResult = { ok: true; words: Word[] } | { ok: false; reason: string }

/** Characters that mean nothing to bash outside quotes. */
const PLAIN = /[A-Za-z0-9_\-.,/:=+@%^]/

/**
 * At most this many words and quoted parts: no real command needs more, and the parser's cost grows with
 * the count (8 KiB of `""` is 4000 string nodes).
 */
export const MAX_PARTS = 1000

export function lexWords(source: string): LexResult {
  const words: Word[] = []
  let parts = 0
  let i = 0
  while (i < source.length) {
    if (source[i] === ' ') {
      i++
      continue
    }
    const start = i
    let value = ''
    let quoted = false
    while (i < source.length && source[i] !== ' ') {
      const ch = source[i] as string
      if (ch === "'" || ch === '"') {
        const close = ch === "'" ? singleQuoteEnd(source, i) : doubleQuoteEnd(source, i)
        if (typeof close === 'string') return { ok: false, reason: close }
        value += source.slice(i + 1, close)
        quoted = true
        parts++
        i = close + 1
        continue
      }
      if (ch === '~') {
        // bash expands `~` at the start of a word and after `=` or `:` (assignment-like words); anywhere
        // else (`HEAD~1`) it is a plain character. A quote just before it is refused too: simpler to reason
        // about than bash's exact tilde-prefix rules.
        const prev = i > start ? source[i - 1] : undefined
        if (prev === undefined || !PLAIN.test(prev) || prev === '=' || prev === ':')
          return {
            ok: false,
            reason:
              '`~` (home directory expansion) is not allowed; use a path relative to the workspace, or quote the `~` if it is literal text',
          }
        value += ch
        i++
        continue
      }
      if (PLAIN.test(ch)) {
        value += ch
        i++
        continue
      }
      return { ok: false, reason: unquotedReason(source, i, start) }
    }
    words.push({ raw: source.slice(start, i), value, start, end: i, quoted })
    if (++parts > MAX_PARTS)
      return {
        ok: false,
        reason: `the command has more than ${MAX_PARTS} words and quoted parts; split the work into several commands, or put the list in a file`,
      }
  }
  return { ok: true, words }
}

/** Where the single-quoted string opened at `open` closes, or why it is refused. */
function singleQuoteEnd(source: string, open: number): number | string {
  const close = source.indexOf("'", open + 1)
  return close === -1 ? "a single quote is not closed; close it with `'`" : close
}

/** Where the double-quoted string opened at `open` closes, or why it is refused. */
function doubleQuoteEnd(source: string, open: number): number | string {
  let j = open + 1
  while (j < source.length && source[j] !== '"') {
    const inner = source[j] as string
    // `$` and backticks keep their meaning inside double quotes.
    if (inner === '$' || inner === '`') return unquotedReason(source, j, -1)
    const problem = DOUBLE_QUOTED_SPECIALS[inner]
    if (problem !== undefined) return problem
    j++
  }
  return j >= source.length ? 'a double quote is not closed; close it with `"`' : j
}

const DOUBLE_QUOTED_SPECIALS: Record<string, string> = {
  '\\': 'backslash escapes are not allowed; use single quotes for literal text',
  '!': '`!` inside double quotes is history expansion in bash; use single quotes for literal text',
}

/** Reasons for refused shell constructs, shared with the tree-sitter checks of validate.ts. */
export const REASONS = {
  pipes:
    'pipes (`|`) are not allowed; run the command without the pipe (use the grep tool to search, read_file to see part of a file), or quote a literal `|`',
  lists: 'command lists (`&&`, `||`) are not allowed; run one command per call and check its result',
  semicolon: '`;` is not allowed: run one command per call',
  background:
    'background jobs (`&`) are not allowed: a command must finish within its call; run it in the foreground (pass a timeout if it is long)',
  redirects:
    'redirects (`>`, `>>`, `<`, `2>&1`) are not allowed; use the write_file tool to write files and read_file to read them (stdout and stderr are both captured already)',
  heredocs: 'here-documents and here-strings are not allowed; write the text to a file with write_file',
  processSubstitution:
    'process substitution (`<(...)`, `>(...)`) is not allowed; run each command on its own',
  substitution:
    'command substitution (`$(...)` or backticks) is not allowed; run the inner command on its own first and use its output',
  expansion: 'variable expansion (`$NAME`, `${...}`) is not allowed; write the value literally',
  arithmetic:
    'shell arithmetic (`$((...))`, `((...))`) is not allowed; compute the value yourself and write it literally',
  ansiC: "`$'...'` strings (with escapes) are not allowed; use plain single quotes",
  translated: '`$"..."` strings are not allowed; use plain single quotes',
  groups: 'subshells and groups (`( ... )`, `{ ...; }`) are not allowed; run the command directly',
  functions: 'defining shell functions is not allowed; run one simple command per call',
  control:
    'shell control structures (if, for, while, case, functions) are not allowed; run one simple command per call',
  negation: '`!` (negation) is not allowed; run the command without it',
  tests:
    'test expressions (`[ ... ]`, `[[ ... ]]`) are not allowed; use the read_file or glob tools to check files',
  braces:
    'brace expansion (`{a,b}`, `{1..3}`) is not allowed: it builds words bash runs; write each word out, or quote literal braces',
  comments: 'comments (`#`) are not allowed: they hide text from the reviewer; remove the comment',
  assignments:
    'variable assignments (`NAME=value cmd`, `export`, `declare`) are not allowed: variables cannot be passed this way; use command-line options, or a config file',
  plainName:
    'the command name must be written plainly, without quotes or escapes (`rm`, not `"rm"` or `r\'\'m`); write the program name as a plain word',
} as const

/**
 * Why an unquoted character is refused, from its context: the same character starts different constructs
 * (`|` a pipe, `||` a list; `$(` a substitution, `$((` arithmetic), and the reason should name the one the
 * model wrote. `wordStart` is the index where the current word began.
 */
export function unquotedReason(source: string, i: number, wordStart: number): string {
  const ch = source[i] as string
  const next = source[i + 1]
  const atWordStart = i === wordStart
  const wholeWord = atWordStart && (next === undefined || next === ' ')
  switch (ch) {
    case '|':
      return next === '|' ? REASONS.lists : REASONS.pipes
    case '&':
      if (next === '&') return REASONS.lists
      if (next === '>') return REASONS.redirects
      return REASONS.background
    case ';':
      return REASONS.semicolon
    case '<':
    case '>':
      if (next === '(') return REASONS.processSubstitution
      if (ch === '<' && next === '<') return REASONS.heredocs
      return REASONS.redirects
    case '(':
      if (source.startsWith('((', i) && source.slice(0, i).trim() === '') return REASONS.arithmetic
      if (next === ')' && !atWordStart) return REASONS.functions
      return REASONS.groups
    case ')':
      return REASONS.groups
    case '$':
      if (source.startsWith('$((', i) || next === '[') return REASONS.arithmetic
      if (next === '(' || next === '`') return REASONS.substitution
      if (next === "'") return REASONS.ansiC
      if (next === '"') return REASONS.translated
      return REASONS.expansion
    case '`':
      return REASONS.substitution
    case '\\':
      return 'backslash escapes are not allowed; put literal text in single quotes instead'
    case '*':
    case '?':
    case '[':
    case ']':
      if (ch === '[' && (wholeWord || (atWordStart && next === '[' && (source[i + 2] ?? ' ') === ' ')))
        return REASONS.tests
      return 'unquoted glob characters (`*`, `?`, `[`) are not allowed: expanded file names can turn into options; quote the pattern, or list the files (use the glob tool to find them)'
    case '{':
    case '}':
      return wholeWord ? REASONS.groups : REASONS.braces
    case '#':
      return atWordStart ? REASONS.comments : '`#` is not allowed unquoted; quote a literal `#`'
    case '!':
      return wholeWord
        ? REASONS.negation
        : '`!` is not allowed unquoted (history expansion); quote it with single quotes if it is literal text'
    default: {
      const code = ch.codePointAt(0) ?? 0
      return code > 0x7e
        ? 'non-ASCII characters must be inside single or double quotes'
        : `the character \`${ch}\` is not allowed unquoted; put literal text in single quotes`
    }
  }
}
