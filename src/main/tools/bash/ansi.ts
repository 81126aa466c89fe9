import { AnsiTokenizer } from '../../../shared/ansi'

/**
 * Terminal control sequences removed from command output before the model reads it (DESIGN 2). The UI
 * gets the raw bytes and renders them inert; the model gets plain text, because colour codes and cursor
 * movement cost tokens and carry nothing it can use. The parsing is `src/shared/ansi.ts`'s, which the UI
 * shares; what is kept for the rolling buffer: printable text, tab, newline, and the carriage return and
 * backspace that it collapses (`collapseLine`) into what a terminal would show.
 */
export class AnsiStripper {
  private out = ''
  private readonly tokenizer = new AnsiTokenizer({
    text: (run) => {
      this.out += run
    },
  })

  /** Returns the plain text of `text`; a sequence cut at the end is remembered and finished by the next call. */
  push(text: string): string {
    this.tokenizer.push(text)
    const out = this.out
    this.out = ''
    return out
  }
}

/** Plain text of a complete piece of output. */
export function stripAnsi(text: string): string {
  return new AnsiStripper().push(text)
}
