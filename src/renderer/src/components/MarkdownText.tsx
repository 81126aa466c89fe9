import { memo, type ReactNode } from 'react'
import Markdown, { type Components } from 'react-markdown'

/**
 * The model's answers as Markdown (lists, code, emphasis, links), rendered by react-markdown to React elements:
 * raw HTML in the text is dropped, never injected, and unsafe link schemes are removed by its default URL
 * check. Links open outside the app (the Electron host hands new windows to the system browser); images are
 * not loaded, only linked, so an answer cannot make the app fetch anything.
 *
 * Parsing is the costly part, and a virtualized transcript mounts the same rows again and again while it
 * scrolls or a replay moves: the rendered elements are kept per text (they are immutable), and text with
 * nothing Markdown would change skips the parser.
 */

const components: Components = {
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
  img: ({ src, alt }) =>
    typeof src === 'string' ? (
      <a href={src} target="_blank" rel="noopener noreferrer">
        {alt || src}
      </a>
    ) : null,
}

/** Characters and line starts that mean something in Markdown; text without any renders as plain paragraphs. */
const MARKUP = /[*_`[\]<>#|~\\!]|^\s*([-+]|\d+[.)])\s|^\s{4}|https?:\/\//m

const CACHE_SIZE = 500
const cache = new Map<string, ReactNode>()

function render(text: string): ReactNode {
  const hit = cache.get(text)
  if (hit !== undefined) return hit
  // Markdown (react-markdown's synchronous renderer) is a plain function without hooks: called here, its
  // output (parsed once) is what the cache keeps.
  const node = MARKUP.test(text)
    ? Markdown({ children: text, components, skipHtml: true })
    : text
        .split(/\n{2,}/)
        .filter((p) => p.trim() !== '')
        .map((p, i) => <p key={i}>{p}</p>)
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string)
  cache.set(text, node)
  return node
}

export const MarkdownText = memo(function MarkdownText({ text }: { text: string }) {
  return <div className="markdown">{render(text)}</div>
})
