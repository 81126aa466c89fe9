/**
 * Terminal control sequences removed from command output before the model reads it (DESIGN 2). The UI
 * gets the raw bytes and renders them inert; the model gets plain text, because colour codes and cursor
 * movement cost tokens and carry nothing it can use.
 *
 * A streaming state machine, since a command's output reaches us in arbitrary pieces and a sequence can
 * be split across two of them. It follows the shape of the DEC/ECMA-48 parser that terminals implement
 * (ground, escape, CSI, control strings) with two deliberate differences: a control string (OSC, DCS,
 * ...) also ends at a newline, so one stray `ESC ]` can swallow at most the rest of its line instead of
 * everything after it; and over-long CSI sequences are abandoned.
 *
 * Kept: printable text, tab, newline, and the carriage return and backspace that the rolling buffer needs
 * to collapse progress bars and overstrike. Everything else in C0, DEL and C1 is dropped.
 */

type State = 'ground' | 'escape' | 'escapeIntermediate' | 'csi' | 'controlString' | 'controlStringEscape'

const ESC = 0x1b
const BEL = 0x07
const CAN = 0x18
const SUB = 0x1a
const LF = 0x0a

/** A CSI longer than this is not a real sequence (the longest SGR forms are ~40 characters). */
const MAX_CSI_LENGTH = 256

/* eslint-disable no-control-regex -- terminal sequences are made of control characters */
/** ESC, or a C1 character that opens a sequence (CSI, OSC, DCS, SOS, PM, APC). */
const SEQUENCE_START = /[\u001b\u0090\u0098\u009b\u009d\u009e\u009f]/g

/** Controls dropped outright; \b \t \n \r are kept for the line logic, ESC and C1 openers are parsed. */
const DROPPED_CONTROLS =
  /[\u0000-\u0007\u000b\u000c\u000e-\u001a\u001c-\u001f\u007f-\u008f\u0091-\u0097\u0099\u009a\u009c]+/g
/* eslint-enable no-control-regex */

export class AnsiStripper {
  private state: State = 'ground'
  private sequenceLength = 0

  /** Returns the plain text of `text`; a sequence cut at the end is remembered and finished by the next call. */
  push(text: string): string {
    let out = ''
    let i = 0
    while (i < text.length) {
      if (this.state === 'ground') {
        SEQUENCE_START.lastIndex = i
        const found = SEQUENCE_START.exec(text)
        const end = found ? found.index : text.length
        if (end > i) out += text.slice(i, end).replace(DROPPED_CONTROLS, '')
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
          out += '\n'
          i++
          break
        case 'reprocess':
          break
      }
    }
    return out
  }

  /** Opens the sequence started by ESC or a C1 introducer found in ground state. */
  private enter(code: number): void {
    this.sequenceLength = 0
    switch (code) {
      case ESC:
        this.state = 'escape'
        return
      case 0x9b:
        this.state = 'csi'
        return
      default:
        // U+0090 DCS, U+0098 SOS, U+009D OSC, U+009E PM, U+009F APC
        this.state = 'controlString'
    }
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
        if (code === 0x5b) this.state = 'csi'
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
        if (code >= 0x40 && code <= 0x7e) this.state = 'ground'
        else if (code < 0x20 || code > 0x3f || ++this.sequenceLength > MAX_CSI_LENGTH) return this.abandon()
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

/** Plain text of a complete piece of output. */
export function stripAnsi(text: string): string {
  return new AnsiStripper().push(text)
}
