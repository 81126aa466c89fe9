/**
 * The one redactor (issue 20): every text that leaves a tool for the model, and what is kept of it (the
 * session log, a command's saved output, its live chunks), passes through it. It knows the workspace's secret
 * VALUES (secret-values.ts finds them; workspace-secrets.ts gathers them) and replaces each occurrence with
 * `[secret from <source> hidden]`, whatever file, command or git object the text came from: a secret is caught
 * by its content, not by the name of the place it was read from.
 *
 * One pass over the bytes finds every value at once: a 4-byte word at every fourth position is looked up in a
 * hashed table of the values' first windows (see STRIDE); only a hit compares whole values. That is a few integer
 * operations per 4 bytes whatever the number of values (1,000 cost what 1 does), with no regular expression and
 * no per-value pass.
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
  marker: Buffer
}

/** A span [start, end) to hide, and the marker that replaces it. */
export interface Span {
  start: number
  end: number
  marker: Buffer
}

export function markerFor(source: string): string {
  return `[secret from ${source} hidden]`
}

/**
 * Every value is at least MIN_SECRET_LENGTH (8) bytes long, so wherever it starts, one of its first four 4-byte
 * windows begins at a position that is a multiple of 4. Each value is entered in the table under those four
 * windows (with their offset), and the text is looked up only at every fourth position: a quarter of the
 * lookups of a byte-by-byte scan, one 4-byte word each.
 */
const STRIDE = 4

export class Redactor {
  static readonly EMPTY = new Redactor([])

  private readonly patterns: Pattern[] = []
  /** Slot -> first entry; entries chain through `entryNext`. */
  private readonly table: Int32Array
  private readonly shift: number
  private readonly entryKey: Int32Array
  private readonly entryPattern: Int32Array
  private readonly entryOffset: Int32Array
  private readonly entryNext: Int32Array
  /** Byte length of the longest value: what a stream holds back. */
  readonly maxLength: number

  constructor(values: readonly SecretValue[]) {
    const seen = new Set<string>()
    for (const { value, source } of values) {
      const bytes = Buffer.from(value, 'utf8')
      if (bytes.length < MIN_SECRET_LENGTH || seen.has(value)) continue
      seen.add(value)
      this.patterns.push({ bytes, marker: Buffer.from(markerFor(source)) })
    }
    const entries = this.patterns.length * STRIDE
    // At most one slot in eight taken: in text without secrets most lookups meet an empty slot, so the cost per
    // byte stays that of one value whatever their number (half-full, 1,000 values scanned at a third of the speed).
    let bits = 12
    while (1 << bits < entries * 8) bits++
    this.shift = 32 - bits
    this.table = new Int32Array(1 << bits).fill(-1)
    this.entryKey = new Int32Array(entries)
    this.entryPattern = new Int32Array(entries)
    this.entryOffset = new Int32Array(entries)
    this.entryNext = new Int32Array(entries)
    let maxLength = 0
    this.patterns.forEach(({ bytes }, index) => {
      for (let k = 0; k < STRIDE; k++) {
        const e = index * STRIDE + k
        const key = bytes.readInt32LE(k)
        const slot = Math.imul(key, 0x9e3779b1) >>> this.shift
        this.entryKey[e] = key
        this.entryPattern[e] = index
        this.entryOffset[e] = k
        this.entryNext[e] = this.table[slot] as number
        this.table[slot] = e
      }
      maxLength = Math.max(maxLength, bytes.length)
    })
    this.maxLength = maxLength
  }

  /** The distinct values it hides (for a search that must find every line holding one: grep's lens). */
  values(): string[] {
    return this.patterns.map((p) => p.bytes.toString('utf8'))
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
    const bytes = Buffer.from(text, 'utf8')
    return this.patterns.length > 0 && this.find(bytes, bytes.length).length > 0
  }

  /** A redactor for a byte stream: values split across chunks are caught. */
  byteStream(): RedactStream {
    return new RedactStream(this)
  }

  /**
   * Every span to hide that starts before `limit`, merged where they overlap, in order. Spans found may end
   * after `limit`.
   */
  find(bytes: Buffer, limit: number): Span[] {
    const spans: Span[] = []
    const n = bytes.length
    if (n < MIN_SECRET_LENGTH || this.patterns.length === 0) return spans
    const { table, shift, entryKey, entryNext } = this
    // A value starting before `limit` has a window at a multiple of 4 below `limit + 3`.
    const last = Math.min(n - 4, limit + STRIDE - 2)
    for (let i = 0; i <= last; i += STRIDE) {
      const key =
        (bytes[i] as number) |
        ((bytes[i + 1] as number) << 8) |
        ((bytes[i + 2] as number) << 16) |
        ((bytes[i + 3] as number) << 24)
      let e = table[Math.imul(key, 0x9e3779b1) >>> shift] as number
      // Walk the slot's chain here: only an entry with the very key is worth a call (and its allocations).
      while (e !== -1 && entryKey[e] !== key) e = entryNext[e] as number
      if (e !== -1) this.matchAt(bytes, i, key, e, limit, spans)
    }
    return spans
  }

  /** The values whose window at `i` has this key, verified whole; the longest at each start is kept. */
  private matchAt(bytes: Buffer, i: number, key: number, first: number, limit: number, spans: Span[]): void {
    const found: { start: number; end: number; marker: Buffer }[] = []
    for (let e = first; e !== -1; e = this.entryNext[e] as number) {
      if (this.entryKey[e] !== key) continue
      const start = i - (this.entryOffset[e] as number)
      if (start < 0 || start >= limit) continue
      const p = this.patterns[this.entryPattern[e] as number] as Pattern
      const len = p.bytes.length
      if (start + len > bytes.length) continue
      if (bytes.compare(p.bytes, 0, len, start, start + len) !== 0) continue
      found.push({ start, end: start + len, marker: p.marker })
    }
    found.sort((a, b) => a.start - b.start || b.end - a.end)
    for (const m of found) {
      const prev = spans.at(-1)
      if (prev !== undefined && m.start < prev.end) prev.end = Math.max(prev.end, m.end)
      else spans.push(m)
    }
  }
}

/** `bytes[0, upTo)` with each span replaced by its marker. */
export function splice(bytes: Buffer, spans: readonly Span[], upTo: number): Buffer {
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
  /**
   * Made when there are first bytes to decode. Every tool call gets a stream (agent-session.ts `toolContext`)
   * and most never print (a read, a search): constructing a TextDecoder cost more than the rest of starting
   * such a call.
   */
  private decoder: TextDecoder | undefined

  constructor(redactor: Redactor) {
    this.bytes = redactor.byteStream()
  }

  push(chunk: string): string {
    const bytes = this.bytes.push(Buffer.from(chunk, 'utf8'))
    if (bytes.length === 0 && this.decoder === undefined) return ''
    this.decoder ??= new TextDecoder('utf-8')
    return this.decoder.decode(bytes, { stream: true })
  }

  end(): string {
    const rest = this.bytes.end()
    // No decoder yet: nothing was decoded, so nothing is held in one either.
    if (rest.length === 0 && this.decoder === undefined) return ''
    this.decoder ??= new TextDecoder('utf-8')
    return this.decoder.decode(rest)
  }
}
