import { useVirtualizer } from '@tanstack/react-virtual'
import { useRef } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { SessionSummary } from '../../../../shared/events'
import type { SessionStatus } from '../../../../shared/reducer'
import { formatAgo } from '../../lib/format'
import { useAppStore } from '../../store/app-store'
import { rewoundToTurn } from '../rewind/rewind-summary'
import { Button } from '../../components/Button'

/** A row's height before it is measured (one line of title, one of status): rows are all alike. */
const ROW_ESTIMATE = 52
const ROW_GAP = 2

/**
 * The open folder's sessions, newest first, each with its status. Only the rows in view (and a few around) are
 * mounted, between two spacers that stand for the rest: a folder of a thousand sessions paints as fast as one of
 * twenty.
 */
export function SessionList() {
  const { sessions, error, openSessionId, openSession, hasWorkspace, openStatus, openRewound } = useAppStore(
    useShallow((s) => ({
      // A run that is not live any more but never ended was interrupted: the list knows that better.
      openStatus: s.live || s.timeline?.head.status !== 'running' ? s.timeline?.head.status : undefined,
      openRewound: s.timeline ? rewoundToTurn(s.timeline.head) !== undefined : false,
      sessions: s.sessions,
      error: s.sessionsError,
      openSessionId: s.openSessionId,
      openSession: s.openSession,
      hasWorkspace: s.workspace !== null,
    })),
  )
  const listRef = useRef<HTMLUListElement>(null)
  // The virtualizer's functions are read fresh every render (nothing memoizes them), which is what the lint
  // rule warns about.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: sessions.length,
    getScrollElement: () => listRef.current,
    estimateSize: () => ROW_ESTIMATE,
    getItemKey: (i) => sessions[i]?.sessionId ?? i,
    gap: ROW_GAP,
    overscan: 8,
  })
  const rows = virtualizer.getVirtualItems()
  // The list's own gap stands between a spacer and its neighbour too.
  const before = Math.max(0, (rows[0]?.start ?? 0) - ROW_GAP)
  const after = Math.max(0, virtualizer.getTotalSize() - (rows[rows.length - 1]?.end ?? 0) - ROW_GAP)
  return (
    <section className="sessions" aria-label="Sessions">
      <div className="sessions-head">
        <div className="section-label">Sessions</div>
        <Button
          look="small"
          testId="session-new"
          onClick={() => void openSession(null)}
          disabled={!hasWorkspace}
          title="Start a new session with a new task"
        >
          + New
        </Button>
      </div>
      {error && (
        <div className="error-text" role="alert">
          {error}
        </div>
      )}
      {sessions.length === 0 ? (
        <div className="muted small">
          {hasWorkspace ? 'No sessions yet.' : 'Open a folder to see its sessions.'}
        </div>
      ) : (
        <ul className="session-list" data-testid="session-list" data-count={sessions.length} ref={listRef}>
          {before > 0 && <li className="session-spacer" aria-hidden="true" style={{ height: before }} />}
          {rows.map((row) => {
            const listed = sessions[row.index] as SessionSummary
            // The open session's own events are fresher than the list (which main refreshes on its own schedule).
            const s =
              listed.sessionId === openSessionId ? withLiveStatus(listed, openStatus, openRewound) : listed
            return (
              <li key={s.sessionId} data-index={row.index} ref={virtualizer.measureElement}>
                <button
                  type="button"
                  className={`session-item ${s.sessionId === openSessionId ? 'active' : ''}`}
                  data-testid="session-item"
                  data-status={s.status}
                  data-session-id={s.sessionId}
                  aria-current={s.sessionId === openSessionId ? 'true' : undefined}
                  onClick={() => void openSession(s.sessionId)}
                >
                  <span className="session-title">{s.title || s.task || 'Untitled session'}</span>
                  <span className="session-meta">
                    <StatusBadge summary={s} />
                    <span className="muted">{formatAgo(s.updatedAt)}</span>
                  </span>
                </button>
              </li>
            )
          })}
          {after > 0 && <li className="session-spacer" aria-hidden="true" style={{ height: after }} />}
        </ul>
      )}
    </section>
  )
}

function withLiveStatus(
  summary: SessionSummary,
  status: SessionStatus | undefined,
  rewound: boolean,
): SessionSummary {
  switch (status) {
    case undefined:
    case 'idle':
      return summary
    case 'running':
    case 'paused':
    case 'finished':
    case 'failed':
      return { ...summary, status, stopped: false, rewound: status === 'paused' && rewound }
    case 'stopped':
      return { ...summary, status: 'paused', stopped: true }
  }
}

function StatusBadge({ summary }: { summary: SessionSummary }) {
  const label =
    summary.status === 'paused'
      ? summary.stopped
        ? 'stopped'
        : summary.rewound
          ? 'rewound'
          : summary.interrupted
            ? 'interrupted'
            : 'needs review'
      : summary.status
  return (
    <span className={`badge status-badge session-${summary.status}`} data-testid="session-status">
      {summary.status === 'running' && <span className="pulse" aria-hidden="true" />}
      {label}
    </span>
  )
}
