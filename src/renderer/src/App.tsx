import { useEffect } from 'react'
import { WorkspacePanel } from './features/workspace/WorkspacePanel'
import { useAppStore } from './store/app-store'

export function App() {
  const load = useAppStore((s) => s.load)
  const setWorkspace = useAppStore((s) => s.setWorkspace)
  const workspace = useAppStore((s) => s.workspace)
  const loadError = useAppStore((s) => s.loadError)

  useEffect(() => {
    void load()
    return window.api.on('workspace:changed', setWorkspace)
  }, [load, setWorkspace])

  return (
    <div className="app">
      <aside className="sidebar">
        <header className="brand">
          <span className="brand-mark" aria-hidden="true">
            <span />
            <span />
            <span />
          </span>
          Lanes
        </header>
        <WorkspacePanel />
        <section className="sessions" aria-label="Sessions">
          <div className="section-label">Sessions</div>
          <div className="muted">No sessions yet.</div>
        </section>
      </aside>
      <main className="main">
        {loadError ? (
          <div className="empty-state" role="alert">
            <h1>Lanes could not start</h1>
            <p>{loadError}</p>
          </div>
        ) : (
          <div className="empty-state">
            <h1>{workspace ? `Ready to work in ${workspace.name}` : 'Open a project folder to begin'}</h1>
            <p>
              Give the agent a task and watch every step on a timeline: reads and searches run side by side,
              writes and commands wait for your review.
            </p>
          </div>
        )}
      </main>
    </div>
  )
}
