import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { Language, Parser, type Tree } from 'web-tree-sitter'
import { lexWords, REASONS, type Word } from './lexer'
import type { Verdict } from './validate-options'
import { checkPaths } from './validate-paths'
import { checkProgram, programKeys } from './validate-programs'
import { SHELL_KEYWORDS } from './validate-programs.data'
import { isReadOnly } from './validate-read-only'
import type { SensitivePathRules } from '../sensitive-paths'
import { own } from '../../../shared/own'

/**
 * The fail-closed bash validator (DESIGN 2.1). A command is accepted only when every layer agrees it is one
 * simple command of literal words:
 *
 * 1. the raw text: at most 8 KiB, no control, format, separator, private-use, unassigned or invisible
 *    characters, no non-ASCII spaces, no combining marks on ASCII;
 * 2. the strict lexer (lexer.ts): the raw text read as words of plain characters and simple quotes only,
 *    with its own conservative rules (it runs before the parser, which it shields from pathological input);
 * 3. tree-sitter-bash: one `command` node and nothing but literal words in it, and word boundaries exactly
 *    those of the lexer (a disagreement is a denial);
 * 4. the name: a plain unquoted word without `/`; then the program rules (validate-programs.ts) and the
 *    workspace confinement of arguments (validate-paths.ts).
 *
 * Every refusal carries a reason written for the model: what is wrong and what to do instead.
 */

/** Longer commands are refused before parsing (parser cost, text hidden past what a reviewer reads). */
export const MAX_COMMAND_BYTES = 8 * 1024

let parser: Parser | null = null
let loading: Promise<void> | null = null

/**
 * Loads the tree-sitter runtime and the bash grammar, once; concurrent calls share the same load, and a
 * failed load can be retried. Files are resolved through their packages (not relative to this file), so
 * this works from the sources and from the bundle alike.
 */
export function loadBashGrammar(): Promise<void> {
  if (parser !== null) return Promise.resolve()
  loading ??= (async () => {
    // V8 compiles WebAssembly twice: at once with its baseline compiler (Liftoff), then again with its
    // optimising one (TurboFan) in the background on every core, which for this grammar took over a second:
    // it competed with the first tools and kept `lanes run` alive 1.1-1.45 s after its run had finished. The
    // baseline code validates a command well within a millisecond (bench/validator.bench.ts), so the
    // optimising tier is off for WebAssembly, set before the compile. The flag is process-wide: the other
    // WebAssembly in this process (undici's HTTP parser) runs baseline code too, at our traffic's scale free.
    setFlagsFromString('--liftoff-only')
    const require = createRequire(import.meta.url)
    const runtimeDir = dirname(require.resolve('web-tree-sitter'))
    await Parser.init({ locateFile: (file: string) => join(runtimeDir, file) })
    const bash = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'))
    const instance = new Parser()
    instance.setLanguage(bash)
    parser = instance
  })().catch((err: unknown) => {
    loading = null
    throw err
  })
  return loading
}

export function validateBashCommand(command: string): { ok: true } | { ok: false; reason: string } {
  return checkBashCommand(command).verdict
}

/**
 * True only for a command that passes validation and is on the read-only allowlist (the approval policy
 * runs it without asking). When in doubt: false. `rules`: the workspace's (a repository tracking a secret file
 * asks before git prints file contents); by default a repository that tracks none.
 */
export function isReadOnlyCommand(command: string, rules?: SensitivePathRules): boolean {
  return checkBashCommand(command).readOnly(rules)
}

/**
 * The words of a command the validator accepts, as the program receives them (after quote removal); null for
 * one it refuses. A session's command-prefix rule matches these, never the raw text: `npm testx` or
 * `npm test; rm -rf /` can never pass for `npm test`.
 */
export function commandWords(command: string): string[] | null {
  return checkBashCommand(command).words()
}

/**
 * One command read once, for a caller that asks it several questions (the bash tool's policy asks whether it
 * is valid, read-only and covered by a rule; its session rule wants its words): the same answers as the
 * functions above, for one parse instead of one each.
 */
export interface BashCommandCheck {
  readonly command: string
  readonly verdict: { ok: true } | { ok: false; reason: string }
  readOnly(rules?: SensitivePathRules): boolean
  /** A fresh array each time: the caller may keep it. */
  words(): string[] | null
  /** Read with the grammar loaded: the answers are final (else every one is "not ready", worth asking again). */
  readonly final: boolean
}

export function checkBashCommand(command: string): BashCommandCheck {
  const final = parser !== null
  const analysis = analyzeSafely(command)
  const verdict = analysis.ok ? ({ ok: true } as const) : { ok: false as const, reason: analysis.reason }
  return {
    command,
    verdict,
    final,
    readOnly(rules) {
      if (!analysis.ok) return false
      try {
        return isReadOnly(analysis.program, [...analysis.args], rules)
      } catch {
        return false
      }
    },
    words: () => (analysis.ok ? [analysis.program, ...analysis.args] : null),
  }
}

type Analysis = { ok: true; program: string; args: string[] } | { ok: false; reason: string }

function analyzeSafely(command: unknown): Analysis {
  try {
    return analyze(command)
  } catch (err) {
    // The validator must never throw: an internal failure is a denial like any other.
    const why = err instanceof Error ? err.message : String(err)
    return {
      ok: false,
      reason: `the command checker failed (${why.slice(0, 200)}), so the command was not run`,
    }
  }
}

function analyze(command: unknown): Analysis {
  if (typeof command !== 'string') return { ok: false, reason: 'the command must be a string' }
  const textProblem = checkText(command)
  if (textProblem !== null) return { ok: false, reason: textProblem }
  if (parser === null)
    return {
      ok: false,
      reason:
        'the command checker is not ready yet (the bash grammar is still loading); try again in a moment',
    }

  const firstWord = command.trimStart().split(' ', 1)[0] ?? ''
  if (SHELL_KEYWORD_SET.has(firstWord)) return { ok: false, reason: REASONS.control }
  // The strict lexer runs first: it is linear, and it leaves tree-sitter only plain words and quoted
  // strings, which it parses in linear time (hostile operator soups like `<<<<...` cost it seconds).
  const lexed = lexWords(command)
  if (!lexed.ok) return { ok: false, reason: lexed.reason }

  const tree = parser.parse(command)
  if (tree === null) return { ok: false, reason: 'the command could not be parsed; run a simpler command' }
  let shape: Shape
  try {
    shape = readShape(tree)
  } finally {
    tree.delete()
  }
  if ('reason' in shape) return { ok: false, reason: shape.reason }

  const words = lexed.words
  const agree =
    words.length === shape.spans.length &&
    words.every((word, i) => word.start === shape.spans[i]?.start && word.end === shape.spans[i]?.end)
  if (!agree)
    return {
      ok: false,
      reason:
        'the command is ambiguous (bash and the checker would split it into words differently); write each argument as a plain word or in single quotes',
    }

  const [nameWord, ...argWords] = words as [Word, ...Word[]]
  const nameProblem = checkName(nameWord)
  if (nameProblem !== null) return { ok: false, reason: nameProblem }
  const program = nameWord.value
  const args = argWords.map((word) => word.value)
  const verdict: Verdict = checkProgram(program, args)
  if (!verdict.ok) return verdict
  const paths = checkPaths(programKeys(program)[0] ?? program, args)
  if (!paths.ok) return paths
  return { ok: true, program, args }
}

/**
 * Characters refused anywhere in the command: control characters (C0, DEL, C1), format characters (bidi
 * overrides, zero-width joiners, BOM, tags), line and paragraph separators, private-use, unassigned and
 * lone surrogate code points, default-ignorable code points (invisible: Hangul fillers, variation
 * selectors...), the braille blank, and spaces other than U+0020. `\p{Cn}` includes noncharacters.
 */
const FORBIDDEN_CHAR =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800\u3164\uFFA0\u115F\u1160]|(?! )\p{Zs}/u

/** A combining mark on an ASCII character changes how it looks (`rm` with a strike-through, an accent on `-`). */
const MARK_ON_ASCII = /^\p{M}|[\x20-\x7e]\p{M}/u

function checkText(command: string): string | null {
  // Measured in UTF-8 bytes, what bash receives. Checked first so huge inputs cost nothing more.
  if (command.length > MAX_COMMAND_BYTES || Buffer.byteLength(command, 'utf8') > MAX_COMMAND_BYTES)
    return `the command is longer than ${MAX_COMMAND_BYTES / 1024} KiB; write long content to a file with write_file and keep the command short`
  if (!/[^ ]/.test(command)) return 'the command is empty'
  const forbidden = FORBIDDEN_CHAR.exec(command)
  if (forbidden !== null) return forbiddenCharReason(forbidden[0])
  if (MARK_ON_ASCII.test(command))
    return 'the command contains a combining mark on a plain character, which changes how the command looks; type it in plain text'
  return null
}

function forbiddenCharReason(ch: string): string {
  const code = ch.codePointAt(0) ?? 0
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`
  const named: Record<number, string> = {
    0x00: 'NUL',
    0x09: 'a tab',
    0x0a: 'a line break (LF)',
    0x0d: 'a carriage return (CR)',
    0x1b: 'an escape (ESC)',
    0x7f: 'DEL',
  }
  let what = named[code]
  if (what === undefined) {
    if (/\p{Cc}/u.test(ch)) what = 'a control character'
    else if (/\p{Zs}/u.test(ch)) what = 'a non-ASCII space'
    else if (/[\p{Zl}\p{Zp}]/u.test(ch)) what = 'a line or paragraph separator'
    else if (/\p{Cs}/u.test(ch)) what = 'a lone surrogate (broken text)'
    else if (/\p{Co}/u.test(ch)) what = 'a private-use character'
    else if (/\p{Cn}/u.test(ch)) what = 'an unassigned code point'
    else what = 'an invisible or formatting character (it can hide or reorder what the reviewer sees)'
  }
  const advice =
    code === 0x0a || code === 0x0d
      ? 'run one command per call, on one line'
      : 'type the command in plain text'
  return `the command contains ${what} (${hex}); ${advice}, with plain spaces between words`
}

interface Span {
  start: number
  end: number
}

type Shape = { spans: Span[] } | { reason: string }

/**
 * Walks the whole tree once. Accepted: `program` > one `command` > its `command_name` (one `word`) and
 * arguments made only of words, numbers, single-quoted strings, double-quoted strings of plain content and
 * concatenations of those. The first other node names the reason.
 */
function readShape(tree: Tree): Shape {
  const cursor = tree.walk()
  try {
    const spans: Span[] = []
    let commands = 0
    let nameOk = false
    for (;;) {
      const type = cursor.nodeType
      if (cursor.nodeIsMissing || type === 'ERROR')
        return {
          reason: `the command is not valid bash (syntax error near character ${cursor.startIndex + 1}); check quotes and operators`,
        }
      if (!ALLOWED_NODES.has(type)) {
        // `(( ... ))` is a compound_statement in this grammar, but it is arithmetic, not a group.
        const arithmetic = type === 'compound_statement' && cursor.currentNode.firstChild?.type === '(('
        return { reason: arithmetic ? REASONS.arithmetic : describeNode(type) }
      }
      const depth = cursor.currentDepth
      if (type === 'command') commands++
      if (depth === 2) {
        // Direct children of the command: its name, then its arguments.
        spans.push({ start: cursor.startIndex, end: cursor.endIndex })
        if (spans.length === 1) nameOk = type === 'command_name'
      }
      if (type === 'command_name') {
        const inner = cursor.currentNode.firstChild
        if (cursor.currentNode.childCount !== 1 || inner?.type !== 'word')
          return { reason: own(NODE_REASONS, inner?.type ?? '') ?? REASONS.plainName }
      }
      if (cursor.gotoFirstChild()) continue
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) {
          const root = tree.rootNode
          if (commands !== 1 || root.childCount !== 1 || root.firstChild?.type !== 'command' || !nameOk)
            return { reason: 'only one simple command is allowed per call' }
          return { spans }
        }
      }
    }
  } finally {
    cursor.delete()
  }
}

const ALLOWED_NODES = new Set([
  'program',
  'command',
  'command_name',
  'word',
  'number',
  'string',
  'string_content',
  'raw_string',
  'concatenation',
  '"',
])

const SHELL_KEYWORD_SET: ReadonlySet<string> = new Set(SHELL_KEYWORDS)

/** Reasons by tree-sitter node type (most constructs are refused by the lexer first; this is the backstop). */
const NODE_REASONS: Record<string, string> = {
  pipeline: REASONS.pipes,
  '|': REASONS.pipes,
  '|&': REASONS.pipes,
  list: REASONS.lists,
  '&&': REASONS.lists,
  '||': REASONS.lists,
  ';': REASONS.semicolon,
  ';;': REASONS.control,
  '&': REASONS.background,
  redirected_statement: REASONS.redirects,
  file_redirect: REASONS.redirects,
  file_descriptor: REASONS.redirects,
  heredoc_redirect: REASONS.heredocs,
  herestring_redirect: REASONS.heredocs,
  heredoc_body: REASONS.heredocs,
  heredoc_start: REASONS.heredocs,
  subshell: REASONS.groups,
  compound_statement: REASONS.groups,
  function_definition: REASONS.functions,
  if_statement: REASONS.control,
  while_statement: REASONS.control,
  for_statement: REASONS.control,
  c_style_for_statement: REASONS.control,
  case_statement: REASONS.control,
  negated_command: REASONS.negation,
  '!': REASONS.negation,
  test_command: REASONS.tests,
  declaration_command: REASONS.assignments,
  unset_command: REASONS.assignments,
  variable_assignment: REASONS.assignments,
  variable_assignments: REASONS.assignments,
  command_substitution: REASONS.substitution,
  process_substitution: REASONS.processSubstitution,
  simple_expansion: REASONS.expansion,
  expansion: REASONS.expansion,
  $: REASONS.expansion,
  arithmetic_expansion: REASONS.arithmetic,
  ansi_c_string: REASONS.ansiC,
  translated_string: REASONS.translated,
  brace_expression: REASONS.braces,
  comment: REASONS.comments,
}

function describeNode(type: string): string {
  return (
    own(NODE_REASONS, type) ??
    `\`${type.replace(/_/g, ' ')}\` is not allowed: only one simple command of literal words is accepted`
  )
}

function checkName(name: Word): string | null {
  const text = name.raw
  if (name.quoted || text !== name.value) return REASONS.plainName
  if (text.includes('/'))
    return `\`${text}\` runs a program by path, which is not allowed; run a program by its name (scripts of the project: use a package script such as \`npm run <script>\`)`
  if (text === '.') return '`.` (source) is not allowed: it runs a file as shell code in this shell'
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/.test(text))
    return `\`${text.slice(0, 40)}\` is not a plain program name (letters, digits, \`_ . + -\`); write the program name as a plain word`
  return null
}
