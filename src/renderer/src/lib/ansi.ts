import { AnsiTokenizer, visibleTextRanges } from '../../../shared/ansi'

/**
 * Terminal output rendered inert: SGR colour and style sequences become styled spans, every other escape
 * sequence (cursor moves, OSC titles and hyperlinks, device queries) is dropped. The output is plain data for
 * React text nodes; nothing here ever produces markup, so a command printing `<script>` shows `<script>`.
 */

export interface AnsiStyle {
  /** A palette class ("red", "bright-blue") or a CSS colour built from numbers only ("rgb(1, 2, 3)"). */
  fg?: string
  bg?: string
  bold?: boolean
  dim?: boolean
  italic?: boolean
  underline?: boolean
  inverse?: boolean
}

export interface AnsiSegment {
  text: string
  style: AnsiStyle
}

const PALETTE = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'] as const

/** xterm's 256-colour cube and grey ramp above the 16 palette entries. */
function xterm256(n: number): string | undefined {
  if (!Number.isInteger(n) || n < 0 || n > 255) return undefined
  if (n < 8) return PALETTE[n]
  if (n < 16) return `bright-${PALETTE[n - 8]}`
  if (n >= 232) {
    const v = 8 + (n - 232) * 10
    return `rgb(${v}, ${v}, ${v})`
  }
  const i = n - 16
  const level = (x: number): number => (x === 0 ? 0 : 55 + x * 40)
  return `rgb(${level(Math.floor(i / 36))}, ${level(Math.floor(i / 6) % 6)}, ${level(i % 6)})`
}

function rgb(r: number | undefined, g: number | undefined, b: number | undefined): string | undefined {
  const ok = (x: number | undefined): x is number =>
    x !== undefined && Number.isInteger(x) && x >= 0 && x <= 255
  return ok(r) && ok(g) && ok(b) ? `rgb(${r}, ${g}, ${b})` : undefined
}

/** Applies one SGR parameter list (the part between `ESC[` and `m`) to a style. */
function applySgr(style: AnsiStyle, params: number[]): AnsiStyle {
  const next: AnsiStyle = { ...style }
  if (params.length === 0) return {}
  for (let i = 0; i < params.length; i++) {
    const p = params[i] as number
    if (p === 0) {
      for (const key of Object.keys(next)) delete next[key as keyof AnsiStyle]
    } else if (p === 1) next.bold = true
    else if (p === 2) next.dim = true
    else if (p === 3) next.italic = true
    else if (p === 4) next.underline = true
    else if (p === 7) next.inverse = true
    else if (p === 22) {
      delete next.bold
      delete next.dim
    } else if (p === 23) delete next.italic
    else if (p === 24) delete next.underline
    else if (p === 27) delete next.inverse
    else if (p >= 30 && p <= 37) next.fg = PALETTE[p - 30]
    else if (p === 39) delete next.fg
    else if (p >= 40 && p <= 47) next.bg = PALETTE[p - 40]
    else if (p === 49) delete next.bg
    else if (p >= 90 && p <= 97) next.fg = `bright-${PALETTE[p - 90]}`
    else if (p >= 100 && p <= 107) next.bg = `bright-${PALETTE[p - 100]}`
    else if (p === 38 || p === 48) {
      // 38;5;n (256 colours) or 38;2;r;g;b (true colour); an incomplete form consumes what it has.
      const mode = params[i + 1]
      let colour: string | undefined
      if (mode === 5) {
        colour = xterm256(params[i + 2] ?? -1)
        i += 2
      } else if (mode === 2) {
        colour = rgb(params[i + 2], params[i + 3], params[i + 4])
        i += 4
      } else {
        i += 1
      }
      if (colour !== undefined) {
        if (p === 38) next.fg = colour
        else next.bg = colour
      }
    }
  }
  return next
}

/**
 * The styled text of terminal output as a terminal leaves it for a reader: escape parsing and the collapsing of
 * carriage returns and backspaces are `src/shared/ansi.ts`'s (the model reads the same text), styles follow
 * the SGR sequences, and every other sequence is dropped.
 */
export function parseAnsi(input: string): AnsiSegment[] {
  const runs: AnsiSegment[] = []
  let style: AnsiStyle = {}
  new AnsiTokenizer({
    text: (text) => {
      runs.push({ text, style })
    },
    sgr: (params) => {
      style = applySgr(
        style,
        params === '' ? [] : params.split(/[;:]/).map((x) => (x === '' ? 0 : Number(x))),
      )
    },
  }).push(input)
  return visible(runs)
}

/** What `visibleTextRanges` keeps of the runs, neighbours of one style joined. */
function visible(runs: readonly AnsiSegment[]): AnsiSegment[] {
  const text = runs.map((r) => r.text).join('')
  const segments: AnsiSegment[] = []
  let run = 0
  let runStart = 0
  for (const [from, to] of visibleTextRanges(text)) {
    for (let at = from; at < to;) {
      while (runStart + (runs[run] as AnsiSegment).text.length <= at) {
        runStart += (runs[run] as AnsiSegment).text.length
        run++
      }
      const { style } = runs[run] as AnsiSegment
      const end = Math.min(to, runStart + (runs[run] as AnsiSegment).text.length)
      const prev = segments[segments.length - 1]
      if (prev && prev.style === style) prev.text += text.slice(at, end)
      else segments.push({ text: text.slice(at, end), style })
      at = end
    }
  }
  return segments
}

/** Plain text of terminal output (copying, searching, accessible names). */
export function stripAnsi(input: string): string {
  return parseAnsi(input)
    .map((s) => s.text)
    .join('')
}
