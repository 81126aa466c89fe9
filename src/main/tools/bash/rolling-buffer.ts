import { createWriteStream, type WriteStream } from 'node:fs'
import { collapseLine } from '../../../shared/ansi'
import { AnsiStripper } from './ansi'

/**
 * What the model gets of a command's output: the last lines, within a line cap and a byte cap, with
 * terminal sequences stripped and carriage-return progress bars collapsed; and the full output, every
 * byte, streamed to a file whose path the result names (DESIGN 2). Memory stays bounded whatever the
 * command prints: the tail is trimmed from the front as output arrives, never concatenated whole.
 */

export const MAX_MODEL_LINES = 2000

/**
 * 30 000 bytes is about 8k tokens: enough for a full test report or a compiler's last errors, small next
 * to a 200k context that must last a whole task. Whatever is cut stays in the saved file, and a narrower
 * command gets the model any other part; a bigger cap would spend context on every call to save a rare
 * second look.
 */
export const MAX_MODEL_BYTES = 30_000

/**
 * Stripped text is parsed into lines in batches of about this many characters (see `TailLines`). Strings
 * stay under V8's large-object size (128 KiB; two bytes per character once any non-Latin-1 character is
 * in): a large string is a fresh mapping, and its page faults made batches of 256 Ki characters 50 times
 * slower to build than batches of 48 Ki.
 */
const BATCH_CHARS = 48 * 1024

/** The file stream queues at most this much before `write` asks the producer to wait. */
const FILE_HIGH_WATER_MARK = 1024 * 1024

/**
 * A pty hands out at most 4 KiB per read. Output is gathered into blocks of this size before it is written
 * and parsed, so the per-call costs (stream bookkeeping, decoder and regex calls) are paid per block. A
 * block decodes to at most 64 KiB of string, under the large-object size (see BATCH_CHARS).
 */
const BLOCK_BYTES = 32 * 1024

/** A block waiting longer than this is written anyway, so the saved file follows a slow command. */
const BLOCK_FLUSH_MS = 200

/**
 * Raw blocks wait unparsed while their lines may still be among the last ones. Most are dropped unread
 * once enough newer lines arrived; long lines make the queue reach this size, and the oldest blocks are
 * then parsed to keep memory bounded.
 */
const MAX_UNPARSED_BYTES = 4 * 1024 * 1024

export interface OutputSummary {
  /** The tail the model sees (no truncation note: the caller words that). */
  text: string
  /** Bytes the command wrote, as saved in the file. */
  totalBytes: number
  /** Lines the command wrote (a last line without a newline counts). */
  totalLines: number
  /** Lines in `text`. */
  shownLines: number
  /** True when `text` is not the whole output (lines dropped or a long line cut). */
  truncated: boolean
  /** Path of the file with every byte, or null when it could not be written (`saveError` says why). */
  outputPath: string | null
  saveError?: string
}

export interface RollingBufferOptions {
  /** Where the full output goes; created or truncated. */
  filePath: string
  maxLines?: number
  maxBytes?: number
}

interface Block {
  bytes: Buffer
  newlines: number
}

/**
 * Parsing (UTF-8 decoding, stripping, line splitting) is the expensive part, and in a flood nearly all of
 * it is wasted: only the last lines reach the model. It is done lazily. A newline always returns the
 * decoder and the stripper to their initial state (see AnsiStripper), so the text after any newline
 * depends on nothing before it: a block followed by more than `maxLines` newlines can be dropped unread,
 * and parsing restarts at the next newline.
 */
export class RollingBuffer {
  private readonly file: WriteStream
  private fileError: Error | null = null
  private drain: Promise<void> | null = null
  private decoder = new TextDecoder('utf-8')
  private stripper = new AnsiStripper()
  private readonly tail: TailLines
  private readonly maxLines: number
  private block = Buffer.allocUnsafe(BLOCK_BYTES)
  private blockUsed = 0
  private blockNewlines = 0
  private blockTimer: NodeJS.Timeout | undefined
  private unparsed: Block[] = []
  private unparsedBytes = 0
  private unparsedNewlines = 0
  private droppedUnread = false
  private totalBytes = 0
  private newlines = 0
  private lastByte = -1

  constructor(private readonly options: RollingBufferOptions) {
    this.maxLines = options.maxLines ?? MAX_MODEL_LINES
    this.tail = new TailLines(this.maxLines, options.maxBytes ?? MAX_MODEL_BYTES)
    this.file = createWriteStream(options.filePath, { highWaterMark: FILE_HIGH_WATER_MARK })
    this.file.on('error', (err) => {
      this.fileError ??= err
    })
  }

  /**
   * Takes the next piece of output. Returns a promise when the file writer is behind: the producer should
   * stop reading the command until it settles (it never rejects).
   */
  write(chunk: Buffer): Promise<void> | undefined {
    if (chunk.length === 0) return undefined
    this.totalBytes += chunk.length
    this.lastByte = chunk[chunk.length - 1] as number
    let wait: Promise<void> | undefined
    for (let offset = 0; offset < chunk.length;) {
      const end = Math.min(chunk.length, offset + BLOCK_BYTES - this.blockUsed)
      const newlines = countNewlines(chunk, offset, end)
      this.newlines += newlines
      this.blockNewlines += newlines
      this.blockUsed += chunk.copy(this.block, this.blockUsed, offset, end)
      offset = end
      if (this.blockUsed === BLOCK_BYTES) wait = this.flushBlock() ?? wait
    }
    if (this.blockUsed > 0) this.blockTimer ??= setTimeout(() => this.flushBlock(), BLOCK_FLUSH_MS).unref()
    return wait
  }

  /** Flushes the file and returns what the model sees. Never rejects. */
  async close(): Promise<OutputSummary> {
    this.flushBlock()
    for (const block of this.unparsed) this.parse(block.bytes)
    this.unparsed = []
    this.tail.push(this.stripper.push(this.decoder.decode()))
    await new Promise<void>((resolve) => {
      if (this.file.closed) return resolve()
      this.file.once('close', () => resolve())
      this.file.end()
    })
    const { text, shownLines, cut } = this.tail.finish()
    const totalLines = this.newlines + (this.totalBytes > 0 && this.lastByte !== 0x0a ? 1 : 0)
    return {
      text,
      totalBytes: this.totalBytes,
      totalLines,
      shownLines,
      truncated: cut || shownLines < totalLines,
      outputPath: this.fileError ? null : this.options.filePath,
      ...(this.fileError ? { saveError: this.fileError.message } : {}),
    }
  }

  private flushBlock(): Promise<void> | undefined {
    clearTimeout(this.blockTimer)
    this.blockTimer = undefined
    if (this.blockUsed === 0) return undefined
    const block: Block = { bytes: this.block.subarray(0, this.blockUsed), newlines: this.blockNewlines }
    this.block = Buffer.allocUnsafe(BLOCK_BYTES)
    this.blockUsed = 0
    this.blockNewlines = 0
    this.queueForParsing(block)
    if (this.fileError || this.file.destroyed || this.file.write(block.bytes)) return undefined
    this.drain ??= new Promise<void>((resolve) => {
      const done = (): void => {
        this.file.off('drain', done).off('error', done).off('close', done)
        this.drain = null
        resolve()
      }
      this.file.on('drain', done).on('error', done).on('close', done)
    })
    return this.drain
  }

  private queueForParsing(block: Block): void {
    this.unparsed.push(block)
    this.unparsedBytes += block.bytes.length
    this.unparsedNewlines += block.newlines
    for (;;) {
      const oldest = this.unparsed[0]
      if (!oldest || this.unparsed.length === 1) return
      const newerLines = this.unparsedNewlines - oldest.newlines
      if (newerLines <= this.maxLines && this.unparsedBytes <= MAX_UNPARSED_BYTES) return
      this.unparsed.shift()
      this.unparsedBytes -= oldest.bytes.length
      this.unparsedNewlines -= oldest.newlines
      if (newerLines > this.maxLines) this.droppedUnread = true
      else this.parse(oldest.bytes)
    }
  }

  private parse(bytes: Buffer): void {
    if (this.droppedUnread) {
      // Everything parsed so far is older than the last lines; start over at the next newline.
      this.droppedUnread = false
      this.decoder = new TextDecoder('utf-8')
      this.stripper = new AnsiStripper()
      this.tail.restartAtNextLine()
    }
    this.tail.push(this.stripper.push(this.decoder.decode(bytes, { stream: true })))
  }
}

function countNewlines(bytes: Buffer, start: number, end: number): number {
  let n = 0
  for (let i = start; i < end; i++) if (bytes[i] === 0x0a) n++
  return n
}

/**
 * The last lines of the stripped text. Text is queued raw and parsed in batches, walking each batch
 * backwards from its end only as far as the caps reach: a flood of short lines costs a native newline
 * scan, not a JavaScript step per line.
 */
class TailLines {
  /** Complete lines, collapsed, oldest first; `first` is the index of the oldest kept. */
  private lines: string[] = []
  private first = 0
  private bytes = 0
  /** The line still being written, raw (progress bar frames not collapsed yet). */
  private partial = ''
  /** No CR or backspace in `partial`: its end is its visible end. */
  private partialPlain = true
  /**
   * The start of `partial` was dropped. A flag, not a marker character in the string: mixing a two-byte
   * character into a string built from one-byte pieces makes every later V8 flatten of it ~20x slower.
   */
  private partialCut = false
  private queued: string[] = []
  private queuedChars = 0
  private cut = false
  /** Text up to the next newline ends a line whose start was never parsed. */
  private skipToNextLine = false

  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {}

  /** Forgets everything: what comes next continues a line whose start is unknown. */
  restartAtNextLine(): void {
    this.lines = []
    this.first = 0
    this.bytes = 0
    this.partial = ''
    this.partialPlain = true
    this.partialCut = false
    this.queued = []
    this.queuedChars = 0
    this.cut = true
    this.skipToNextLine = true
  }

  push(text: string): void {
    if (this.skipToNextLine) {
      const newline = text.indexOf('\n')
      if (newline === -1) return
      this.skipToNextLine = false
      text = text.slice(newline + 1)
    }
    if (text.length === 0) return
    // A long line arriving in pieces needs no line parsing.
    if (this.queued.length === 0 && !text.includes('\n')) return this.extendPartial(text)
    this.queued.push(text)
    this.queuedChars += text.length
    if (this.queuedChars >= BATCH_CHARS) this.parseQueued()
  }

  finish(): { text: string; shownLines: number; cut: boolean } {
    this.parseQueued()
    if (this.partial.length > 0) {
      this.endPartialLine('')
      this.trim()
    }
    const kept = this.lines.slice(this.first)
    return { text: kept.join('\n'), shownLines: kept.length, cut: this.cut }
  }

  private parseQueued(): void {
    if (this.queued.length === 0) return
    const text = this.queued.length === 1 ? (this.queued[0] as string) : this.queued.join('')
    this.queued = []
    this.queuedChars = 0
    const firstNewline = text.indexOf('\n')
    if (firstNewline === -1) return this.extendPartial(text)
    this.endPartialLine(text.slice(0, firstNewline))
    const lastNewline = text.lastIndexOf('\n')
    if (lastNewline > firstNewline) this.commitLines(text, firstNewline + 1, lastNewline)
    this.trim()
    this.extendPartial(text.slice(lastNewline + 1))
  }

  /** Commits the current line, ended by `rest`, and starts a new one. */
  private endPartialLine(rest: string): void {
    const line = collapseLine(this.partial + rest)
    this.append(this.capLine(this.partialCut ? '…' + line : line))
    this.partial = ''
    this.partialPlain = true
    this.partialCut = false
  }

  /** Commits the complete lines of text[from, to), where text[to] is a newline, newest first until full. */
  private commitLines(text: string, from: number, to: number): void {
    const newest: string[] = []
    let bytes = 0
    let end = to
    let full = false
    for (;;) {
      const start = Math.max(text.lastIndexOf('\n', end - 1) + 1, from)
      const line = this.capLine(collapseLine(text.slice(start, end)))
      newest.push(line)
      bytes += Buffer.byteLength(line) + 1
      if (newest.length >= this.maxLines || bytes >= this.maxBytes) {
        full = true
        break
      }
      if (start === from) break
      end = start - 1
    }
    if (full) {
      // These lines alone fill the caps: everything older is gone.
      this.lines = []
      this.first = 0
      this.bytes = 0
    }
    for (let i = newest.length - 1; i >= 0; i--) this.append(newest[i] as string)
  }

  private append(line: string): void {
    this.lines.push(line)
    this.bytes += Buffer.byteLength(line) + 1
  }

  /** A single line longer than the byte cap keeps its end, marked as cut. */
  private capLine(line: string): string {
    if (line.length * 3 <= this.maxBytes || Buffer.byteLength(line) <= this.maxBytes) return line
    this.cut = true
    return '…' + lastBytes(line, this.maxBytes - 3)
  }

  private trim(): void {
    while (
      this.lines.length - this.first > this.maxLines ||
      (this.bytes > this.maxBytes && this.lines.length - this.first > 1)
    ) {
      this.bytes -= Buffer.byteLength(this.lines[this.first] as string) + 1
      this.first++
    }
    // Compact now and then so dropped lines are released.
    if (this.first > 4096 && this.first * 2 > this.lines.length) {
      this.lines = this.lines.slice(this.first)
      this.first = 0
    }
  }

  /** The current line grows; a line longer than the caps keeps only its visible end. */
  private extendPartial(text: string): void {
    if (text.length === 0) return
    this.partial += text
    this.partialPlain &&= !text.includes('\r') && !text.includes('\b')
    if (this.partial.length <= 2 * this.maxBytes) return
    if (this.partialPlain) {
      this.partial = lastBytes(this.partial, this.maxBytes)
      this.partialCut = this.cut = true
      return
    }
    // Collapsing now is safe if a trailing CR survives: the next frame must still replace this one.
    const pendingReturn = this.partial.endsWith('\r')
    let line = collapseLine(this.partial)
    if (Buffer.byteLength(line) > this.maxBytes) {
      line = lastBytes(line, this.maxBytes)
      this.partialCut = this.cut = true
    }
    this.partial = pendingReturn ? line + '\r' : line
    this.partialPlain = !pendingReturn
  }
}

/** The end of `text` that fits in `maxBytes` of UTF-8, never splitting a character. */
function lastBytes(text: string, maxBytes: number): string {
  let s = text.slice(-maxBytes)
  for (let over = Buffer.byteLength(s) - maxBytes; over > 0; over = Buffer.byteLength(s) - maxBytes) {
    s = s.slice(Math.max(1, Math.floor(over / 3)))
  }
  const code = s.charCodeAt(0)
  return code >= 0xdc00 && code <= 0xdfff ? s.slice(1) : s
}
