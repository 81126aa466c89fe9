import type { Redactor } from '../../secrets/redactor'
import { LONG_LINE_MARKER, MAX_COLUMNS } from './search'

/**
 * grep searches the text the model may see, not the text on disk (issue 20). A line that holds a known secret
 * value is judged by its redacted form: it matches when the pattern matches `… [secret from .env hidden] …`,
 * whatever the value is. Judged on the text on disk, a right guess of a value's start (`TOKEN = "sk-a`) finds
 * the line and a wrong one does not, even with the value hidden in what is shown, and a few hundred guesses
 * spell the value out: the regex oracle, through any file that repeats a secret (a config beside the `.env`).
 *
 * How each engine keeps it:
 * - the built-in search redacts a file's text before it matches anything (builtin-search.ts);
 * - ripgrep is also given the known values (case-sensitive literals, through its standard input, never on a
 *   command line others can read), so it reports every line that holds one, matching or not. Such a line, and
 *   a line too long to see whole, is judged again on its redacted text by a second ripgrep reading those texts
 *   (the same regex engine and flags, so the same meaning and no backtracking blow-up); any other line it
 *   reported matched the pattern itself.
 * - With more than EXACT_VALUES values (a long git history of `.env` files), scanning for all of them would
 *   cost every search more than a tenth of its time: ripgrep then gets the pattern alone, and a line it reports
 *   that holds a value is left out of the results altogether, found or not on its redacted text. Still no
 *   oracle (such a line never shows, whatever the guess); the cost is that those lines cannot be found.
 *
 * Lines are also cut for display only after redaction, so a cut never shows the start of a value.
 */

/**
 * How much of a long line ripgrep hands over when the workspace has secret values: every value that starts in
 * the part shown (MAX_COLUMNS) ends inside it, and a longer line is judged on this much of it (a match further
 * along a line of over 64 KB is not found: minified code, where the line shown is cut anyway).
 */
export const LINE_WINDOW = 64 * 1024

/**
 * The values ripgrep must report lines of, as a patterns file's lines: literals, case-sensitive even in a search
 * that ignores case (`(?-i:...)`, only then: the group costs a case-sensitive search time).
 */
export function valuePatterns(redactor: Redactor, caseInsensitive: boolean): string {
  return redactor
    .values()
    .filter((v) => !/[\n\r\0]/.test(v))
    .map((v) => (caseInsensitive ? `(?-i:${escapeRegex(v)})` : escapeRegex(v)))
    .join('\n')
}

/** Rust's `regex::escape`: every meta character, whichever engine (Rust regex or PCRE2) reads it. */
function escapeRegex(value: string): string {
  return value.replace(/[\\.+*?()|[\]{}^$#&~-]/g, '\\$&')
}

/** A line as the model sees it: cut at MAX_COLUMNS (never inside a surrogate pair) with ripgrep's marker. */
export function shownLine(text: string, cut: boolean): string {
  if (text.length <= MAX_COLUMNS && !cut) return text
  let end = Math.min(text.length, MAX_COLUMNS)
  const last = text.charCodeAt(end - 1)
  if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${text.slice(0, end)}${LONG_LINE_MARKER}`
}

/** A line ripgrep reported, as the lens hands it on. */
export type LensVerdict =
  /** Shown as is: it matched the pattern and holds no value. */
  | { kind: 'shown'; text: string }
  /** To be judged on its redacted text (`judge`); `text` is what is shown if it matches. */
  | { kind: 'judge'; judge: string; text: string }
  /** Holds a value that ripgrep was not given: never shown, nor counted. */
  | { kind: 'left out' }

/**
 * Up to this many values, ripgrep is given them all. Measured on the 100k-file tree: any values at all cost a
 * search about 8% more CPU (the pattern is no longer one literal), 1,000 of them 13%.
 */
export const EXACT_VALUES = 128

export class SecretLens {
  /** Lines are handed over up to LINE_WINDOW and cut here, after redaction. */
  readonly active: boolean
  /** ripgrep is given the values (else a line that holds one is left out). */
  readonly exact: boolean

  constructor(private readonly redactor: Redactor) {
    this.active = redactor.size > 0
    this.exact = this.active && redactor.size <= EXACT_VALUES
  }

  /** `text`: the line as ripgrep printed it; `cut`: ripgrep left out its end. */
  look(text: string, cut: boolean): LensVerdict {
    // No values: ripgrep cut the line itself (at MAX_COLUMNS, with the same marker).
    if (!this.active) return { kind: 'shown', text }
    const redacted = this.redactor.redactText(text)
    const holds = redacted !== text
    if (!holds && !cut) return { kind: 'shown', text: shownLine(text, false) }
    if (holds && !this.exact) return { kind: 'left out' }
    return { kind: 'judge', judge: redacted.replaceAll('\0', ' '), text: shownLine(redacted, cut) }
  }
}
