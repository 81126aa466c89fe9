import { useState, type FormEvent } from 'react'
import { useShallow } from 'zustand/react/shallow'
import { useAppStore } from '../../store/app-store'

/** The open folder, and the way to open another: the native dialog in the app, a path field in a browser. */
export function WorkspacePanel() {
  const { workspace, error, opening, transport, openWorkspace } = useAppStore(
    useShallow((s) => ({
      workspace: s.workspace,
      error: s.workspaceError,
      opening: s.opening,
      transport: s.info?.transport,
      openWorkspace: s.openWorkspace,
    })),
  )
  const [editing, setEditing] = useState(false)
  const [path, setPath] = useState('')

  const submit = (event: FormEvent): void => {
    event.preventDefault()
    const trimmed = path.trim()
    if (trimmed === '') return
    void openWorkspace(trimmed).then(() => {
      if (useAppStore.getState().workspaceError === null) setEditing(false)
    })
  }

  const openAnother = (): void => {
    if (transport === 'electron') void openWorkspace()
    else setEditing(true)
  }

  return (
    <section className="workspace" aria-label="Project folder">
      <div className="section-label">Project</div>
      {workspace ? (
        <>
          <div className="workspace-name" data-testid="workspace-name" title={workspace.path}>
            {workspace.name}
          </div>
          <div className="workspace-path" data-testid="workspace-path">
            {workspace.path}
          </div>
        </>
      ) : (
        <div className="workspace-empty">No folder open</div>
      )}
      {editing ? (
        <form className="workspace-form" onSubmit={submit}>
          <input
            className="text-input"
            data-testid="workspace-path-input"
            aria-label="Folder path"
            placeholder="/path/to/project"
            value={path}
            autoFocus
            onChange={(e) => setPath(e.target.value)}
          />
          <div className="row">
            <button className="button primary" type="submit" disabled={opening}>
              Open
            </button>
            <button className="button" type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <button className="button" data-testid="workspace-open" onClick={openAnother} disabled={opening}>
          {workspace ? 'Open another folder…' : 'Open a folder…'}
        </button>
      )}
      {error && (
        <div className="error-text" role="alert">
          {error}
        </div>
      )}
    </section>
  )
}
