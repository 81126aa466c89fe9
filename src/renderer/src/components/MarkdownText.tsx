import { memo } from 'react'
import Markdown, { type Components } from 'react-markdown'

/**
 * The model's answers as Markdown (lists, code, emphasis, links), rendered by react-markdown to React elements:
 * raw HTML in the text is dropped, never injected, and unsafe link schemes are removed by its default URL
 * check. Links open outside the app (the Electron host hands new windows to the system browser); images are
 * not loaded, only linked, so an answer cannot make the app fetch anything.
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

export const MarkdownText = memo(function MarkdownText({ text }: { text: string }) {
  return (
    <div className="markdown">
      <Markdown components={components} skipHtml>
        {text}
      </Markdown>
    </div>
  )
})
