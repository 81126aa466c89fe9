import { create } from 'zustand'
import { useShallow } from 'zustand/react/shallow'
import type { SessionEvent, SessionSummary } from '../../../shared/events'
import type { ApprovalReply, AppInfo, SettingsUpdate, SettingsView, WorkspaceInfo } from '../../../shared/ipc'
import type { SessionState } from '../../../shared/reducer'
import { buildEventTimeline, EventTimeline, yieldToPage } from '../lib/event-timeline'

/** One store in slices; actions sit next to the state they change (zustand docs). */

interface AppSlice {
  info: AppInfo | null
  loadError: string | null
  load(): Promise<void>
}

interface WorkspaceSlice {
  workspace: WorkspaceInfo | null
  workspaceError: string | null
  opening: boolean
  setWorkspace(workspace: WorkspaceInfo | null): void
  openWorkspace(path?: string): Promise<void>
}

interface SessionsSlice {
  sessions: SessionSummary[]
  sessionsError: string | null
  refreshSessions(): Promise<void>
}

/**
 * Where a selection came from: a view (the other one scrolls to it) or a link that leads elsewhere in the
 * session (a struck card's "show the undo", a rewind's list of calls), after which both views show it.
 */
export type SelectedFrom = 'timeline' | 'transcript' | 'link'

export type ReplaySpeed = 1 | 4 | 16 | 'instant'

export interface ReplayState {
  /** The view shows `stateAt(events, at)` instead of the head. */
  active: boolean
  at: number
  playing: boolean
  speed: ReplaySpeed
}

interface OpenSessionSlice {
  /** The session shown; null shows the start screen (a new task starts a new session). */
  openSessionId: string | null
  /** The session's events and states; replaced (never mutated in place) when another session opens. */
  timeline: EventTimeline | null
  /** Bumped whenever `timeline` gains events, so components holding the same timeline object re-render. */
  version: number
  /** The state on screen: the head, or the replay position's. */
  view: SessionState | null
  /**
   * The transcript's state: the same as `view`, except for a frame at a time while the scrubber is dragged (see
   * `setReplay`).
   */
  transcriptView: SessionState | null
  live: boolean
  warnings: string[]
  sessionLoading: boolean
  /**
   * The session on screen is a preview (its last turns, while the whole log is read and reduced): no replay, and
   * live events wait for the whole log, as they wait for any load.
   */
  previewing: boolean
  sessionError: string | null
  /** A request to main failed (start, stop, continue, approval): shown until the next action. */
  actionError: string | null
  busy: boolean
  replay: ReplayState
  selectedCallId: string | null
  /** An undo or rewind picked (its transcript row, its timeline mark); never set together with a call. */
  selectedRewindId: string | null
  /** Which view asked for the selection: the other one scrolls to it ('link': both do). */
  selectedFrom: SelectedFrom | null
  /** Counts selections: picking the same thing again (after scrolling away) brings it back into view. */
  selectionCount: number
  openSession(sessionId: string | null): Promise<void>
  reloadSession(): Promise<void>
  receiveEvents(sessionId: string, events: SessionEvent[]): void
  startTask(task: string): Promise<boolean>
  stopRun(): Promise<void>
  continueRun(): Promise<void>
  replyApprovals(decisions: ApprovalReply[]): Promise<boolean>
  selectCall(callId: string | null, from: SelectedFrom | null): void
  selectRewind(rewindId: string, from: SelectedFrom): void
  /** `scrub`: the position comes from dragging the scrubber (an input event per frame). */
  setReplay(update: Partial<ReplayState>, source?: 'scrub'): void
  dismissError(): void
}

interface SettingsSlice {
  settings: SettingsView | null
  settingsOpen: boolean
  settingsError: string | null
  loadSettings(): Promise<void>
  saveSettings(update: SettingsUpdate): Promise<boolean>
  setSettingsOpen(open: boolean): void
}

export type AppState = AppSlice & WorkspaceSlice & SessionsSlice & OpenSessionSlice & SettingsSlice

/**
 * Live events are applied once per animation frame: a burst of hundreds of `session:events` messages costs one
 * reduction pass and one render, not one per message. `?eventBatching=off` applies each message at once; the
 * UI benchmark uses it as its baseline.
 */
const batchPerFrame =
  typeof location === 'undefined' || new URLSearchParams(location.search).get('eventBatching') !== 'off'
let queued: SessionEvent[] = []
let frame: number | null = null

/**
 * Dragging the scrubber sends a position every frame, each far from the last: both panes would rebuild a
 * screenful of rows every frame. While a drag goes on, positions go to the timeline and the transcript in turn,
 * so each frame rebuilds one pane and each pane lags the thumb by one frame at most; once the drag pauses, both
 * show the last position.
 */
const SCRUB_CONTINUOUS_MS = 100
const SCRUB_SETTLE_MS = 60
let lastScrubAt = Number.NEGATIVE_INFINITY
let lastScrubPane: 'timeline' | 'transcript' = 'transcript'
let scrubSettle: ReturnType<typeof setTimeout> | null = null

const initialReplay: ReplayState = { active: false, at: 0, playing: false, speed: 4 }

/**
 * A session opened afresh first gets a preview of its last turns when its log is longer than this many events:
 * on screen at once, the whole log read and reduced behind it. Enough turns to fill both panes.
 */
const PREVIEW_EVENTS = 1000
/** Counts loads: an answer for any but the latest is stale. */
let loads = 0

export const useAppStore = create<AppState>()((set, get) => {
  /** The state to show for the timeline's current content and the replay position. */
  const viewOf = (timeline: EventTimeline, replay: ReplayState): SessionState =>
    replay.active ? timeline.stateAt(replay.at) : timeline.head

  const flush = (): void => {
    frame = null
    const { timeline, replay, version, sessionLoading } = get()
    // While a load is on its way the batch waits: the load's events come first, then these (deduplicated by seq).
    if (!timeline || sessionLoading) return
    const batch = queued
    queued = []
    const { added, gap } = timeline.append(batch)
    if (gap) {
      // Some events never reached us (a dropped socket): the log on disk has them all.
      void get().reloadSession()
      return
    }
    if (added === 0) return
    const view = viewOf(timeline, replay)
    set({ version: version + 1, view, transcriptView: view })
  }

  const fail = (error: string): void => set({ actionError: error, busy: false })

  /** A loaded session on screen, then the live events that came in while it loaded (those it had are dropped by seq). */
  const show = (timeline: EventTimeline, loaded: { live: boolean; warnings: string[] }): void => {
    const view = viewOf(timeline, get().replay)
    set({
      timeline,
      version: get().version + 1,
      view,
      transcriptView: view,
      live: loaded.live,
      warnings: loaded.warnings,
      sessionLoading: false,
      previewing: false,
      sessionError: null,
    })
    if (queued.length > 0) flush()
  }

  return {
    info: null,
    loadError: null,
    async load() {
      const [info, current] = await Promise.all([
        window.api.invoke('app:info'),
        window.api.invoke('workspace:current'),
      ])
      if (!info.ok) return set({ loadError: info.error })
      set({ info: info.value, workspace: current.ok ? current.value : null })
      await Promise.all([get().refreshSessions(), get().loadSettings()])
      // The session that was open before a reload opens again (with its review screen, if it is paused).
      const remembered = new URLSearchParams(location.hash.slice(1)).get('session')
      if (
        remembered &&
        get().openSessionId === null &&
        get().sessions.some((s) => s.sessionId === remembered)
      ) {
        await get().openSession(remembered)
      }
    },

    workspace: null,
    workspaceError: null,
    opening: false,
    setWorkspace(workspace) {
      const changed = workspace?.path !== get().workspace?.path
      set({ workspace, workspaceError: null })
      if (changed) {
        void get().openSession(null)
        void get().refreshSessions()
      }
    },
    async openWorkspace(path) {
      set({ opening: true, workspaceError: null })
      const result = await window.api.invoke('workspace:open', path === undefined ? undefined : { path })
      if (result.ok) {
        set({ opening: false })
        get().setWorkspace(result.value)
      } else set({ opening: false, workspaceError: result.code === 'cancelled' ? null : result.error })
    },

    sessions: [],
    sessionsError: null,
    async refreshSessions() {
      const result = await window.api.invoke('session:list')
      if (result.ok) set({ sessions: result.value, sessionsError: null })
      else set({ sessionsError: result.error })
    },

    openSessionId: null,
    timeline: null,
    version: 0,
    view: null,
    transcriptView: null,
    live: false,
    warnings: [],
    sessionLoading: false,
    previewing: false,
    sessionError: null,
    actionError: null,
    busy: false,
    replay: initialReplay,
    selectedCallId: null,
    selectedRewindId: null,
    selectedFrom: null,
    selectionCount: 0,

    async openSession(sessionId) {
      queued = []
      // Kept in the address so a reload comes back to it; replaceState leaves the history alone.
      history.replaceState(
        null,
        '',
        sessionId === null ? location.pathname + location.search : `#session=${sessionId}`,
      )
      set({
        openSessionId: sessionId,
        timeline: null,
        view: null,
        transcriptView: null,
        live: false,
        warnings: [],
        sessionError: null,
        actionError: null,
        sessionLoading: sessionId !== null,
        previewing: false,
        replay: initialReplay,
        selectedCallId: null,
        selectedRewindId: null,
        selectedFrom: null,
      })
      if (sessionId !== null) await get().reloadSession()
    },

    async reloadSession() {
      const sessionId = get().openSessionId
      if (sessionId === null) return
      const load = ++loads
      const stale = (): boolean => load !== loads || get().openSessionId !== sessionId
      set({ sessionLoading: true })
      if (get().timeline === null) {
        // Opened afresh: the last turns first (a reload after a gap keeps what is on screen until it is done).
        const preview = await window.api.invoke('session:load', { sessionId, tail: PREVIEW_EVENTS })
        if (stale()) return
        if (preview.ok && !preview.value.partial)
          return show(new EventTimeline(preview.value.events), preview.value)
        if (preview.ok) {
          const timeline = new EventTimeline(preview.value.events)
          set({
            timeline,
            version: get().version + 1,
            view: timeline.head,
            transcriptView: timeline.head,
            live: preview.value.live,
            warnings: preview.value.warnings,
            previewing: true,
          })
          // On screen before the whole log's answer is taken in (reading it blocks the page for a moment).
          await nextPaint()
          if (stale()) return
        }
        // A preview that failed: the whole load says why, or succeeds.
      }
      const result = await window.api.invoke('session:load', { sessionId })
      if (stale()) return
      if (!result.ok) return set({ sessionLoading: false, previewing: false, sessionError: result.error })
      const timeline = await buildEventTimeline(result.value.events, stale)
      if (timeline === null || stale()) return
      show(timeline, result.value)
    },

    receiveEvents(sessionId, events) {
      if (sessionId !== get().openSessionId) return
      for (const event of events) queued.push(event)
      if (!batchPerFrame) return flush()
      frame ??= requestAnimationFrame(flush)
    },

    async startTask(task) {
      const { openSessionId, view } = get()
      // A follow-up goes into the open session once its run has ended; otherwise a new session starts.
      const ended = view !== null && view.status !== 'running' && view.status !== 'paused'
      const followUp = openSessionId !== null && ended
      set({ busy: true, actionError: null })
      const result = await window.api.invoke(
        'session:start',
        followUp ? { task, sessionId: openSessionId } : { task },
      )
      if (!result.ok) {
        fail(result.error)
        return false
      }
      set({ busy: false })
      if (result.value.sessionId !== get().openSessionId) await get().openSession(result.value.sessionId)
      else {
        const head = get().timeline?.head ?? null
        set({ replay: initialReplay, view: head, transcriptView: head, live: true })
      }
      void get().refreshSessions()
      return true
    },

    async stopRun() {
      const sessionId = get().openSessionId
      if (sessionId === null) return
      set({ actionError: null })
      const result = await window.api.invoke('session:stop', { sessionId })
      if (!result.ok) fail(result.error)
    },

    async continueRun() {
      const sessionId = get().openSessionId
      if (sessionId === null) return
      set({ busy: true, actionError: null })
      const result = await window.api.invoke('session:continue', { sessionId })
      if (!result.ok) return fail(result.error)
      const head = get().timeline?.head ?? null
      set({ busy: false, live: true, replay: initialReplay, view: head, transcriptView: head })
    },

    async replyApprovals(decisions) {
      const sessionId = get().openSessionId
      if (sessionId === null || decisions.length === 0) return false
      set({ busy: true, actionError: null })
      const result = await window.api.invoke('approval:reply', { sessionId, decisions })
      if (!result.ok) {
        fail(result.error)
        return false
      }
      set({ busy: false, live: true })
      return true
    },

    selectCall(callId, from) {
      set({
        selectedCallId: callId,
        selectedRewindId: null,
        selectedFrom: from,
        selectionCount: get().selectionCount + 1,
      })
    },

    selectRewind(rewindId, from) {
      set({
        selectedCallId: null,
        selectedRewindId: rewindId,
        selectedFrom: from,
        selectionCount: get().selectionCount + 1,
      })
    },

    setReplay(update, source) {
      const { timeline, replay, previewing } = get()
      // A preview is not the session: replay waits for the whole log.
      if (previewing) return
      const next = { ...replay, ...update }
      if (timeline) {
        const first = timeline.firstAt ?? 0
        const last = timeline.lastAt ?? first
        next.at = Math.max(first, Math.min(last, next.at))
        if (next.playing && next.at >= last && update.at === undefined) next.at = first
      }
      const view = timeline ? viewOf(timeline, next) : null
      const now = performance.now()
      const dragging = source === 'scrub' && now - lastScrubAt < SCRUB_CONTINUOUS_MS
      lastScrubAt = source === 'scrub' ? now : Number.NEGATIVE_INFINITY
      if (!dragging) return set({ replay: next, view, transcriptView: view })
      lastScrubPane = lastScrubPane === 'timeline' ? 'transcript' : 'timeline'
      set(lastScrubPane === 'timeline' ? { replay: next, view } : { replay: next, transcriptView: view })
      // Once the drag pauses, the pane left behind catches up (the other one keeps its state object: no render).
      // One timer for the whole drag, not one per input event.
      const settle = (): void => {
        const idle = performance.now() - lastScrubAt
        if (idle < SCRUB_SETTLE_MS && Number.isFinite(idle)) {
          scrubSettle = setTimeout(settle, SCRUB_SETTLE_MS - idle)
          return
        }
        scrubSettle = null
        const { timeline: current, replay } = get()
        if (current && replay.active) {
          const settled = viewOf(current, replay)
          set({ view: settled, transcriptView: settled })
        }
      }
      scrubSettle ??= setTimeout(settle, SCRUB_SETTLE_MS)
    },

    dismissError() {
      set({ actionError: null })
    },

    settings: null,
    settingsOpen: false,
    settingsError: null,
    async loadSettings() {
      const result = await window.api.invoke('settings:get')
      if (result.ok) set({ settings: result.value, settingsError: null })
      else set({ settingsError: result.error })
    },
    async saveSettings(update) {
      const result = await window.api.invoke('settings:set', update)
      if (result.ok) {
        set({ settings: result.value, settingsError: null })
        return true
      }
      set({ settingsError: result.error })
      return false
    },
    setSettingsOpen(open) {
      set({ settingsOpen: open, settingsError: null })
      if (open) void get().loadSettings()
    },
  }
})

/**
 * Resolves once the frame with what was just rendered has been painted: at the frame after it (its animation frame
 * callbacks run before it is painted), or soon in a window that paints no frames.
 */
async function nextPaint(): Promise<void> {
  // After React's commit, which comes in a task of its own.
  await yieldToPage()
  return new Promise((resolve) => {
    const fallback = setTimeout(resolve, 500)
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        clearTimeout(fallback)
        // Out of the frame's callbacks, so that whatever follows does not hold up that frame either.
        void yieldToPage().then(resolve)
      }),
    )
  })
}

/** The selection the timeline and the transcript both follow: what is picked, where it was picked, and how to pick. */
export function useSelection() {
  return useAppStore(
    useShallow((s) => ({
      selectedCallId: s.selectedCallId,
      selectedRewindId: s.selectedRewindId,
      selectedFrom: s.selectedFrom,
      selectionCount: s.selectionCount,
      selectCall: s.selectCall,
      selectRewind: s.selectRewind,
    })),
  )
}
