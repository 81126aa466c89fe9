import { own } from '../../../shared/own'

/**
 * A small syntax highlighter for diffs and file previews: keywords, strings, comments, numbers for the
 * languages an agent edits most. Line by line, carrying block-comment and multi-line-string state across lines,
 * so a diff can highlight only the lines it shows. It returns tokens for React text nodes, never markup.
 *
 * Not a parser: good enough to read at a glance, and linear in the input (no backtracking regexes), so a huge
 * or hostile line cannot stall the renderer.
 */

export type TokenKind = 'plain' | 'keyword' | 'string' | 'comment' | 'number' | 'type' | 'punct'

export interface Token {
  kind: TokenKind
  text: string
}

interface LanguageSpec {
  keywords: ReadonlySet<string>
  lineComment?: readonly string[]
  block?: readonly [open: string, close: string]
  /** Quote characters; the ones listed in `multiline` may span lines (template literals, triple quotes). */
  quotes: string
  multiline?: readonly string[]
  /** Names starting with a capital are types (TS, Rust, Go, Java...). */
  capitalTypes?: boolean
}

const words = (s: string): ReadonlySet<string> => new Set(s.split(/\s+/).filter(Boolean))

const JS = words(`
  abstract as async await break case catch class const continue debugger declare default delete do else enum
  export extends false finally for from function get if implements import in infer instanceof interface is keyof
  let namespace new null of private protected public readonly return satisfies set static super switch this throw
  true try type typeof undefined var void while with yield`)

const LANGUAGES: Record<string, LanguageSpec> = {
  js: {
    keywords: JS,
    lineComment: ['//'],
    block: ['/*', '*/'],
    quotes: `'"\``,
    multiline: ['`'],
    capitalTypes: true,
  },
  py: {
    keywords:
      words(`and as assert async await break class continue def del elif else except False finally for from
      global if import in is lambda None nonlocal not or pass raise return self True try while with yield match case`),
    lineComment: ['#'],
    quotes: `'"`,
    multiline: ['"""', "'''"],
    capitalTypes: true,
  },
  rs: {
    keywords:
      words(`as async await break const continue crate dyn else enum extern false fn for if impl in let loop
      match mod move mut pub ref return self Self static struct super trait true type unsafe use where while`),
    lineComment: ['//'],
    block: ['/*', '*/'],
    quotes: '"',
    capitalTypes: true,
  },
  go: {
    keywords: words(`break case chan const continue default defer else fallthrough for func go goto if import
      interface map package range return select struct switch type var nil true false`),
    lineComment: ['//'],
    block: ['/*', '*/'],
    quotes: '"`',
    multiline: ['`'],
    capitalTypes: true,
  },
  c: {
    keywords:
      words(`auto break case char class const continue default delete do double else enum extern false float
      for goto if inline int long namespace new nullptr private protected public return short signed sizeof static
      struct switch template this throw true try typedef typename union unsigned using virtual void volatile while
      boolean byte extends final finally implements import instanceof interface native package super synchronized
      throws transient var null`),
    lineComment: ['//'],
    block: ['/*', '*/'],
    quotes: `'"`,
    capitalTypes: true,
  },
  sh: {
    keywords:
      words(`if then else elif fi case esac for while until do done in function return local export set
      unset readonly shift exit echo cd`),
    lineComment: ['#'],
    quotes: `'"`,
  },
  css: { keywords: words('important media import from to'), block: ['/*', '*/'], quotes: `'"` },
  json: { keywords: words('true false null'), quotes: '"' },
  yaml: { keywords: words('true false null yes no on off'), lineComment: ['#'], quotes: `'"` },
  toml: { keywords: words('true false'), lineComment: ['#'], quotes: `'"`, multiline: ['"""', "'''"] },
  sql: {
    keywords: words(`select from where and or not insert into values update set delete create table drop alter
      index join left right inner outer on group by order limit as null is in primary key references`),
    lineComment: ['--'],
    block: ['/*', '*/'],
    quotes: `'"`,
  },
}

const EXTENSIONS: Record<string, string> = {
  ts: 'js',
  tsx: 'js',
  js: 'js',
  jsx: 'js',
  mjs: 'js',
  cjs: 'js',
  mts: 'js',
  cts: 'js',
  py: 'py',
  pyi: 'py',
  rs: 'rs',
  go: 'go',
  c: 'c',
  h: 'c',
  cc: 'c',
  cpp: 'c',
  hpp: 'c',
  java: 'c',
  kt: 'c',
  cs: 'c',
  swift: 'c',
  scala: 'c',
  sh: 'sh',
  bash: 'sh',
  zsh: 'sh',
  css: 'css',
  scss: 'css',
  less: 'css',
  json: 'json',
  jsonc: 'js',
  yml: 'yaml',
  yaml: 'yaml',
  toml: 'toml',
  sql: 'sql',
}

/** The language of a path by its extension; undefined when we have no highlighter for it (shown plain). */
export function languageOf(path: string): string | undefined {
  const name = path.split(/[\\/]/).pop() ?? ''
  if (name === 'Dockerfile' || name === 'Makefile') return 'sh'
  if (name.startsWith('.') && /^\.(bashrc|zshrc|profile|bash_profile|env.*)$/.test(name)) return 'sh'
  const dot = name.lastIndexOf('.')
  if (dot < 0) return undefined
  return own(EXTENSIONS, name.slice(dot + 1).toLowerCase())
}

/** Where a line ends up: inside a block comment or an open multi-line string, or nowhere special. */
export type LineState = { kind: 'none' } | { kind: 'comment' } | { kind: 'string'; close: string }

export const START: LineState = { kind: 'none' }

const isIdentStart = (c: string): boolean => /[A-Za-z_$]/.test(c)
const isIdent = (c: string): boolean => /[A-Za-z0-9_$]/.test(c)
const isDigit = (c: string): boolean => c >= '0' && c <= '9'

/** Tokens of one line and the state the next line starts in. Lines longer than `maxChars` are left plain. */
export function highlightLine(
  line: string,
  language: string | undefined,
  state: LineState = START,
  maxChars = 2000,
): { tokens: Token[]; state: LineState } {
  const spec = language === undefined ? undefined : own(LANGUAGES, language)
  if (!spec || line.length > maxChars) return { tokens: [{ kind: 'plain', text: line }], state: START }
  const tokens: Token[] = []
  const push = (kind: TokenKind, text: string): void => {
    if (text === '') return
    const prev = tokens[tokens.length - 1]
    if (prev && prev.kind === kind) prev.text += text
    else tokens.push({ kind, text })
  }
  let i = 0
  let current = state
  while (i < line.length) {
    if (current.kind === 'comment') {
      const close = spec.block?.[1] ?? '*/'
      const end = line.indexOf(close, i)
      if (end < 0) {
        push('comment', line.slice(i))
        return { tokens, state: current }
      }
      push('comment', line.slice(i, end + close.length))
      i = end + close.length
      current = START
      continue
    }
    if (current.kind === 'string') {
      const end = findClose(line, i, current.close)
      if (end < 0) {
        push('string', line.slice(i))
        return { tokens, state: current }
      }
      push('string', line.slice(i, end + current.close.length))
      i = end + current.close.length
      current = START
      continue
    }
    const rest = line.slice(i, i + 3)
    if (spec.lineComment?.some((c) => line.startsWith(c, i))) {
      push('comment', line.slice(i))
      break
    }
    if (spec.block && line.startsWith(spec.block[0], i)) {
      current = { kind: 'comment' }
      push('comment', spec.block[0])
      i += spec.block[0].length
      continue
    }
    const triple = spec.multiline?.find((q) => q.length === 3 && rest === q)
    const ch = line[i] as string
    if (triple || spec.quotes.includes(ch)) {
      const open = triple ?? ch
      const end = findClose(line, i + open.length, open)
      if (end < 0) {
        push('string', line.slice(i))
        // An unclosed ordinary quote ends with its line; only multi-line quotes carry over.
        return { tokens, state: spec.multiline?.includes(open) ? { kind: 'string', close: open } : START }
      }
      push('string', line.slice(i, end + open.length))
      i = end + open.length
      continue
    }
    if (isDigit(ch)) {
      let j = i + 1
      while (j < line.length && /[0-9a-fA-FxXoObB_.n]/.test(line[j] as string)) j++
      push('number', line.slice(i, j))
      i = j
      continue
    }
    if (isIdentStart(ch)) {
      let j = i + 1
      while (j < line.length && isIdent(line[j] as string)) j++
      const word = line.slice(i, j)
      const kind: TokenKind = spec.keywords.has(language === 'sql' ? word.toLowerCase() : word)
        ? 'keyword'
        : spec.capitalTypes && /^[A-Z][a-z0-9]/.test(word)
          ? 'type'
          : 'plain'
      push(kind, word)
      i = j
      continue
    }
    push(/[{}()[\];,.:=<>+\-*/%!&|^~?@]/.test(ch) ? 'punct' : 'plain', ch)
    i++
  }
  return { tokens, state: current }
}

/** Index of the closing quote at or after `from`, skipping backslash escapes; -1 when the line has none. */
function findClose(line: string, from: number, close: string): number {
  for (let i = from; i < line.length; i++) {
    if (line[i] === '\\') {
      i++
      continue
    }
    if (line.startsWith(close, i)) return i
  }
  return -1
}
