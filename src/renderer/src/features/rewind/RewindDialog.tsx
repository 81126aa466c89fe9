import { useCallback, useEffect, useRef, useState } from 'react'
import { trapTab } from '../../lib/focus-trap'
import type { RewindDone, RewindFileView, RewindPreview } from '../../../../shared/ipc'
import { shownTurn } from '../../lib/turn-numbers'
import { useAppStore } from '../../store/app-store'
import { Checkbox } from '../../components/Checkbox'
import { Modal } from '../../components/Modal'
import { DiffView } from '../../lazy-views'
import { useRewindStore, type RewindAsk } from './rewind-store'
import { turnTouches } from './turn-touches'
import { Button } from '../../components/Button'

/**
 * The rewind (or undo) shown before it happens: every file as a diff from now back to the point, a file changed
 * since by someone else with its three versions and a choice (kept by default), and, for a rewind, whether the
 * conversation goes back too. Nothing changes until "Rewind" is pressed.
 */
export function RewindDialog() {
  const ask = useRewindStore((s) => s.ask)
  const sessionId = useAppStore((s) => s.openSessionId)
  if (!ask || sessionId === null) return null
  return <Dialog key={`${sessionId}:${ask.mode}:${ask.callId}`} ask={ask} sessionId={sessionId} />
}

type Phase =
  | { kind: 'loading' }
  | { kind: 'ready'; preview: RewindPreview }
  | { kind: 'applying'; preview: RewindPreview }
  | { kind: 'done'; done: RewindDone }
  | { kind: 'refused'; reason: string; preview?: RewindPreview }

function Dialog({ ask, sessionId }: { ask: RewindAsk; sessionId: string }) {
  const closeDialog = useRewindStore((s) => s.close)
  const view = useAppStore((s) => s.view)
  const [phase, setPhase] = useState<Phase>({ kind: 'loading' })
  // Once it is done, closing shows where it went: its row in the transcript and its mark on the timeline.
  const doneId = phase.kind === 'done' ? phase.done.rewindId : undefined
  const close = useCallback(() => {
    closeDialog()
    if (doneId !== undefined) useAppStore.getState().selectRewind(doneId, 'link')
  }, [closeDialog, doneId])
  const [conversation, setConversation] = useState(ask.mode === 'rewind')
  const [rewindAnyway, setRewindAnyway] = useState<Record<string, boolean>>({})
  const target = { sessionId, mode: ask.mode, callId: ask.callId }

  useEffect(() => {
    let stale = false
    void window.api
      .invoke('rewind:plan', { ...target, ...(ask.mode === 'rewind' ? { conversation: true } : {}) })
      .then((result) => {
        if (stale) return
        setPhase(
          result.ok ? { kind: 'ready', preview: result.value } : { kind: 'refused', reason: result.error },
        )
      })
    return () => {
      stale = true
    }
    // The dialog is keyed by its target: it plans once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [])

  // Keyboard users land in the dialog (on its close button: nothing is changed by a stray Enter), stay in it,
  // and go back where they were when it closes.
  const dialogRef = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null
    dialogRef.current?.querySelector<HTMLElement>('button')?.focus()
    return () => {
      if (previous?.isConnected) return previous.focus()
      // The Undo beside a bar shows only while the bar has focus: back to the bar, which brings it back.
      document
        .querySelector<HTMLElement>(`.tool-bar[data-call-id="${CSS.escape(ask.callId)}"]`)
        ?.focus({ preventScroll: true })
    }
    // Once, when the dialog opens.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [])
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.key === 'Escape') close()
      else if (dialogRef.current) trapTab(e, dialogRef.current)
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [close])

  const apply = async (preview: RewindPreview): Promise<void> => {
    setPhase({ kind: 'applying', preview })
    const result = await window.api.invoke('rewind:apply', {
      ...target,
      ...(ask.mode === 'rewind' && conversation ? { conversation: true } : {}),
      rewindConflicts: Object.keys(rewindAnyway).filter((path) => rewindAnyway[path]),
    })
    if (!result.ok) return setPhase({ kind: 'refused', reason: result.error, preview })
    setPhase({ kind: 'done', done: result.value })
    const app = useAppStore.getState()
    await app.reloadSession()
    void app.refreshSessions()
  }

  const title = ask.mode === 'undo' ? `Undo ${ask.label}` : `Rewind to before ${ask.label}`
  const preview = phase.kind === 'ready' || phase.kind === 'applying' ? phase.preview : undefined
  return (
    <Modal
      title={title}
      titleId="rewind-title"
      testId="rewind-dialog"
      className="rewind-dialog"
      onClose={close}
      dialogRef={dialogRef}
    >
      {phase.kind === 'loading' && <p className="muted">Working out what would change…</p>}
      {phase.kind === 'refused' && (
        <p className="error-text" role="alert" data-testid="rewind-error">
          {phase.reason}
        </p>
      )}
      {phase.kind === 'done' && <Done done={phase.done} />}
      {preview && (
        <OtherTouches
          touches={turnTouches(
            view,
            preview.callIds,
            preview.files.map((f) => f.relPath),
          )}
        />
      )}
      {preview && (
        <>
          <p className="muted small">
            {goingBack(preview.files, rewindAnyway)} What approved commands changed is included where it was
            captured; a command run outside the sandbox, or where changes could only be compared, is not
            undone.
          </p>
          <ul className="rewind-files">
            {preview.files.map((file) => (
              <FileItem
                key={file.relPath}
                file={file}
                anyway={rewindAnyway[file.relPath] === true}
                setAnyway={(v) => setRewindAnyway((prev) => ({ ...prev, [file.relPath]: v }))}
              />
            ))}
          </ul>
          {ask.mode === 'rewind' && preview.turn !== undefined && (
            <Checkbox testId="rewind-conversation" checked={conversation} onChange={setConversation}>
              Also take the conversation back: continuing starts again from turn{' '}
              {shownTurn(view?.turns, preview.turn)}
            </Checkbox>
          )}
        </>
      )}
      <div className="modal-actions">
        <Button onClick={close} testId="rewind-cancel">
          {phase.kind === 'done' ? 'Close' : 'Cancel'}
        </Button>
        {preview && (
          <Button
            look="primary"
            testId="rewind-apply"
            disabled={phase.kind === 'applying'}
            onClick={() => void apply(preview)}
          >
            {ask.mode === 'undo' ? 'Undo' : 'Rewind'}
          </Button>
        )}
      </div>
    </Modal>
  )
}

function FileItem({
  file,
  anyway,
  setAnyway,
}: {
  file: RewindFileView
  anyway: boolean
  setAnyway(value: boolean): void
}) {
  // A file changed since stays as it is unless the user chooses otherwise: its badge says what will happen.
  const kept = file.conflict && (file.blocked !== undefined || !anyway)
  const verb = kept
    ? 'kept as it is now'
    : file.action === 'remove'
      ? 'removed'
      : file.action === 'create'
        ? 'created again'
        : 'restored'
  return (
    <li
      className={`rewind-file ${file.conflict ? 'conflict' : ''}`}
      data-testid="rewind-file"
      data-path={file.relPath}
    >
      <div className="rewind-file-head">
        <span className="mono">{file.relPath}</span> <span className="badge">{verb}</span>
      </div>
      {file.conflict ? (
        <div className="rewind-conflict" data-testid="rewind-conflict">
          <p className="small">
            {file.blocked
              ? `${file.blocked}: it is left as it is.`
              : 'This file was changed after Lanes last wrote it (by you or a command). It is kept as it is unless you choose otherwise.'}
          </p>
          <Versions file={file} />
          {!file.blocked && (
            <div className="row" role="radiogroup" aria-label={`What to do with ${file.relPath}`}>
              <label className="checkbox">
                <input
                  type="radio"
                  name={`conflict-${file.relPath}`}
                  checked={!anyway}
                  onChange={() => setAnyway(false)}
                  data-testid="conflict-keep"
                />
                Keep it as it is now
              </label>
              <label className="checkbox">
                <input
                  type="radio"
                  name={`conflict-${file.relPath}`}
                  checked={anyway}
                  onChange={() => setAnyway(true)}
                  data-testid="conflict-rewind"
                />
                Put back the version from that point
              </label>
            </div>
          )}
        </div>
      ) : null}
      {kept ? (
        // Nothing happens to it: no diff that would show the user's own lines as going away.
        <p className="small muted" data-testid="rewind-file-kept">
          Nothing changes in this file.
        </p>
      ) : (
        <DiffView preview={file.diff} />
      )}
    </li>
  )
}

/** How many files the rewind will change as the choices stand (a file changed since counts only if chosen). */
function goingBack(files: readonly RewindFileView[], anyway: Record<string, boolean>): string {
  if (files.length === 0) return 'No file needs to change.'
  const going = files.filter((f) => !f.conflict || (!f.blocked && anyway[f.relPath] === true)).length
  const count =
    going === files.length
      ? `${going} ${going === 1 ? 'file goes' : 'files go'}`
      : `${going} of ${files.length} files ${going === 1 ? 'goes' : 'go'}`
  return `${count} back as shown (red: what is there now; green: what it was).`
}

function Versions({ file }: { file: RewindFileView }) {
  const show = (text: string | null | undefined): string =>
    text === null ? '(no such file)' : text === undefined ? '(not available)' : text
  return (
    <div className="rewind-versions" data-testid="rewind-versions">
      <details>
        <summary>At that point</summary>
        <pre className="output">{show(file.versions?.atPoint)}</pre>
      </details>
      <details>
        <summary>As Lanes left it</summary>
        <pre className="output">{show(file.versions?.lanesLeft)}</pre>
      </details>
      <details open>
        <summary>As it is now</summary>
        <pre className="output">{show(file.versions?.now)}</pre>
      </details>
    </div>
  )
}

/** The other files the turns touched and the commands that ran in them: left as they are. */
function OtherTouches({ touches }: { touches: ReturnType<typeof turnTouches> }) {
  if (touches.length === 0) return null
  const files = touches.filter((t) => t.path !== undefined)
  const commands = touches.filter((t) => t.path === undefined)
  return (
    <div className="rewind-touches small" data-testid="rewind-touches">
      <p>
        <strong>Check these afterwards:</strong> the same turn also touched them, and they stay as they are
        (they may refer to what goes back).
      </p>
      <ul>
        {files.map((t) => (
          <li key={t.callId} data-testid="rewind-touch" data-path={t.path}>
            <span className="mono">{t.path}</span> <span className="muted">({t.title})</span>
          </li>
        ))}
        {commands.map((t) => (
          <li key={t.callId} data-testid="rewind-touch">
            {t.title} <span className="muted">(a command: what it changed is not tracked)</span>
          </li>
        ))}
      </ul>
    </div>
  )
}

const DONE_VERB = { restore: 'put back as it was', remove: 'removed', create: 'created again' } as const

function Done({ done }: { done: RewindDone }) {
  // What it did, file by file: the files it changed, then the ones it left as they are and why.
  const changed = done.changed.length
  const kept = done.skipped.length
  const summary =
    changed === 0
      ? 'No file was changed.'
      : `${changed} ${changed === 1 ? 'file was' : 'files were'} put back.`
  return (
    <div role="status" data-testid="rewind-done">
      <p>
        {summary}
        {kept > 0 &&
          ` ${kept} ${kept === 1 ? 'file was' : 'files were'} left as ${kept === 1 ? 'it is' : 'they are'}.`}
      </p>
      {(changed > 0 || kept > 0) && (
        <ul className="small">
          {done.changed.map((c) => (
            <li key={c.relPath} data-testid="rewind-changed" data-path={c.relPath}>
              <span className="mono">{c.relPath}</span>: {DONE_VERB[c.action]}
            </li>
          ))}
          {done.skipped.map((s) => (
            <li key={s.relPath} data-testid="rewind-skipped" data-path={s.relPath}>
              <span className="mono">{s.relPath}</span>: {s.reason}
              {/left as it is/i.test(s.reason) ? '' : '; left as it is'}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}
