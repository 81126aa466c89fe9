import type { ReactNode } from 'react'
import Markdown, { type Components } from 'react-markdown'

/**
 * The Markdown renderer itself (react-markdown and its parser, most of what the transcript would otherwise add
 * to the first bundle): loaded on its own by MarkdownText, after the first paint.
 *
 * Raw HTML in the text is dropped, never injected, and unsafe link schemes are removed by react-markdown's
 * default URL check. Links open outside the app (the Electron host hands new windows to the system browser);
 * images are not loaded, only linked, so an answer cannot make the app fetch anything.
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

/**
 * Markdown (react-markdown's synchronous renderer) is a plain function without hooks: called here, its output is
 * what MarkdownText's cache keeps.
 */
export function renderMarkdown(text: string): ReactNode {
  return Markdown({ children: text, components, skipHtml: true })
}
