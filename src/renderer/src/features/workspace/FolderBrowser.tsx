import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import type { FolderListing } from '../../../../shared/ipc'
import { Modal } from '../../components/Modal'
import { Button } from '../../components/Button'
import './folder-browser.css'

/**
 * Browser mode's way to open a folder without typing a path (a page cannot show the OS folder dialog): the
 * host lists folders (`folder:list`); the user starts from home or a recent folder, walks down by clicking
 * and back up by the breadcrumbs, and opens the folder shown. A path can still be typed.
 */
export function FolderBrowser({
  startPath,
  opening,
  error,
  onOpen,
  onClose,
}: {
  /** Where to start; the home folder when absent. */
  startPath?: string
  opening: boolean
  /** Why the last open failed, if it did. */
  error: string | null
  onOpen(path: string): void
  onClose(): void
}) {
  const [listing, setListing] = useState<FolderListing | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [typed, setTyped] = useState('')
  /** The open failure the user has browsed on from: it no longer applies to what is shown. */
  const [browsedPast, setBrowsedPast] = useState<string | null>(null)
  /** A folder that holds everything (the root, home) waiting for an explicit choice before it opens. */
  const [broad, setBroad] = useState<FolderListing | null>(null)
  const dialogRef = useRef<HTMLDivElement>(null)

  const show = useCallback((result: Awaited<ReturnType<typeof listFolder>>): boolean => {
    if (result.ok) {
      setListing(result.value)
      setProblem(null)
    } else setProblem(result.error)
    return result.ok
  }, [])
  const go = useCallback(
    async (path?: string) => {
      setBroad(null)
      setBrowsedPast(error)
      return show(await listFolder(path))
    },
    [show, error],
  )
  /** Opens a listed folder, unless it exposes everything: then the choice is asked for first. */
  const open = (folder: FolderListing): void => {
    setBrowsedPast(null)
    if (exposesEverything(folder)) setBroad(folder)
    else onOpen(folder.path)
  }

  useEffect(() => {
    let gone = false
    void (async () => {
      let result = await listFolder(startPath)
      // A start folder that is gone (moved since) falls back to home.
      if (!result.ok && startPath !== undefined) result = await listFolder(undefined)
      if (!gone) show(result)
    })()
    return () => {
      gone = true
    }
  }, [show, startPath])

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null
    dialogRef.current?.querySelector<HTMLElement>('button')?.focus()
    const onKey = (event: KeyboardEvent): void => {
      if (event.key === 'Escape') onClose()
    }
    window.addEventListener('keydown', onKey)
    return () => {
      window.removeEventListener('keydown', onKey)
      previous?.focus()
    }
  }, [onClose])

  // A typed path is looked up first (it may be `~`, or a link to home): the same rules as a folder clicked.
  const submitTyped = (event: FormEvent): void => {
    event.preventDefault()
    if (typed.trim() === '') return
    void listFolder(typed.trim()).then((result) => {
      if (!result.ok) return setProblem(result.error)
      setProblem(null)
      setListing(result.value)
      open(result.value)
    })
  }

  return (
    <Modal
      title="Open a project folder"
      titleId="folder-browser-title"
      testId="folder-browser"
      className="folder-browser"
      dialogRef={dialogRef}
      onClose={onClose}
    >
      <div className="folder-places" aria-label="Places">
        <Button look="small" testId="folder-home" onClick={() => void go()}>
          Home
        </Button>
        {listing?.recent.map((folder) => (
          <Button
            look="small"
            key={folder.path}
            testId="folder-recent"
            title={folder.path}
            onClick={() => void go(folder.path)}
          >
            {folder.name}
          </Button>
        ))}
      </div>

      {listing && (
        <>
          <nav className="folder-crumbs" aria-label="Folder path">
            {listing.crumbs.map((crumb, i) => (
              <span key={crumb.path}>
                {/* The root names itself with a separator ("/", "C:\\"): none more after it ("/ / home"). */}
                {i > 0 && !(i === 1 && /[\\/]$/.test(listing.crumbs[0]?.path ?? '')) && (
                  <span className="folder-crumb-sep">/</span>
                )}
                <button
                  type="button"
                  className="folder-crumb"
                  data-testid="folder-crumb"
                  aria-current={i === listing.crumbs.length - 1 ? 'location' : undefined}
                  onClick={() => void go(crumb.path)}
                >
                  {i === 0 ? crumb.path : crumb.name}
                </button>
              </span>
            ))}
          </nav>
          <ul
            className="folder-list"
            aria-label={`Folders in ${listing.name}`}
            data-testid="folder-current"
            data-path={listing.path}
          >
            {listing.parent !== null && (
              <li>
                <button type="button" className="folder-entry up" onClick={() => void go(listing.parent!)}>
                  ↑ Up to {listing.crumbs.at(-2)?.name ?? listing.parent}
                </button>
              </li>
            )}
            {listing.folders.map((folder) => (
              <li key={folder.path}>
                <button
                  type="button"
                  className="folder-entry"
                  data-testid="folder-entry"
                  onClick={() => void go(folder.path)}
                >
                  {folder.name}
                </button>
              </li>
            ))}
            {listing.folders.length === 0 && <li className="muted small folder-none">No folders inside.</li>}
            {listing.truncated && (
              <li className="muted small folder-none">More folders than can be shown: type a path below.</li>
            )}
          </ul>
        </>
      )}

      <form className="folder-typed" onSubmit={submitTyped}>
        <input
          className="text-input"
          data-testid="workspace-path-input"
          aria-label="Folder path"
          placeholder="Or type a path: ~/projects/app"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
        />
        <Button type="submit" disabled={opening}>
          Open
        </Button>
      </form>

      {(problem ?? (error !== browsedPast ? error : null)) && (
        <p className="error-text" role="alert" data-testid="folder-problem">
          {problem ?? error}
        </p>
      )}

      {broad && (
        <div className="folder-broad" role="alert" data-testid="folder-broad">
          <p>
            <strong>
              {broad.parent === null ? 'This is the whole computer' : 'This is your whole home folder'}.
            </strong>{' '}
            As a project it would let the agent search and read everything in it (your documents, keys, other
            projects and their secrets), so Lanes does not open it. Choose the project&rsquo;s own folder
            inside it.
          </p>
          <div className="row">
            <Button
              look="primary"
              testId="folder-broad-back"
              onClick={() => {
                setBroad(null)
                dialogRef.current?.querySelector<HTMLElement>('[data-testid=folder-entry]')?.focus()
              }}
            >
              Choose a folder inside
            </Button>
          </div>
        </div>
      )}

      <div className="modal-actions">
        {listing && exposesEverything(listing) && (
          <span className="muted small folder-pick-hint" data-testid="folder-pick-hint">
            Pick a project folder in the list
          </span>
        )}
        <button
          type="button"
          className={listing && exposesEverything(listing) ? 'button' : 'button primary'}
          data-testid="folder-open-current"
          disabled={!listing || opening}
          onClick={() => listing && open(listing)}
        >
          {listing ? `Open “${listing.name}”` : 'Open this folder'}
        </button>
      </div>
    </Modal>
  )
}

function listFolder(path: string | undefined) {
  return window.api.invoke('folder:list', path === undefined ? undefined : { path })
}

/**
 * The file system's root, the home folder or a folder above it: a "project" that would show the agent everything
 * (the app refuses to open one: folders.ts `tooBroadReason`); said here before it is even asked for.
 */
function exposesEverything(folder: FolderListing): boolean {
  return folder.parent === null || folder.path === folder.home || folder.home.startsWith(`${folder.path}/`)
}
