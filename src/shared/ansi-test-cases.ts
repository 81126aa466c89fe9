/**
 * Terminal output and what each reader gets of it, for the tests of both readers of `ansi.ts`: the model's
 * (`src/main/tools/bash/ansi.test.ts`) and the UI's (`src/renderer/src/lib/ansi.test.ts`). One table, so
 * the two can never be tested against different ideas of what a command printed.
 */
export interface AnsiCase {
  name: string
  input: string
  /** The text with every sequence and dropped control removed; carriage returns and backspaces still in. */
  stripped: string
  /** What a reader sees: each line after its carriage returns and backspaces (`collapseLine`). */
  shown: string
}

const ESC = '\u001b'
const BEL = '\u0007'

export const ANSI_CASES: readonly AnsiCase[] = [
  {
    name: 'colours removed, text kept',
    input: `${ESC}[1;31merror${ESC}[0m: ${ESC}[38;2;255;128;0mfailed${ESC}[m`,
    stripped: 'error: failed',
    shown: 'error: failed',
  },
  {
    name: 'cursor movement, erase and private modes removed',
    input: `${ESC}[2K${ESC}[1G${ESC}[?25lloading${ESC}[?25h${ESC}[3A${ESC}[10;20Hdone`,
    stripped: 'loadingdone',
    shown: 'loadingdone',
  },
  {
    name: 'window titles ended by BEL or ST removed',
    input: `${ESC}]0;my title${BEL}a${ESC}]2;other${ESC}\\b`,
    stripped: 'ab',
    shown: 'ab',
  },
  {
    name: "a hyperlink's text kept, its target removed",
    input: `see ${ESC}]8;;https://example.com${ESC}\\the docs${ESC}]8;;${ESC}\\ now`,
    stripped: 'see the docs now',
    shown: 'see the docs now',
  },
  {
    name: 'device control strings and the other control strings removed',
    input: `a${ESC}Pq#0;2;0;0;0#0~~${ESC}\\b${ESC}_app${ESC}\\c${ESC}^pm${ESC}\\d${ESC}Xsos${ESC}\\e`,
    stripped: 'abcde',
    shown: 'abcde',
  },
  {
    name: 'two-character escapes and charset selections removed',
    input: `${ESC}7${ESC}(Bplain${ESC}8${ESC}=${ESC}>${ESC}c${ESC}#8!`,
    stripped: 'plain!',
    shown: 'plain!',
  },
  {
    name: 'the 8-bit C1 forms of CSI and OSC',
    input: '\u009b31mred\u009b0m \u009d0;title\u009cok',
    stripped: 'red ok',
    shown: 'red ok',
  },
  {
    name: 'other controls dropped; tab, newline, carriage return and backspace kept until collapsed',
    input: 'a\u0000b\u0007c\u000bd\u000ce\u007ff\u0085g\th\ni\rj\bk',
    stripped: 'abcdefg\th\ni\rj\bk',
    shown: 'abcdefg\th\nk',
  },
  {
    name: 'an unterminated control string swallows only the rest of its line',
    input: `before ${ESC}]0;never terminated\nafter`,
    stripped: 'before \nafter',
    shown: 'before \nafter',
  },
  {
    name: 'a broken sequence is abandoned and what follows kept',
    input: `a${ESC}\nb${ESC}[12\nc${ESC}[12éd`,
    stripped: 'a\nb\ncéd',
    shown: 'a\nb\ncéd',
  },
  {
    name: 'a control string ends at CAN or at a new escape sequence',
    input: `${ESC}]0;title\u0018kept ${ESC}]0;title${ESC}[31mred`,
    stripped: 'kept red',
    shown: 'kept red',
  },
  {
    name: 'text that only looks like an escape is kept',
    input: '[31m plain brackets ]0; and \\ backslash',
    stripped: '[31m plain brackets ]0; and \\ backslash',
    shown: '[31m plain brackets ]0; and \\ backslash',
  },
  {
    name: 'markup is text',
    input: '<img src=x onerror=alert(1)>',
    stripped: '<img src=x onerror=alert(1)>',
    shown: '<img src=x onerror=alert(1)>',
  },
  {
    name: 'a sequence cut at the end is dropped',
    input: `abc${ESC}[3`,
    stripped: 'abc',
    shown: 'abc',
  },
  {
    name: 'a progress bar shows its last frame; a CR before a newline erases nothing',
    input: '10%\r50%\r100%\ndone\r\n',
    stripped: '10%\r50%\r100%\ndone\r\n',
    shown: '100%\ndone\n',
  },
  {
    name: 'a frame a trailing CR left unfinished still shows',
    input: `${ESC}[32mbuilding 3/10\r`,
    stripped: 'building 3/10\r',
    shown: 'building 3/10',
  },
  {
    name: 'a backspace erases the character before it (overstrike becomes plain text)',
    input: `_\bu_\bnN\bN${ESC}[1mA\bA${ESC}[0m a\u0000b\bc${ESC}`,
    stripped: '_\bu_\bnN\bNA\bA ab\bc',
    shown: 'unNA ac',
  },
  {
    name: 'a backspace erases a whole character outside the BMP, and nothing at the start of a frame',
    input: 'x😀\by\n\bz',
    stripped: 'x😀\by\n\bz',
    shown: 'xy\nz',
  },
  {
    name: 'the last frame counts even when its backspaces erase it all',
    input: 'old\rab\b\b',
    stripped: 'old\rab\b\b',
    shown: '',
  },
]
