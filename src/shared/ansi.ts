/**
 * Terminal output read once, for both readers: the model gets plain text (`src/main/tools/bash/ansi.ts`, then
 * the rolling buffer), the UI gets styled, inert text (`src/renderer/src/lib/ansi.ts`). Escape parsing and
 * carriage-return collapsing are written here only, so the two never disagree on what a command printed.
 *
 * `AnsiTokenizer` is a streaming state machine, since a command's output arrives in arbitrary pieces and a
 * sequence can be split across two of them. It follows the shape of the DEC/ECMA-48 parser that terminals
 * implement (ground, escape, CSI, control strings) with two deliberate differences: a control string (OSC,
 * DCS, ...) also ends at a newline, so one stray `ESC ]` can swallow at most the rest of its line instead of
 * everything after it; and over-long CSI sequences are abandoned.
 *
 * Its text keeps printable characters, tab, newline, and the carriage return and backspace that collapsing
 * needs (progress bars, overstrike); everything else in C0, DEL and C1 is dropped. Of the sequences, only
 * SGR (colour and style) is reported, to a reader that asks for it; the rest are dropped.
 */

type State = 'ground' | 'escape' | 'escapeIntermediate' | 'csi' | 'controlString' | 'controlStringEscape'

const ESC = 0x1b
const BEL = 0x07
const CAN = 0x18
const SUB = 0x1a
const LF = 0x0a
const SGR_FINAL = 0x6d // m

/** A CSI longer than this is not a real sequence (the longest SGR forms are ~40 characters). */
const MAX_CSI_LENGTH = 256

/* eslint-disable no-control-regex -- terminal sequences are made of control characters */
/** ESC, or a C1 character that opens a sequence (CSI, OSC, DCS, SOS, PM, APC). */
const SEQUENCE_START = /[\u001b\u0090\u0098\u009b\u009d\u009e\u009f]/g

/** Controls dropped outright; \b \t \n \r are kept for the line logic, ESC and C1 openers are parsed. */
const DROPPED_CONTROLS =
  /[\u0000-\u0007\u000b\u000c\u000e-\u001a\u001c-\u001f\u007f-\u008f\u0091-\u0097\u0099\u009a\u009c]+/g
/* eslint-enable no-control-regex */

/** SGR parameters: numbers separated by `;` or `:` (no private-mode marker, no intermediates). */
const SGR_PARAMS = /^[0-9;:]*$/

export interface AnsiSink {
  /** A run of text, in order (never empty). */
  text(run: string): void
  /** An SGR sequence's parameters (what stands between CSI and `m`), in order with the text. */
  sgr?(params: string): void
}

export class AnsiTokenizer {
  private state: State = 'ground'
  private sequenceLength = 0
  /** The current CSI's parameter characters, kept only for a sink that reads SGR. */
  private params = ''

  constructor(private readonly sink: AnsiSink) {}

  /** Reads the next piece of output; a sequence cut at its end is remembered and finished by the next call. */
  push(text: string): void {
    let i = 0
    while (i < text.length) {
      if (this.state === 'ground') {
        SEQUENCE_START.lastIndex = i
        const found = SEQUENCE_START.exec(text)
        const end = found ? found.index : text.length
        if (end > i) {
          const run = text.slice(i, end).replace(DROPPED_CONTROLS, '')
          if (run !== '') this.sink.text(run)
        }
        if (!found) break
        this.enter(text.charCodeAt(end))
        i = end + 1
        continue
      }
      switch (this.step(text.charCodeAt(i))) {
        case 'consumed':
          i++
          break
        case 'newline':
          this.sink.text('\n')
          i++
          break
        case 'reprocess':
          break
      }
    }
  }

  /** Opens the sequence started by ESC or a C1 introducer found in ground state. */
  private enter(code: number): void {
    this.sequenceLength = 0
    switch (code) {
      case ESC:
        this.state = 'escape'
        return
      case 0x9b:
        this.startCsi()
        return
      default:
        // U+0090 DCS, U+0098 SOS, U+009D OSC, U+009E PM, U+009F APC
        this.state = 'controlString'
    }
  }

  private startCsi(): void {
    this.state = 'csi'
    this.params = ''
  }

  /**
   * Consumes one character of a sequence. 'reprocess': the character does not belong to the sequence,
   * which is abandoned, and the caller hands the character to ground state again. 'newline': the newline
   * that ended a control string, which the output keeps.
   */
  private step(code: number): 'consumed' | 'newline' | 'reprocess' {
    switch (this.state) {
      case 'ground':
        return 'reprocess'
      case 'escape':
        if (code === 0x5b) this.startCsi()
        else if (code === 0x5d || code === 0x50 || code === 0x58 || code === 0x5e || code === 0x5f) {
          this.state = 'controlString' // ] P X ^ _
        } else if (code >= 0x20 && code <= 0x2f) this.state = 'escapeIntermediate'
        else if (code >= 0x30 && code <= 0x7e)
          this.state = 'ground' // two-character sequence: ESC 7, ESC c, ...
        else if (code !== ESC) return this.abandon()
        return 'consumed'
      case 'escapeIntermediate':
        if (code >= 0x30 && code <= 0x7e) this.state = 'ground'
        else if (code < 0x20 || code > 0x2f) return this.abandon()
        return 'consumed'
      case 'csi':
        if (code >= 0x40 && code <= 0x7e) {
          this.state = 'ground'
          if (code === SGR_FINAL && this.sink.sgr && SGR_PARAMS.test(this.params)) this.sink.sgr(this.params)
        } else if (code < 0x20 || code > 0x3f || ++this.sequenceLength > MAX_CSI_LENGTH) return this.abandon()
        else if (this.sink.sgr) this.params += String.fromCharCode(code)
        return 'consumed'
      case 'controlString':
        if (code === LF) {
          this.state = 'ground'
          return 'newline'
        }
        if (code === BEL || code === 0x9c || code === CAN || code === SUB) this.state = 'ground'
        else if (code === ESC) this.state = 'controlStringEscape'
        return 'consumed'
      case 'controlStringEscape':
        if (code === 0x5c) {
          this.state = 'ground' // ESC \ is the string terminator
          return 'consumed'
        }
        // Any other ESC ends the string and starts a new sequence, as in xterm.
        this.state = 'escape'
        return 'reprocess'
    }
  }

  private abandon(): 'reprocess' {
    this.state = 'ground'
    return 'reprocess'
  }
}

/** A range `[start, end)` of a string. */
export type TextRange = [start: number, end: number]

/**
 * What a terminal leaves of the line `text[from, to)` for a reader, as the ranges of `text` that stay: after
 * carriage returns, the last non-empty frame (a progress bar's final state; text a CR+newline ended stays);
 * in it, each backspace erases the character before it (overstrike bold and underline in man pages become
 * plain text). Ranges are in order, apart and non-empty.
 */
export function visibleRanges(text: string, from = 0, to = text.length): TextRange[] {
  let start = from
  let end = to
  const cr = text.lastIndexOf('\r', to - 1)
  if (cr >= from && to > from) {
    // The last non-empty frame, or nothing when every frame is empty.
    let frameStart = cr + 1
    end = to
    while (end === frameStart && frameStart > from) {
      end = frameStart - 1
      const before = end > from ? text.lastIndexOf('\r', end - 1) : -1
      frameStart = before >= from ? before + 1 : from
    }
    start = frameStart
  }
  if (start === end) return []
  const backspace = text.indexOf('\b', start)
  if (backspace < 0 || backspace >= end) return [[start, end]]
  const ranges: TextRange[] = []
  for (let i = start; i < end;) {
    const width = i + 1 < end && (text.codePointAt(i) as number) > 0xffff ? 2 : 1
    const last = ranges[ranges.length - 1]
    if (text.charCodeAt(i) === 0x08) {
      if (last) {
        // Erase one character: both halves of a surrogate pair.
        const low = text.charCodeAt(last[1] - 1)
        const pair = last[1] - 2 >= last[0] && low >= 0xdc00 && low <= 0xdfff
        last[1] -= pair && isHighSurrogate(text.charCodeAt(last[1] - 2)) ? 2 : 1
        if (last[1] === last[0]) ranges.pop()
      }
    } else if (last && last[1] === i) last[1] = i + width
    else ranges.push([i, i + width])
    i += width
  }
  return ranges
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}

/** The line as a terminal leaves it for a reader (see `visibleRanges`). */
export function collapseLine(line: string): string {
  if (!line.includes('\r') && !line.includes('\b')) return line
  return visibleRanges(line)
    .map(([start, end]) => line.slice(start, end))
    .join('')
}

/** `visibleRanges` of every line of `text`, newlines kept, as few ranges as possible. */
export function visibleTextRanges(text: string): TextRange[] {
  const out: TextRange[] = []
  const add = (start: number, end: number): void => {
    const last = out[out.length - 1]
    if (last && last[1] === start) last[1] = end
    else out.push([start, end])
  }
  for (let start = 0; ;) {
    const newline = text.indexOf('\n', start)
    const end = newline < 0 ? text.length : newline
    for (const [a, b] of visibleRanges(text, start, end)) add(a, b)
    if (newline < 0) return out
    add(newline, newline + 1)
    start = newline + 1
  }
}
