import { splice, type Redactor, type Span } from './redactor'

/**
 * A file's bytes as the model sees them: each known secret value replaced by its marker (`[secret from .env
 * hidden]`), with the way back to the bytes on disk. A tool that matches the model's text against a file
 * (edit_file's old_string) matches it here, so its answer (found, not found, found twice, "did you mean line
 * 12") never depends on a value the model was not shown: otherwise a right and a wrong guess of a value's start
 * get different answers, and a few hundred guesses spell the value out (the oracle of issue 20).
 */
export class HiddenView {
  /** The bytes as the model sees them. */
  readonly bytes: Buffer
  /** Each hidden value: where its marker is in `bytes`, and where the value is on disk. */
  private readonly marks: { at: number; end: number; span: Span }[] = []

  private constructor(
    readonly original: Buffer,
    spans: readonly Span[],
  ) {
    this.bytes = spans.length === 0 ? original : splice(original, spans, original.length)
    let shift = 0
    for (const span of spans) {
      const at = span.start + shift
      this.marks.push({ at, end: at + span.marker.length, span })
      shift += span.marker.length - (span.end - span.start)
    }
  }

  static of(original: Buffer, redactor: Redactor): HiddenView {
    return new HiddenView(original, redactor.find(original, original.length))
  }

  /** Nothing is hidden: the view is the file. */
  get plain(): boolean {
    return this.marks.length === 0
  }

  /**
   * The range on disk of the view's range [from, to), or why there is none: it covers part of a marker (the
   * model cannot quote part of what it never saw).
   */
  toOriginal(
    from: number,
    to: number,
  ): { start: number; end: number; values: Hidden[] } | { partial: string } {
    let start = from
    let end = to
    const values: Hidden[] = []
    let shiftBefore = 0
    for (const m of this.marks) {
      const shift = m.span.end - m.span.start - (m.end - m.at)
      if (m.end <= from) {
        shiftBefore += shift
        continue
      }
      if (m.at >= to) break
      if (m.at < from || m.end > to) return { partial: m.span.marker.toString('utf8') }
      values.push({
        marker: m.span.marker.toString('utf8'),
        value: this.original.subarray(m.span.start, m.span.end),
      })
      end += shift
    }
    start += shiftBefore
    end += shiftBefore
    return { start, end, values }
  }
}

/** A hidden value in a range: its marker, and the value itself. */
export interface Hidden {
  marker: string
  value: Buffer
}

/**
 * `replacement` (the model's new text) for a range on disk that held `values`: a marker in it stands for the one
 * value behind that marker in the range (the model moved or kept a line it saw redacted). An error with the reason
 * when a marker in it stands for no value of the range, or for more than one.
 */
export function unhide(
  replacement: Buffer,
  values: readonly Hidden[],
  /** old_string as matched: a marker written in the file itself (not hiding anything) may be kept. */
  quoted: Buffer,
): { bytes: Buffer } | { error: string } {
  if (!replacement.includes(MARKER_START)) return { bytes: replacement }
  let out = replacement
  const byMarker = new Map<string, Set<string>>()
  for (const v of values) {
    const set = byMarker.get(v.marker) ?? new Set<string>()
    set.add(v.value.toString('hex'))
    byMarker.set(v.marker, set)
  }
  for (const [marker, set] of byMarker) {
    if (!out.includes(marker)) continue
    if (set.size > 1)
      return {
        error: `new_string keeps ${marker}, but old_string covers more than one hidden value behind that marker, so which one it stands for is not known. Edit around the hidden values, one at a time.`,
      }
    out = replaceAll(out, Buffer.from(marker), Buffer.from([...set][0] as string, 'hex'))
  }
  for (const m of out.toString('utf8').matchAll(MARKER)) {
    if (byMarker.has(m[0]) || quoted.includes(m[0])) continue
    return {
      error: `new_string contains ${m[0]}, the marker of a hidden secret value, but old_string covers no value behind it. A marker stands for a value only where old_string includes it: quote the line with the marker in old_string, or leave the marker out.`,
    }
  }
  return { bytes: out }
}

const MARKER_START = '[secret from '
const MARKER = /\[secret from [^\]\n]* hidden\]/g

function replaceAll(haystack: Buffer, needle: Buffer, by: Buffer): Buffer {
  const parts: Buffer[] = []
  let from = 0
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, from)) {
    parts.push(haystack.subarray(from, at), by)
    from = at + needle.length
  }
  parts.push(haystack.subarray(from))
  return Buffer.concat(parts)
}
