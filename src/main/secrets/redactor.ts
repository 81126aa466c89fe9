/**
 * The one redactor (issue 20): every text that leaves a tool for the model, and what is kept of it (the
 * session log, a command's saved output, its live chunks), passes through it. It knows the workspace's secret
 * VALUES (secret-values.ts finds them; workspace-secrets.ts gathers them) and replaces each occurrence with
 * `[secret from <source> hidden]`, whatever file, command or git object the text came from: a secret is caught
 * by its content, not by the name of the place it was read from.
 *
 * One pass over the bytes finds every value at once. Values are at least MIN_SECRET_LENGTH bytes long, so each
 * position is looked up by its first 4 bytes in an open-addressed table (a multiplicative hash of a rolling
 * 32-bit word); only a hit compares whole values. That is a handful of integer operations per byte whatever the
 * number of values (1,000 cost what 1 does), with no regular expression and no per-value pass.
 *
 * Overlapping matches are merged into one hidden span, so no part of a value ever shows because another value
 * started first. Streams hold back the last `maxLength - 1` bytes (and any match that might still grow) until
 * more arrives or they end, so a value split between two chunks is caught as one.
 */

/** Shorter values are never treated as secrets (see `isSecretLike` in secret-values.ts for the rest of the floor). */
export const MIN_SECRET_LENGTH = 8

export interface SecretValue {
  value: string
  /** Where it was found, for the marker: `.env`, `.git/config`, `git history of .env`, `Lanes' API key`. */
  source: string
}

interface Pattern {
  bytes: Buffer
  /** The first 4 bytes as a little-endian word: the table key. */
  key: number
  marker: Buffer
  /** Next pattern in the same table slot, -1 at the end. */
  next: number
}

/** A span [start, end) to hide, and the marker that replaces it. */
interface Span {
  start: number
  end: number
  marker: Buffer
}

export function markerFor(source: string): string {
  return `[secret from ${source} hidden]`
}

export class Redactor {
  static readonly EMPTY = new Redactor([])

  private readonly patterns: Pattern[] = []
  private readonly table: Int32Array
  private readonly shift: number
  /** Byte length of the longest value: what a stream holds back. */
  readonly maxLength: number

  constructor(values: readonly SecretValue[]) {
    const seen = new Set<string>()
    // Longest first: at one position the longest value wins, and slot lists are walked in this order.
    const sorted = [...values].sort((a, b) => b.value.length - a.value.length)
    let bits = 12
    while (1 << bits < sorted.length * 4) bits++
    this.shift = 32 - bits
    this.table = new Int32Array(1 << bits).fill(-1)
    let maxLength = 0
    for (const { value, source } of sorted) {
      const bytes = Buffer.from(value, 'utf8')
      if (bytes.length < MIN_SECRET_LENGTH || seen.has(value)) continue
      seen.add(value)
      const key = bytes.readInt32LE(0)
      const slot = Math.imul(key, 0x9e3779b1) >>> this.shift
      // Appended at the slot's end, so a longer value stays ahead of a shorter one with the same head.
      const index = this.patterns.length
      this.patterns.push({ bytes, key, marker: Buffer.from(markerFor(source)), next: -1 })
      let at = this.table[slot] as number
      if (at === -1) this.table[slot] = index
      else {
        while ((this.patterns[at] as Pattern).next !== -1) at = (this.patterns[at] as Pattern).next
        ;(this.patterns[at] as Pattern).next = index
      }
      maxLength = Math.max(maxLength, bytes.length)
    }
    this.maxLength = maxLength
  }

  /** Number of distinct values it hides. */
  get size(): number {
    return this.patterns.length
  }

  /** `text` with every known value hidden; the same string when nothing matched. */
  redactText(text: string): string {
    if (this.patterns.length === 0 || text.length < MIN_SECRET_LENGTH) return text
    const bytes = Buffer.from(text, 'utf8')
    const spans = this.find(bytes, bytes.length)
    return spans.length === 0 ? text : splice(bytes, spans, bytes.length).toString('utf8')
  }

  /** `bytes` with every known value hidden; the same buffer when nothing matched. */
  redactBytes(bytes: Buffer): Buffer {
    if (this.patterns.length === 0) return bytes
    const spans = this.find(bytes, bytes.length)
    return spans.length === 0 ? bytes : splice(bytes, spans, bytes.length)
  }

  /** Whether any known value occurs in `text` (tests, and checks that must not change the text). */
  holdsSecret(text: string): boolean {
    return this.patterns.length > 0 && this.find(Buffer.from(text, 'utf8'), Infinity).length > 0
  }

  /** A redactor for a byte stream: values split across chunks are caught. */
  byteStream(): RedactStream {
    return new RedactStream(this)
  }

  /**
   * Every span to hide that starts before `limit` (all of them for Infinity), merged where they overlap, in
   * order. Spans found may end after `limit`.
   */
  find(bytes: Buffer, limit: number): Span[] {
    const spans: Span[] = []
    const n = bytes.length
    if (n < MIN_SECRET_LENGTH) return spans
    const { table, shift, patterns } = this
    const last = Math.min(n - MIN_SECRET_LENGTH, limit - 1)
    let key = bytes.readInt32LE(0)
    for (let i = 0; i <= last; i++) {
      if (i > 0) key = (key >>> 8) | ((bytes[i + 3] as number) << 24)
      let at = table[Math.imul(key, 0x9e3779b1) >>> shift] as number
      if (at === -1) continue
      for (; at !== -1; at = (patterns[at] as Pattern).next) {
        const p = patterns[at] as Pattern
        const len = p.bytes.length
        if (p.key !== key || i + len > n) continue
        let same = true
        for (let j = 4; j < len; j++) {
          if (bytes[i + j] !== p.bytes[j]) {
            same = false
            break
          }
        }
        if (!same) continue
        const prev = spans.at(-1)
        if (prev !== undefined && i < prev.end) prev.end = Math.max(prev.end, i + len)
        else spans.push({ start: i, end: i + len, marker: p.marker })
        break
      }
    }
    return spans
  }
}

/** `bytes[0, upTo)` with each span replaced by its marker. */
function splice(bytes: Buffer, spans: readonly Span[], upTo: number): Buffer {
  const parts: Buffer[] = []
  let from = 0
  for (const span of spans) {
    if (span.start > from) parts.push(bytes.subarray(from, span.start))
    parts.push(span.marker)
    from = span.end
  }
  if (from < upTo) parts.push(bytes.subarray(from, upTo))
  return Buffer.concat(parts)
}

/**
 * The redactor over a stream of chunks: `push` returns what can be let through now, `end` the rest. What is
 * held back is never more than twice the longest value.
 */
export class RedactStream {
  private pending: Buffer = Buffer.alloc(0)

  constructor(private readonly redactor: Redactor) {}

  push(chunk: Buffer): Buffer {
    const keep = this.redactor.maxLength - 1
    if (keep < 0) return chunk
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    // Positions from `cut` on may begin a value whose end has not arrived: they wait for the next chunk.
    let cut = Math.max(0, data.length - keep)
    const spans = this.redactor.find(data, cut)
    // A span reaching past `cut` could still be extended by an overlapping value: it waits, whole.
    const lastSpan = spans.at(-1)
    if (lastSpan !== undefined && lastSpan.end > cut) {
      cut = lastSpan.start
      spans.pop()
    }
    this.pending = Buffer.from(data.subarray(cut))
    return spans.length === 0 ? data.subarray(0, cut) : splice(data, spans, cut)
  }

  end(): Buffer {
    const rest = this.pending
    this.pending = Buffer.alloc(0)
    return this.redactor.redactBytes(rest)
  }
}

/** The same over text chunks (the live output events), decoding UTF-8 across chunk boundaries. */
export class RedactTextStream {
  private readonly bytes: RedactStream
  private readonly decoder = new TextDecoder('utf-8')

  constructor(redactor: Redactor) {
    this.bytes = redactor.byteStream()
  }

  push(chunk: string): string {
    return this.decoder.decode(this.bytes.push(Buffer.from(chunk, 'utf8')), { stream: true })
  }

  end(): string {
    return this.decoder.decode(this.bytes.end())
  }
}
