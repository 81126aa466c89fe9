import { useMemo, type CSSProperties } from 'react'
import { parseAnsi, type AnsiStyle } from '../lib/ansi'

/** Terminal output with its colours, as React text nodes (never markup). */
export function AnsiText({ text }: { text: string }) {
  const segments = useMemo(() => parseAnsi(text), [text])
  return (
    <>
      {segments.map((segment, i) =>
        isPlain(segment.style) ? (
          segment.text
        ) : (
          <span key={i} className={classes(segment.style)} style={inline(segment.style)}>
            {segment.text}
          </span>
        ),
      )}
    </>
  )
}

function isPlain(style: AnsiStyle): boolean {
  return Object.keys(style).length === 0
}

const isPalette = (colour: string | undefined): boolean => colour !== undefined && !colour.startsWith('rgb(')

function classes(style: AnsiStyle): string {
  const out: string[] = []
  const fg = style.inverse ? style.bg : style.fg
  const bg = style.inverse ? style.fg : style.bg
  if (isPalette(fg)) out.push(`ansi-fg-${fg}`)
  if (isPalette(bg)) out.push(`ansi-bg-${bg}`)
  if (style.inverse && !bg) out.push('ansi-inverse')
  if (style.bold) out.push('ansi-bold')
  if (style.dim) out.push('ansi-dim')
  if (style.italic) out.push('ansi-italic')
  if (style.underline) out.push('ansi-underline')
  return out.join(' ')
}

function inline(style: AnsiStyle): CSSProperties | undefined {
  const fg = style.inverse ? style.bg : style.fg
  const bg = style.inverse ? style.fg : style.bg
  const css: CSSProperties = {}
  if (fg !== undefined && !isPalette(fg)) css.color = fg
  if (bg !== undefined && !isPalette(bg)) css.backgroundColor = bg
  return css.color !== undefined || css.backgroundColor !== undefined ? css : undefined
}
