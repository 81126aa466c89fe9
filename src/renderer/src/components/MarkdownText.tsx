import { memo, useSyncExternalStore, type ReactNode } from 'react'

/**
 * The model's answers as Markdown (lists, code, emphasis, links), rendered to React elements by
 * markdown-render.tsx. That renderer is a chunk of its own, loaded right after the first paint
 * (`loadMarkdown`, called by main.tsx), so it never delays opening a session: text that arrives before it is
 * shown as plain paragraphs for that moment, then rendered.
 *
 * Parsing is the costly part, and a virtualized transcript mounts the same rows again and again while it
 * scrolls or a replay moves: the rendered elements are kept per text (they are immutable), and text with
 * nothing Markdown would change skips the parser.
 */

type Render = (text: string) => ReactNode
let renderMarkdown: Render | undefined
let loading: Promise<void> | undefined
const listeners = new Set<() => void>()

/** Starts loading the Markdown renderer (once); resolves when it is there. */
export function loadMarkdown(): Promise<void> {
  loading ??= import('./markdown-render').then((m) => {
    renderMarkdown = m.renderMarkdown
    for (const listener of listeners) listener()
  })
  return loading
}

const subscribe = (listener: () => void): (() => void) => {
  listeners.add(listener)
  return () => listeners.delete(listener)
}
const isLoaded = (): boolean => renderMarkdown !== undefined

/** Characters and line starts that mean something in Markdown; text without any renders as plain paragraphs. */
const MARKUP = /[*_`[\]<>#|~\\!]|^\s*([-+]|\d+[.)])\s|^\s{4}|https?:\/\//m

const CACHE_SIZE = 500
const cache = new Map<string, ReactNode>()

const paragraphs = (text: string): ReactNode =>
  text
    .split(/\n{2,}/)
    .filter((p) => p.trim() !== '')
    .map((p, i) => <p key={i}>{p}</p>)

function render(text: string): ReactNode {
  const hit = cache.get(text)
  if (hit !== undefined) return hit
  const markup = MARKUP.test(text)
  if (markup && renderMarkdown === undefined) {
    // Not kept: rendered again once the renderer is there.
    void loadMarkdown()
    return paragraphs(text)
  }
  const node = markup && renderMarkdown ? renderMarkdown(text) : paragraphs(text)
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string)
  cache.set(text, node)
  return node
}

export const MarkdownText = memo(function MarkdownText({ text }: { text: string }) {
  // Read so the row renders again when the renderer arrives.
  useSyncExternalStore(subscribe, isLoaded)
  return <div className="markdown">{render(text)}</div>
})
