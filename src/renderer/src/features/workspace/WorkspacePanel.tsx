import { useCallback, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import { useAppStore } from '../../store/app-store'
import { FolderBrowser } from './FolderBrowser'
import { Button } from '../../components/Button'

/**
 * The open folder, and the way to open another: the native dialog in the app, the folder browser in a
 * browser (which opens by itself when browser mode starts with no folder).
 */
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
  // Null until the user opens or closes it: browser mode then shows it while no folder is open (`transport`
  // is known once the app has loaded, together with the open folder).
  const [browsingChoice, setBrowsing] = useState<boolean | null>(null)
  const browsing = browsingChoice ?? (transport === 'web' && workspace === null)

  const open = (path: string): void => {
    void openWorkspace(path).then(() => {
      if (useAppStore.getState().workspaceError === null) setBrowsing(false)
    })
  }
  const close = useCallback(() => setBrowsing(false), [])

  const openAnother = (): void => {
    if (transport === 'electron') void openWorkspace()
    else setBrowsing(true)
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
      <Button testId="workspace-open" onClick={openAnother} disabled={opening}>
        {workspace ? 'Open another folder…' : 'Open a folder…'}
      </Button>
      {browsing && (
        <FolderBrowser
          // The folder around the open one: its siblings are the likely next projects.
          startPath={workspace ? parentOf(workspace.path) : undefined}
          opening={opening}
          error={error}
          onOpen={open}
          onClose={close}
        />
      )}
      {error && !browsing && (
        <div className="error-text" role="alert">
          {error}
        </div>
      )}
    </section>
  )
}

function parentOf(path: string): string {
  const cut = path.replace(/[\\/]+$/, '').search(/[\\/][^\\/]*$/)
  return cut <= 0 ? path.slice(0, 1) || path : path.slice(0, cut)
}
