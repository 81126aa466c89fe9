import { useShallow } from 'zustand/react/shallow'
import type { RewindState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { formatClock } from '../../lib/format'
import { shownTurn } from '../../lib/turn-numbers'
import { useAppStore } from '../../store/app-store'
import './rewind-history.css'
import {
  changeText,
  findRewind,
  keptReason,
  rewindHeadline,
  rewindKind,
  rewindReference,
  rewindStatusText,
  undoneCalls,
} from './rewind-summary'
import { RewindToHereButton } from './UndoButton'
import { Button } from '../../components/Button'

/** Files listed in full in a rewind's row; more go behind "all N files". */
export const FILES_SHOWN = 8

/**
 * An undo or rewind in the transcript, at the moment it happened: what it was, each file it changed (or would
 * have) and each it left alone with the reason, how it ended, and links to the calls it took back.
 */
export function RewindRow({ rewind, selected }: { rewind: RewindState; selected: boolean }) {
  const { view, selectRewind, selectCall } = useAppStore(
    useShallow((s) => ({ view: s.transcriptView, selectRewind: s.selectRewind, selectCall: s.selectCall })),
  )
  if (!view) return null
  const calls = undoneCalls(rewind, view)
  const headline = rewindHeadline(rewind, view)
  const shown = rewind.changes.slice(0, FILES_SHOWN)
  const more = rewind.changes.slice(FILES_SHOWN)
  const files = (list: typeof shown) =>
    list.map((change) => (
      <li key={change.path} data-testid="rewind-row-file" data-path={change.relPath}>
        <span className="mono">{change.relPath}</span> <span className="muted">{changeText(change)}</span>
      </li>
    ))
  return (
    <section
      className={`rewind-row rewind-${rewind.status} ${selected ? 'selected' : ''}`}
      data-testid="rewind-row"
      data-rewind-id={rewind.rewindId}
      data-mode={rewind.mode}
      data-status={rewind.status}
      aria-label={`${rewindKind(rewind)} at ${formatClock(rewind.startedAt)}`}
    >
      <header className="rewind-row-head">
        <button
          type="button"
          className="rewind-row-title"
          title="Show it on the timeline"
          onClick={() => selectRewind(rewind.rewindId, 'transcript')}
        >
          <span className="rewind-icon" aria-hidden="true">
            {rewind.status === 'rolled-back' ? '✕' : '↶'}
          </span>
          <span data-testid="rewind-row-headline">{headline}</span>
        </button>
        <span className="muted small rewind-row-time">{formatClock(rewind.startedAt, true)}</span>
      </header>
      {(rewind.status !== 'done' || rewind.recovered) && (
        <p className="rewind-row-status small" data-testid="rewind-row-status">
          {rewindStatusText(rewind)}
        </p>
      )}
      {rewind.changes.length === 0 && rewind.status === 'done' && (
        <p className="muted small">No file needed to change.</p>
      )}
      {rewind.changes.length > 0 && (
        <>
          {rewind.status === 'rolled-back' && <p className="rewind-row-lead small">It would have changed:</p>}
          <ul className="rewind-row-files small">{files(shown)}</ul>
          {more.length > 0 && (
            <details className="small">
              <summary>
                {more.length} more {more.length === 1 ? 'file' : 'files'}
              </summary>
              <ul className="rewind-row-files">{files(more)}</ul>
            </details>
          )}
        </>
      )}
      {rewind.skipped.length > 0 && (
        <ul className="rewind-row-files rewind-row-skips small">
          {rewind.skipped.map((skip) => (
            <li key={skip.relPath} data-testid="rewind-row-skipped" data-path={skip.relPath}>
              <span className="mono">{skip.relPath}</span> left as it is: {skip.reason}
            </li>
          ))}
        </ul>
      )}
      {calls.length > 0 && (
        <p className="rewind-row-calls small">
          {rewind.status === 'done'
            ? 'Took back'
            : rewind.status === 'rolled-back'
              ? 'Would have taken back'
              : 'Takes back'}{' '}
          {calls.length === 1 ? 'the change of' : `the changes of ${calls.length} calls:`}{' '}
          {calls.map((c, i) => (
            <span key={c.callId}>
              {i > 0 && ', '}
              <Button
                look="link"
                testId="rewind-row-call"
                data-call-id={c.callId}
                onClick={() => selectCall(c.callId, 'link')}
              >
                {c.title}
              </Button>
            </span>
          ))}
        </p>
      )}
    </section>
  )
}

/**
 * A turn's first row in the transcript: its number, "Rewind to here", or, when a rewind took the conversation
 * back to before it, that Claude no longer sees it (its rows below are dimmed).
 */
export function TurnHeader({
  turn,
  firstCallId,
  rewoundBy,
}: {
  turn: number
  firstCallId?: string
  rewoundBy?: string
}) {
  const { rewind, selectRewind, shown } = useAppStore(
    useShallow((s) => ({
      shown: shownTurn(s.transcriptView?.turns, turn),
      rewind: findRewind(s.transcriptView, rewoundBy),
      selectRewind: s.selectRewind,
    })),
  )
  return (
    <div
      className={`turn-header ${rewoundBy ? 'rewound' : ''}`}
      data-testid="turn-header"
      data-turn={turn}
      data-rewound={rewoundBy}
    >
      <span className="turn-header-label">Turn {shown}</span>
      {rewoundBy !== undefined ? (
        <span className="turn-rewound-note small" data-testid="turn-rewound-note">
          Claude no longer sees this turn (rewound{rewind ? ` at ${formatClock(rewind.startedAt)}` : ''}).{' '}
          {rewind && (
            <Button look="link" onClick={() => selectRewind(rewind.rewindId, 'link')}>
              Show the rewind
            </Button>
          )}
        </span>
      ) : (
        firstCallId !== undefined && <RewindToHereButton callId={firstCallId} turn={turn} shown={shown} />
      )}
    </div>
  )
}

/** Why the undo or rewind that names this call left its file as it was, if it did (see keptReason). */
export function useKeptReason(call: ToolCallState): string | undefined {
  return useAppStore((s) =>
    call.rewoundBy === undefined ? undefined : keptReason(findRewind(s.transcriptView, call.rewoundBy), call),
  )
}

/**
 * The note on a change an undo or rewind took back, with a link to it; or, where it left the file as it was (changed
 * since, and kept), a note that says so.
 */
export function RewoundNote({ rewindId, kept }: { rewindId: string; kept?: string }) {
  const { rewind, selectRewind } = useAppStore(
    useShallow((s) => ({ rewind: findRewind(s.transcriptView, rewindId), selectRewind: s.selectRewind })),
  )
  const by = rewind ? rewindReference(rewind) : 'a rewind'
  return (
    <p className="decision-note rewound" data-testid="rewound-note">
      {kept === undefined
        ? `Taken back by ${by}: this change is no longer in the files.`
        : `Not taken back by ${by}: the file ${kept}.`}{' '}
      {rewind && (
        <Button look="link" testId="rewound-note-link" onClick={() => selectRewind(rewindId, 'link')}>
          Show the {rewind.mode === 'undo' ? 'undo' : 'rewind'}
        </Button>
      )}
    </p>
  )
}
