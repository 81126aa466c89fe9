import { z } from 'zod'
import { Count } from './schema-units'

/**
 * What a file's content is, for the review of a change (issue 23): text or binary, its type from its first bytes,
 * how many lines it has, and whether a change is too large to show line by line. The one home of these rules:
 * the engine classifies a write, an edit and a command's captured files with them, and the review draws what
 * they decided.
 */

/**
 * Past this many changed lines (added + removed) a change is shown as a summary rather than as its diff. The
 * review draws its first 400 rows and "show all" draws every row into the page: a few thousand rows still lay
 * out in well under a second, tens of thousands freeze it, and nobody reads 3,000 changed lines one by one
 * anyway. Past it the user judges the change by its numbers, its first and last lines, and "open in full".
 */
export const LARGE_CHANGE_LINES = 3000

/**
 * Past this many characters of diff text a change is shown as a summary, whatever its line count (a minified
 * file is one huge line). The same size as a preview's per-side cap (PREVIEW_MAX_CHARS): a diff bigger than
 * that would not fit in the logged preview anyway.
 */
export const LARGE_CHANGE_CHARS = 256 * 1024

/** An image is previewed from its bytes up to this size; past it the review says so and shows its facts. */
export const IMAGE_PREVIEW_MAX_BYTES = 256 * 1024

/** How much of a large change's new content the summary shows at each end. */
export const EXCERPT_LINES = 12
const EXCERPT_LINE_CHARS = 300

/** The content of one side of a change (the file before or after it), as the review shows it. */
export const ContentFacts = z.object({
  bytes: Count,
  binary: z.boolean(),
  /** Text only. */
  lines: Count.optional(),
  /** From the first bytes (`sniffType`); absent when they name no known type. */
  mime: z.string().max(100).optional(),
  /** SHA-256 of the bytes: what is written must be exactly what was reviewed. */
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** The bytes, base64, of an image up to IMAGE_PREVIEW_MAX_BYTES: the review previews it. */
  image: z.string().optional(),
})
export type ContentFacts = z.infer<typeof ContentFacts>

/**
 * Binary: a NUL byte, or bytes that are not valid UTF-8. Such content is never shown or edited as text.
 * `validUtf8`: the runtime's own check where it has one (Node's `isUtf8` validates without making a string,
 * twenty times faster than decoding), for the same rule.
 */
export function isBinary(
  bytes: Uint8Array,
  validUtf8: (bytes: Uint8Array) => boolean = decodesAsUtf8,
): boolean {
  return bytes.includes(0) || !validUtf8(bytes)
}

function decodesAsUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

interface Magic {
  mime: string
  label: string
  test(b: Uint8Array): boolean
}

const startsWith = (b: Uint8Array, bytes: readonly number[], at = 0): boolean =>
  b.length >= at + bytes.length && bytes.every((x, i) => b[at + i] === x)
const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0))

const MAGIC: readonly Magic[] = [
  {
    mime: 'image/png',
    label: 'PNG image',
    test: (b) => startsWith(b, [0x89, ...ascii('PNG\r\n'), 0x1a, 10]),
  },
  { mime: 'image/jpeg', label: 'JPEG image', test: (b) => startsWith(b, [0xff, 0xd8, 0xff]) },
  {
    mime: 'image/gif',
    label: 'GIF image',
    test: (b) => startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a')),
  },
  {
    mime: 'image/webp',
    label: 'WebP image',
    test: (b) => startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8),
  },
  { mime: 'application/pdf', label: 'PDF document', test: (b) => startsWith(b, ascii('%PDF-')) },
  { mime: 'application/zip', label: 'ZIP archive', test: (b) => startsWith(b, [0x50, 0x4b, 3, 4]) },
  { mime: 'application/gzip', label: 'gzip archive', test: (b) => startsWith(b, [0x1f, 0x8b]) },
  { mime: 'application/x-elf', label: 'program (ELF)', test: (b) => startsWith(b, [0x7f, ...ascii('ELF')]) },
  { mime: 'application/wasm', label: 'WebAssembly module', test: (b) => startsWith(b, [0, ...ascii('asm')]) },
  {
    mime: 'application/vnd.sqlite3',
    label: 'SQLite database',
    test: (b) => startsWith(b, ascii('SQLite format 3\0')),
  },
]

/** The type the first bytes announce (magic numbers), or undefined. Never the file's name: a name can lie. */
export function sniffType(bytes: Uint8Array): string | undefined {
  return MAGIC.find((m) => m.test(bytes))?.mime
}

/** "PNG image", or "binary data" for a type not known here. */
export function typeLabel(mime: string | undefined): string {
  return MAGIC.find((m) => m.mime === mime)?.label ?? 'binary data'
}

/** The images the review previews (a browser draws these from a data URL; SVG is text and shown as text). */
export function isPreviewableImage(mime: string | undefined): boolean {
  return mime === 'image/png' || mime === 'image/jpeg' || mime === 'image/gif' || mime === 'image/webp'
}

/**
 * Lines of a text: a last line without a line break counts; an empty text has none. The text may be given as its
 * UTF-8 bytes (not decoded: a line break's byte never occurs inside another character's).
 */
export function countLines(text: string | Uint8Array): number {
  if (text.length === 0) return 0
  let breaks = 0
  if (typeof text === 'string')
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) breaks++
  else for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) breaks++
  const last = text[text.length - 1]
  return last === '\n' || last === 10 ? breaks : breaks + 1
}

/**
 * How a change is reviewed: `binary` when either side is not text (facts, an image preview, replace or keep),
 * `large` past LARGE_CHANGE_LINES changed lines or LARGE_CHANGE_CHARS of diff (a summary, and the full diff on
 * request), else `diff` (the diff with its parts, each part decidable and editable).
 */
export function reviewMode(change: {
  beforeBinary: boolean
  afterBinary: boolean
  added: number
  removed: number
  diffChars: number
  /** The diff was cut to the engine's cap (file-diff.ts): it cannot be shown whole. */
  diffCut: boolean
}): 'diff' | 'large' | 'binary' {
  if (change.beforeBinary || change.afterBinary) return 'binary'
  if (change.diffCut || change.added + change.removed > LARGE_CHANGE_LINES) return 'large'
  if (change.diffChars > LARGE_CHANGE_CHARS) return 'large'
  return 'diff'
}

/** The first and last lines of a large text, each cut to a readable width; `tailFrom` is the tail's first line. */
export const Excerpt = z.object({
  head: z.array(z.string()),
  tail: z.array(z.string()),
  /** 1-based line number of the tail's first line. */
  tailFrom: Count,
})
export type Excerpt = z.infer<typeof Excerpt>

/** What is read of a line past the width shown: enough for a secret value that starts inside it to end there. */
const EXCERPT_READ_MARGIN = 4096

export function excerptOf(
  text: string,
  lines = EXCERPT_LINES,
  /** Hides secret values in a line before it is cut (a cut through a value would keep its start). */
  redact: (line: string) => string = (line) => line,
): Excerpt {
  const cut = (line: string): string =>
    line.length > EXCERPT_LINE_CHARS ? `${line.slice(0, EXCERPT_LINE_CHARS)}…` : line
  const strip = (line: string): string => cut(redact(line.replace(/\r$/, '')))
  const head: string[] = []
  let at = 0
  while (head.length < lines && at < text.length) {
    const nl = text.indexOf('\n', at)
    const end = nl === -1 ? text.length : nl
    head.push(strip(text.slice(at, Math.min(end, at + EXCERPT_LINE_CHARS + EXCERPT_READ_MARGIN))))
    at = end + 1
  }
  const total = countLines(text)
  if (total <= lines * 2) {
    // Short enough to show whole: the tail is what the head did not show.
    const all = text.split('\n')
    if (text.endsWith('\n')) all.pop()
    return { head, tail: all.slice(head.length).map(strip), tailFrom: head.length + 1 }
  }
  const tail: string[] = []
  let end = text.endsWith('\n') ? text.length - 1 : text.length
  while (tail.length < lines && end >= 0) {
    const nl = text.lastIndexOf('\n', end - 1)
    tail.unshift(strip(text.slice(nl + 1, Math.min(end, nl + 1 + EXCERPT_LINE_CHARS + EXCERPT_READ_MARGIN))))
    end = nl
    if (nl === -1) break
  }
  return { head, tail, tailFrom: total - tail.length + 1 }
}

/** "5.0 MB", "600 KB", "812 bytes": decimal units, as file managers show them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`
  if (bytes < 1_000_000) return `${trim(bytes / 1000)} KB`
  if (bytes < 1_000_000_000) return `${trim(bytes / 1_000_000)} MB`
  return `${trim(bytes / 1_000_000_000)} GB`
}

const trim = (n: number): string => (n >= 100 ? Math.round(n).toString() : n.toFixed(1).replace(/\.0$/, ''))
