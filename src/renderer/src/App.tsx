import { ContextMeter } from './features/context/ContextMeter'
import { SessionSettings } from './features/session-settings/SessionSettings'
import { useEffect, useRef, useState, type PointerEvent } from 'react'
import { useShallow } from 'zustand/react/shallow'
import { Composer } from './features/composer/Composer'
import { ReplayBar } from './features/replay/ReplayBar'
import { SessionList } from './features/sessions/SessionList'
import { SettingsDialog } from './features/settings/SettingsDialog'
import { Timeline } from './features/timeline/Timeline'
import { rewoundToTurn } from './features/rewind/rewind-summary'
import { ContinueRunButton } from './features/transcript/ContinueRunButton'
import { Transcript } from './features/transcript/Transcript'
import { WorkspacePanel } from './features/workspace/WorkspacePanel'
import { McpServers } from './features/mcp/McpServers'
import { useAppStore } from './store/app-store'
import { ApprovalPanel, RewindDialog } from './lazy-views'
import { shownTurn } from './lib/turn-numbers'
import { totalTokens } from '../../shared/pricing'
import { usageDetail, usageSummary } from './lib/usage'
import { Button } from './components/Button'

export function App() {
  const { load, setWorkspace, receiveEvents, refreshSessions, loadError, setSettingsOpen } = useAppStore(
    useShallow((s) => ({
      load: s.load,
      setWorkspace: s.setWorkspace,
      receiveEvents: s.receiveEvents,
      refreshSessions: s.refreshSessions,
      loadError: s.loadError,
      setSettingsOpen: s.setSettingsOpen,
    })),
  )

  useEffect(() => {
    void load()
    const offs = [
      window.api.on('workspace:changed', setWorkspace),
      window.api.on('session:events', ({ sessionId, events }) => receiveEvents(sessionId, events)),
      window.api.on('session:list-changed', () => void refreshSessions()),
    ]
    return () => offs.forEach((off) => off())
  }, [load, setWorkspace, receiveEvents, refreshSessions])

  return (
    <div className="app">
      <aside className="sidebar">
        <header className="brand">
          <LanesMark className="brand-mark" />
          Lanes
          <Button
            look="icon"
            className="settings-button"
            testId="settings-open"
            aria-label="Settings"
            title="Settings"
            onClick={() => setSettingsOpen(true)}
          >
            ⚙
          </Button>
        </header>
        <WorkspacePanel />
        <McpServers />
        <SessionList />
      </aside>
      <main className="main">
        {loadError ? (
          <div className="empty-state" role="alert">
            <h1>Lanes could not start</h1>
            <p>{loadError}</p>
          </div>
        ) : (
          <SessionView />
        )}
      </main>
      <SettingsDialog />
      <RewindDialog />
    </div>
  )
}

function SessionView() {
  const { openSessionId, sessionLoading, sessionError, title, hasView, still } = useAppStore(
    useShallow((s) => ({
      // A replay held at one moment is a still picture: what was running then does not spin or pulse (nor cost
      // a style pass every frame while nobody touches anything).
      still: s.replay.active && !s.replay.playing,
      openSessionId: s.openSessionId,
      sessionLoading: s.sessionLoading,
      sessionError: s.sessionError,
      title: s.view?.session?.title ?? s.view?.runs[0]?.task,
      hasView: s.view !== null,
    })),
  )
  return (
    <>
      <DemoBanner />
      {openSessionId === null ? (
        <Welcome />
      ) : sessionError ? (
        <div className="empty-state" role="alert">
          <h1>This session could not be opened</h1>
          <p>{sessionError}</p>
        </div>
      ) : !hasView ? (
        <div className="empty-state muted">{sessionLoading ? 'Opening the session…' : ''}</div>
      ) : (
        <div className={`session-view ${still ? 'replay-still' : ''}`}>
          <SessionHeader title={title} />
          <SessionNotices />
          <Workbench />
          <ReplayBar />
        </div>
      )}
      <ActionError />
      <ApprovalPanel />
      <Composer />
    </>
  )
}

function SessionHeader({ title }: { title: string | undefined }) {
  const { status, rewound, counts, replayActive, settings, usage } = useAppStore(
    useShallow((s) => ({
      // The session's own status, not the replay position's: a replay of a finished session is not "running".
      status: s.timeline?.head.status ?? s.view?.status,
      rewound: s.view ? rewoundToTurn(s.view) !== undefined : false,
      counts: s.view?.counts,
      replayActive: s.replay.active,
      settings: s.view?.session?.settings,
      usage: s.view?.usage,
    })),
  )
  return (
    <header className="session-header" data-events={counts?.events ?? 0}>
      <h1 className="session-heading" title={title}>
        {title ?? 'Session'}
      </h1>
      {status && (
        <span
          className={`badge status-badge session-${status}`}
          data-testid="session-status-badge"
          data-status={status}
        >
          {status === 'running' && !replayActive && <span className="pulse" aria-hidden="true" />}
          {status === 'paused' ? (rewound ? 'rewound' : 'waiting for review') : status}
        </span>
      )}
      {replayActive && <span className="badge replay-badge">replay</span>}
      {counts && counts.calls > 0 && (
        <span className="muted small header-counts">
          {counts.byStatus.ok} done
          {counts.byStatus.error > 0 && ` · ${counts.byStatus.error} failed`}
          {counts.byStatus.skipped > 0 && ` · ${counts.byStatus.skipped} skipped`}
          {counts.byStatus.rejected > 0 && ` · ${counts.byStatus.rejected} rejected`}
        </span>
      )}
      {settings && usage && totalTokens(usage) > 0 && (
        <span
          className="muted small header-usage"
          data-testid="session-usage"
          title={usageDetail(usage, settings.model, settings.demo)}
        >
          {usageSummary(usage, settings.model, settings.demo)}
        </span>
      )}
      <ContextMeter />
      <SessionSettings />
      {settings && (
        <span className="muted small header-model" title="Model and scheduling of this session">
          {settings.demo ? 'demo model' : settings.model} · {settings.scheduler}
        </span>
      )}
    </header>
  )
}

/** Say plainly when the demo model answers, and how to use Claude instead. */
function DemoBanner() {
  const { demo, setSettingsOpen } = useAppStore(
    useShallow((s) => ({ demo: s.settings?.demo === true, setSettingsOpen: s.setSettingsOpen })),
  )
  if (!demo) return null
  return (
    <div className="banner info" data-testid="demo-banner" role="note">
      <strong>Demo mode:</strong> no API key is set, so a built-in demo model answers instead of Claude. To
      use Claude, add a key in{' '}
      <Button look="link" onClick={() => setSettingsOpen(true)}>
        Settings
      </Button>{' '}
      or start Lanes with ANTHROPIC_API_KEY set.
    </div>
  )
}

/** Log damage, and runs that can be continued (stopped, or cut short when Lanes closed). */
function SessionNotices() {
  const { warnings, head, live, replayActive } = useAppStore(
    useShallow((s) => ({
      warnings: s.warnings,
      head: s.timeline?.head,
      live: s.live,
      replayActive: s.replay.active,
      version: s.version,
    })),
  )
  const run = head?.runs[head.runs.length - 1]
  const interrupted =
    !live &&
    head !== undefined &&
    (head.status === 'running' || (head.status === 'paused' && head.pendingApprovals.length === 0))
  const stopped = head?.status === 'stopped'
  const rewoundTo = head ? rewoundToTurn(head) : undefined
  return (
    <>
      {warnings.length > 0 && (
        <div className="banner warn" role="alert" data-testid="session-warnings">
          {warnings.length === 1 ? 'One line' : `${warnings.length} lines`} of this session’s log could not be
          read; the rest is shown. <span className="muted small">{warnings[0]}</span>
        </div>
      )}
      {!replayActive && (interrupted || stopped) && run && (
        <div className="banner paused" data-testid="session-paused-banner">
          {rewoundTo !== undefined
            ? `The conversation was rewound to before turn ${shownTurn(head?.turns, rewoundTo)}: Claude goes on from there when you continue.`
            : `${stopped ? 'You stopped this run.' : 'This run was interrupted before it finished (Lanes was closed).'} You can pick it up where it left off.`}
          <ContinueRunButton />
        </div>
      )}
    </>
  )
}

function ActionError() {
  const { error, dismiss } = useAppStore(
    useShallow((s) => ({ error: s.actionError, dismiss: s.dismissError })),
  )
  if (!error) return null
  return (
    <div className="banner error" role="alert" data-testid="action-error">
      {error}
      <Button look="icon" aria-label="Dismiss" onClick={dismiss}>
        ✕
      </Button>
    </div>
  )
}

const MIN_PANE = 90
/** The timeline's height until the user drags the divider: this, or half the room in a small window. */
const DEFAULT_TIMELINE = 240
const TIMELINE_HEIGHT_KEY = 'lanes.timelineHeight'

/** Timeline above, transcript below, with a draggable divider (also moved with the arrow keys). */
function Workbench() {
  // The height the user chose by dragging (kept across sessions); null until they do.
  const [chosen, setChosen] = useState<number | null>(
    () => Number(localStorage.getItem(TIMELINE_HEIGHT_KEY)) || null,
  )
  const [total, setTotal] = useState<number | null>(null)
  const containerRef = useRef<HTMLDivElement>(null)
  const drag = useRef<{ startY: number; startH: number } | null>(null)
  useEffect(() => {
    if (chosen !== null) localStorage.setItem(TIMELINE_HEIGHT_KEY, String(Math.round(chosen)))
  }, [chosen])
  useEffect(() => {
    const el = containerRef.current
    if (!el) return
    const observer = new ResizeObserver(() => setTotal(el.clientHeight))
    observer.observe(el)
    return () => observer.disconnect()
  }, [])

  const clamp = (h: number): number => {
    const room = total ?? 800
    return Math.max(MIN_PANE, Math.min(room - MIN_PANE, h))
  }
  // In a small window (banners above, the replay bar and the composer below) a fixed 240 px would leave the
  // transcript a slit of two lines: by default the two panes share the room. In a tall one the lanes get more
  // than 240 px (at 1440x900 that left about 170 px of lanes under the legend): 42 % of the room.
  const room = total ?? 800
  const timelineHeight = clamp(chosen ?? Math.min(Math.max(DEFAULT_TIMELINE, room * 0.42), room / 2))
  const setTimelineHeight = (h: number): void => setChosen(clamp(h))
  const onPointerDown = (e: PointerEvent<HTMLDivElement>): void => {
    drag.current = { startY: e.clientY, startH: timelineHeight }
    e.currentTarget.setPointerCapture(e.pointerId)
  }
  const onPointerMove = (e: PointerEvent<HTMLDivElement>): void => {
    if (drag.current) setTimelineHeight(drag.current.startH + e.clientY - drag.current.startY)
  }
  return (
    <div className="workbench" ref={containerRef}>
      <div className="timeline-pane" style={{ height: timelineHeight }}>
        <Timeline />
      </div>
      <div
        className="splitter"
        role="separator"
        aria-orientation="horizontal"
        aria-label="Resize the timeline"
        aria-valuenow={Math.round(timelineHeight)}
        tabIndex={0}
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={() => (drag.current = null)}
        onKeyDown={(e) => {
          if (e.key === 'ArrowUp') setTimelineHeight(timelineHeight - 24)
          else if (e.key === 'ArrowDown') setTimelineHeight(timelineHeight + 24)
        }}
      />
      <div className="transcript-pane">
        <Transcript />
      </div>
    </div>
  )
}

/** The Lanes mark: three bars, drawn by CSS (`.brand-mark`, `.welcome-mark`). */
function LanesMark({ className }: { className: string }) {
  return (
    <span className={className} aria-hidden="true">
      <span />
      <span />
      <span />
    </span>
  )
}

function Welcome() {
  const workspace = useAppStore((s) => s.workspace)
  return (
    <div className="empty-state welcome">
      <LanesMark className="welcome-mark" />
      <h1>
        {workspace ? `What should the agent do in ${workspace.name}?` : 'Open a project folder to begin'}
      </h1>
      <p>
        Describe a task below. You will watch every step on a timeline: reads and searches run side by side,
        writes and commands run one at a time and wait for your review before anything changes.
      </p>
    </div>
  )
}
