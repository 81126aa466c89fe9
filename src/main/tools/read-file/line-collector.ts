/**
 * Lines `from..to` of a file as read_file shows them (numbered, long lines cut, CR of CRLF dropped), from
 * bytes fed in order, in bounded memory whatever the line lengths.
 */

export const MAX_LINE_CHARS = 2000
// What one call may put in front of the model; beyond it the output stops at a line boundary and says how
// to read on.
export const MAX_OUTPUT_CHARS = 256 * 1024
// Enough bytes to hold MAX_LINE_CHARS code points of any UTF-8 text.
const KEEP_LINE_BYTES = MAX_LINE_CHARS * 4 + 4
const COUNT_CHARS_UP_TO_BYTES = 1024 * 1024

const LF = 10
const CR = 13

/** `%6d|text`: the numbered line format of read_file (and of edit_file's excerpt). */
export function numberedLine(lineNumber: number, text: string): string {
  return `${String(lineNumber).padStart(6)}|${text}`
}

/** Cuts a line at MAX_LINE_CHARS code points (never inside a surrogate pair) with a marker giving its size. */
export function cutLongLine(text: string, size: number, unit: 'chars' | 'bytes' = 'chars'): string {
  let end = 0
  for (let count = 0; count < MAX_LINE_CHARS && end < text.length; count++) {
    const code = text.charCodeAt(end)
    end += code >= 0xd800 && code <= 0xdbff && end + 1 < text.length ? 2 : 1
  }
  return `${text.slice(0, end)}… [line truncated: ${size} ${unit}]`
}

/**
 * Collects lines `from..to` (1-based, inclusive) from bytes fed in order, counting every line it passes.
 * Memory is bounded whatever the line lengths: at most KEEP_LINE_BYTES of a line are kept.
 */
export class LineCollector {
  readonly lines: string[] = []
  truncatedLines = 0
  /** Stopped before line `line` because the output budget was reached. */
  full = false
  /** Number of the line whose bytes are being consumed; its first byte is at `lineStart`. */
  line: number
  lineStart: number
  /** Absolute offset just past the bytes fed so far. */
  consumed: number
  private outputChars = 0
  private kept: Buffer[] = []
  private keptBytes = 0
  private lineBytes = 0
  private lineChars = 0
  private lastByte = -1

  constructor(
    startLine: number,
    startByte: number,
    private readonly from: number,
    private readonly to: number,
    /**
     * Hides known secret values in a line before it is cut: a cut after redaction never shows the start of a
     * value that runs past it (the one redactor still sees the whole output afterwards).
     */
    private readonly redact: (text: string) => string = (text) => text,
  ) {
    this.line = startLine
    this.lineStart = startByte
    this.consumed = startByte
  }

  get done(): boolean {
    return this.full || this.line > this.to
  }

  feed(chunk: Buffer, at: number): void {
    let pos = 0
    while (pos < chunk.length) {
      const nl = chunk.indexOf(LF, pos)
      const end = nl === -1 ? chunk.length : nl
      const collecting = this.line >= this.from && this.line <= this.to && !this.full
      if (collecting && end > pos) this.take(chunk, pos, end)
      if (nl === -1) break
      if (collecting) this.finishLine()
      this.line++
      this.lineStart = at + nl + 1
      pos = nl + 1
    }
    this.consumed = at + chunk.length
  }

  /** At end of file: finishes a last line without a newline. Returns the file's line count. */
  end(): number {
    if (this.consumed > this.lineStart) {
      if (this.line >= this.from && this.line <= this.to && !this.full) this.finishLine()
      return this.line
    }
    return this.line - 1
  }

  private take(chunk: Buffer, start: number, end: number): void {
    if (this.keptBytes < KEEP_LINE_BYTES) {
      // Copied: the caller reuses its read buffer.
      const slice = Buffer.from(
        chunk.subarray(start, Math.min(end, start + KEEP_LINE_BYTES - this.keptBytes)),
      )
      this.kept.push(slice)
      this.keptBytes += slice.length
    }
    // Code points = bytes that do not continue a UTF-8 sequence; only lines being shown are counted, and
    // past COUNT_CHARS_UP_TO_BYTES (a minified bundle, a one-line dump) the size is given in bytes instead.
    if (this.lineBytes < COUNT_CHARS_UP_TO_BYTES)
      for (let i = start; i < end; i++) if (((chunk[i] as number) & 0xc0) !== 0x80) this.lineChars++
    this.lineBytes += end - start
    this.lastByte = chunk[end - 1] as number
  }

  private finishLine(): void {
    let text =
      this.kept.length === 1
        ? (this.kept[0] as Buffer).toString('utf8')
        : Buffer.concat(this.kept).toString('utf8')
    let chars = this.lineChars
    if (this.line === 1 && text.startsWith('\uFEFF')) {
      text = text.slice(1)
      chars--
    }
    // CRLF files show their lines without the CR; edit_file puts CRLF back (DESIGN 2).
    if (this.lastByte === CR) chars--
    if (this.lineBytes > COUNT_CHARS_UP_TO_BYTES) {
      text = cutLongLine(this.redact(text), this.lineBytes - (this.lastByte === CR ? 1 : 0), 'bytes')
      this.truncatedLines++
    } else if (chars > MAX_LINE_CHARS) {
      text = cutLongLine(this.redact(text), chars)
      this.truncatedLines++
    } else if (text.endsWith('\r')) text = text.slice(0, -1)
    this.kept = []
    this.keptBytes = 0
    this.lineBytes = 0
    this.lineChars = 0
    this.lastByte = -1

    const formatted = numberedLine(this.line, text)
    if (this.lines.length > 0 && this.outputChars + formatted.length + 1 > MAX_OUTPUT_CHARS) {
      this.full = true
      return
    }
    this.outputChars += formatted.length + 1
    this.lines.push(formatted)
  }
}
