import { lazy, Suspense, type ComponentProps } from 'react'
import { loadMarkdown } from './components/MarkdownText'

/**
 * What the first paint does not need, in chunks of their own: the review panel, the rewind dialog and the diff
 * view (with the diff rows and the syntax highlighter), and the Markdown renderer. Opening a session, the
 * timeline and the transcript's plain text come first; `preloadViews` fetches the rest right after, so a review
 * or a diff opened a moment later finds it there.
 */

const approvalPanel = () => import('./features/approval/ApprovalPanel')
const rewindDialog = () => import('./features/rewind/RewindDialog')
const diffView = () => import('./features/approval/DiffView')

const ApprovalPanelChunk = lazy(() => approvalPanel().then((m) => ({ default: m.ApprovalPanel })))
const RewindDialogChunk = lazy(() => rewindDialog().then((m) => ({ default: m.RewindDialog })))
const DiffViewChunk = lazy(() => diffView().then((m) => ({ default: m.DiffView })))

export function ApprovalPanel() {
  return (
    <Suspense fallback={null}>
      <ApprovalPanelChunk />
    </Suspense>
  )
}

export function RewindDialog() {
  return (
    <Suspense fallback={null}>
      <RewindDialogChunk />
    </Suspense>
  )
}

export function DiffView(props: ComponentProps<typeof DiffViewChunk>) {
  return (
    <Suspense
      fallback={
        <div className="diff muted small" data-testid="diff-loading">
          Loading the diff…
        </div>
      }
    >
      <DiffViewChunk {...props} />
    </Suspense>
  )
}

/**
 * Fetches every lazy chunk once the page is idle after its first frames (within a second at most), so their
 * parsing never competes with the start-up or with opening a session.
 */
export function preloadViews(): void {
  const load = (): void => {
    void loadMarkdown()
    void approvalPanel()
    void rewindDialog()
    void diffView()
  }
  requestAnimationFrame(() => requestIdleCallback(load, { timeout: 1000 }))
}
