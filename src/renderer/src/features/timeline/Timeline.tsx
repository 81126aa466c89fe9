import { useVirtualizer } from '@tanstack/react-virtual'
import {
  memo,
  useCallback,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type RefObject,
} from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { SessionState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import {
  callTitle,
  formatDuration,
  formatOffset,
  sandboxFlag,
  shortCall,
  statusLabel,
} from '../../lib/format'
import { useAppStore } from '../../store/app-store'
import { canUndo, RewindToHereButton, UndoButton } from '../rewind/UndoButton'
import { layoutTurn, LANE_GAP, ROW_HEIGHT, TURN_HEADER, type BarLayout, type TurnLayout } from './layout'

/**
 * The timeline of lanes: per turn, the parallel lane (calls that ran together, one row each while they overlap)
 * and the serial lane (writes and commands one after the other, skipped siblings below them), on one time axis
 * shared by the whole session. Running bars grow in a requestAnimationFrame loop that writes their width
 * straight to the DOM, so a long command costs no React render per frame.
 */

const LABEL_WIDTH = 76
const PAD_RIGHT = 48
const MIN_BAR = 4
const MIN_PX_PER_MS = 0.00005
const MAX_PX_PER_MS = 4

interface Scale {
  origin: number
  pxPerMs: number
}

const xOf = (scale: Scale, t: number): number => LABEL_WIDTH + (t - scale.origin) * scale.pxPerMs

/** The run the "fit" button frames: the last one (the one going on, or the one just replayed). */
function fitRange(view: SessionState, now: number): { start: number; end: number } {
  const run = view.runs[view.runs.length - 1]
  const start = run?.startedAt ?? view.firstEventAt ?? now
  const end = run?.endedAt ?? now
  return { start, end: Math.max(end, start + 1000) }
}

export function Timeline() {
  const { view, head, replay, selectedCallId, selectedFrom, selectCall } = useAppStore(
    useShallow((s) => ({
      view: s.view,
      head: s.timeline?.head,
      replay: s.replay,
      selectedCallId: s.selectedCallId,
      selectedFrom: s.selectedFrom,
      selectCall: s.selectCall,
    })),
  )
  const scrollRef = useRef<HTMLDivElement>(null)
  const [width, setWidth] = useState(800)
  /** null: fit the current run (and keep fitting while it grows); a number: the user's zoom. */
  const [zoom, setZoom] = useState<number | null>(null)
  const [hover, setHover] = useState<{ callId: string; x: number; y: number } | null>(null)

  const turns = view?.turns
  const layouts = useMemo(() => (turns ?? []).map(layoutTurn), [turns])
  const running = view?.status === 'running' && !replay.active
  // "now" for the axis: the replay position, the wall clock while running, else the last event.
  const [clock, setClock] = useState(() => Date.now())
  const now = replay.active
    ? replay.at
    : running
      ? Math.max(clock, view?.lastEventAt ?? 0)
      : (view?.lastEventAt ?? clock)
  const origin = view?.firstEventAt ?? now

  // A replay keeps the axis of the whole run, so bars appear on a still scale as the position moves (and a scrub
  // does not re-lay out the timeline).
  const fitSource = replay.active ? head : view
  const fitNow = replay.active ? (head?.lastEventAt ?? now) : now
  const fit = fitSource ? fitRange(fitSource, fitNow) : { start: origin, end: origin + 1000 }
  // While fitting a live run, leave headroom so the scale changes only now and then, not every frame.
  const fitSpan = (fit.end - fit.start) * (running ? 1.4 : 1.05)
  const fitPx = Math.min(MAX_PX_PER_MS, Math.max(MIN_PX_PER_MS, (width - LABEL_WIDTH - PAD_RIGHT) / fitSpan))
  const pxPerMs = zoom ?? fitPx
  const scale: Scale = useMemo(() => ({ origin, pxPerMs }), [origin, pxPerMs])
  const contentWidth = Math.max(width, xOf(scale, Math.max(fitNow, fit.start + fitSpan)) + PAD_RIGHT)

  useLayoutEffect(() => {
    const el = scrollRef.current
    if (!el) return
    const observer = new ResizeObserver(() => setWidth(el.clientWidth))
    observer.observe(el)
    setWidth(el.clientWidth)
    return () => observer.disconnect()
  }, [])

  // In fit mode the view follows the run: scrolled so its start is at the left edge.
  useLayoutEffect(() => {
    const el = scrollRef.current
    if (zoom !== null || !el) return
    const left = Math.max(0, Math.round(xOf(scale, fit.start) - LABEL_WIDTH))
    // Writing scrollLeft forces a layout even when it does not move: only when it would.
    if (Math.abs(el.scrollLeft - left) > 1) el.scrollLeft = left
  }, [zoom, scale, fit.start])

  // Turn heights come from their layouts, never from measuring. A key function new with every layout list makes
  // the virtualizer recompute its offsets in the same render (measure() would cost a second render).
  const getItemKey = useCallback((i: number) => layouts[i]?.turn ?? i, [layouts])
  const virtualizer = useVirtualizer({
    count: layouts.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (i) => layouts[i]?.height ?? 60,
    getItemKey,
    overscan: 3,
  })

  // Following a run (live, or a replay playing) keeps its latest turn in view, unless the user zoomed to look around.
  const following = zoom === null && (running || replay.playing)
  useEffect(() => {
    if (following && layouts.length > 0) virtualizer.scrollToIndex(layouts.length - 1, { align: 'end' })
  }, [following, layouts, virtualizer])

  // Live growth: running bars and the "now" line follow the clock without React; a re-render happens only when
  // the fitted scale runs out of headroom.
  const runningBars = useRef(new Map<HTMLElement, number>())
  const nowLine = useRef<HTMLDivElement>(null)
  const scaleRef = useRef(scale)
  scaleRef.current = scale
  const fitEndRef = useRef(fit.start + fitSpan)
  fitEndRef.current = fit.start + fitSpan
  useEffect(() => {
    if (!running) return
    let id = requestAnimationFrame(function tick() {
      const t = Date.now()
      const s = scaleRef.current
      for (const [el, start] of runningBars.current) {
        el.style.width = `${Math.max(MIN_BAR, (t - start) * s.pxPerMs)}px`
      }
      if (nowLine.current) nowLine.current.style.transform = `translateX(${xOf(s, t)}px)`
      if (t > fitEndRef.current) setClock(t)
      id = requestAnimationFrame(tick)
    })
    return () => cancelAnimationFrame(id)
  }, [running])

  const registerRunning = useCallback((el: HTMLElement | null, start: number | undefined) => {
    if (!el) return
    if (start === undefined) runningBars.current.delete(el)
    else runningBars.current.set(el, start)
  }, [])
  // Bars that unmount leave the map with their element; clear dead ones when the layout changes.
  useEffect(() => {
    for (const el of runningBars.current.keys()) if (!el.isConnected) runningBars.current.delete(el)
  }, [layouts])

  // A card selected in the transcript: bring its bar into view.
  useEffect(() => {
    if (selectedFrom !== 'transcript' || selectedCallId === null) return
    const index = layouts.findIndex((l) =>
      [...l.parallel, ...l.serial, ...l.skipped].some((b) => b.call.callId === selectedCallId),
    )
    if (index < 0) return
    virtualizer.scrollToIndex(index, { align: 'auto' })
    const bar = [
      ...(layouts[index]?.parallel ?? []),
      ...(layouts[index]?.serial ?? []),
      ...(layouts[index]?.skipped ?? []),
    ].find((b) => b.call.callId === selectedCallId)
    const el = scrollRef.current
    if (bar && el) {
      const x = xOf(scale, bar.start)
      if (x < el.scrollLeft + LABEL_WIDTH || x > el.scrollLeft + el.clientWidth - 40) {
        el.scrollLeft = Math.max(0, x - LABEL_WIDTH - 40)
      }
    }
  }, [selectedCallId, selectedFrom, layouts, virtualizer, scale])

  const zoomBy = useCallback(
    (factor: number, anchorClientX?: number) => {
      const el = scrollRef.current
      const next = Math.min(MAX_PX_PER_MS, Math.max(MIN_PX_PER_MS, pxPerMs * factor))
      if (!el) return setZoom(next)
      // Keep the time under the pointer (or the view's centre) where it is.
      const rect = el.getBoundingClientRect()
      const offset = anchorClientX === undefined ? el.clientWidth / 2 : anchorClientX - rect.left
      const t = origin + (el.scrollLeft + offset - LABEL_WIDTH) / pxPerMs
      setZoom(next)
      requestAnimationFrame(() => {
        el.scrollLeft = Math.max(0, LABEL_WIDTH + (t - origin) * next - offset)
      })
    },
    [pxPerMs, origin],
  )

  useEffect(() => {
    const el = scrollRef.current
    if (!el) return
    const onWheel = (event: WheelEvent): void => {
      if (!event.ctrlKey && !event.metaKey) return
      event.preventDefault()
      zoomBy(event.deltaY < 0 ? 1.25 : 0.8, event.clientX)
    }
    // Not passive: ctrl+wheel must not also zoom the page.
    el.addEventListener('wheel', onWheel, { passive: false })
    return () => el.removeEventListener('wheel', onWheel)
  }, [zoomBy])

  const hovered = hover && view ? findCall(view, hover.callId) : undefined
  const onHover = useCallback((callId: string | null, rect?: DOMRect) => {
    setHover(callId && rect ? { callId, x: rect.left + rect.width / 2, y: rect.bottom } : null)
  }, [])

  const callCount = view?.counts.calls ?? 0
  return (
    <section className="timeline-panel" aria-label="Timeline">
      <header className="panel-header">
        <h2 className="panel-title">Timeline</h2>
        <span className="muted small">
          {callCount} {callCount === 1 ? 'call' : 'calls'}
          {layouts.length > 0 ? ` in ${layouts.length} ${layouts.length === 1 ? 'turn' : 'turns'}` : ''}
        </span>
        <Legend />
        <div className="toolbar" role="group" aria-label="Zoom">
          <button
            className="icon-button"
            onClick={() => zoomBy(0.8)}
            aria-label="Zoom out"
            title="Zoom out (Ctrl+wheel)"
          >
            −
          </button>
          <button
            className="icon-button"
            onClick={() => zoomBy(1.25)}
            aria-label="Zoom in"
            title="Zoom in (Ctrl+wheel)"
          >
            +
          </button>
          <button
            className={`button small ${zoom === null ? 'active' : ''}`}
            data-testid="timeline-fit"
            onClick={() => setZoom(null)}
            aria-pressed={zoom === null}
            title="Fit the current run in view"
          >
            Fit run
          </button>
        </div>
      </header>
      <div className="timeline-scroll" ref={scrollRef} data-testid="timeline" tabIndex={-1}>
        {layouts.length === 0 ? (
          <div className="timeline-empty muted">
            Tool calls appear here as lanes: reads side by side, writes and commands one after another.
          </div>
        ) : (
          <div
            className="timeline-content"
            style={{ width: contentWidth, height: virtualizer.getTotalSize() + 26 }}
          >
            <Ruler scale={scale} scrollRef={scrollRef} width={contentWidth} />
            <div
              ref={nowLine}
              className={`timeline-now ${replay.active ? 'replay' : ''}`}
              style={{ transform: `translateX(${xOf(scale, now)}px)` }}
              aria-hidden="true"
            />
            {virtualizer.getVirtualItems().map((item) => {
              const layout = layouts[item.index] as TurnLayout
              return (
                <TurnRow
                  key={layout.turn}
                  layout={layout}
                  top={item.start + 26}
                  scale={scale}
                  // Only a turn with a call still going draws up to "now": the others keep their props (and skip
                  // rendering) while a replay moves.
                  now={layout.end === undefined ? now : 0}
                  live={running}
                  // Likewise, only the turn holding the selected call sees the selection.
                  selectedCallId={selectedIn(layout, selectedCallId)}
                  onSelect={selectCall}
                  onHover={onHover}
                  registerRunning={registerRunning}
                />
              )
            })}
          </div>
        )}
      </div>
      {hovered && hover && (
        <BarTooltip call={hovered} x={hover.x} y={hover.y} origin={origin} view={view as SessionState} />
      )}
    </section>
  )
}

function findCall(view: SessionState, callId: string): ToolCallState | undefined {
  for (let i = view.turns.length - 1; i >= 0; i--) {
    const call = view.turns[i]?.calls[callId]
    if (call) return call
  }
  return undefined
}

function selectedIn(layout: TurnLayout, callId: string | null): string | null {
  if (callId === null) return null
  const has = (bars: BarLayout[]): boolean => bars.some((b) => b.call.callId === callId)
  return has(layout.parallel) || has(layout.serial) || has(layout.skipped) ? callId : null
}

function Legend() {
  return (
    <ul className="timeline-legend" aria-label="Colours">
      {(['running', 'ok', 'error', 'awaiting-approval', 'skipped'] as const).map((s) => (
        <li key={s}>
          <span className={`legend-swatch status-${s}`} aria-hidden="true" />
          {statusLabel(s)}
        </li>
      ))}
    </ul>
  )
}

const TICK_STEPS = [
  50, 100, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
]

/** The time axis, drawn only for the part in view (a long session zoomed in would otherwise need thousands). */
function Ruler({
  scale,
  scrollRef,
  width,
}: {
  scale: Scale
  scrollRef: RefObject<HTMLDivElement | null>
  width: number
}) {
  const [range, setRange] = useState({ left: 0, width: 1000 })
  useEffect(() => {
    const el = scrollRef.current
    if (!el) return
    let frame: number | null = null
    const update = (): void => {
      frame = null
      setRange({ left: el.scrollLeft, width: el.clientWidth })
    }
    const onScroll = (): void => {
      frame ??= requestAnimationFrame(update)
    }
    update()
    el.addEventListener('scroll', onScroll, { passive: true })
    return () => {
      el.removeEventListener('scroll', onScroll)
      if (frame !== null) cancelAnimationFrame(frame)
    }
  }, [scrollRef])
  const step = TICK_STEPS.find((s) => s * scale.pxPerMs >= 80) ?? 3_600_000
  const fromT = scale.origin + (range.left - LABEL_WIDTH) / scale.pxPerMs
  const toT = scale.origin + (range.left + range.width) / scale.pxPerMs
  const ticks: number[] = []
  for (
    let t = Math.max(0, Math.floor((fromT - scale.origin) / step)) * step;
    t <= toT - scale.origin && ticks.length < 400;
    t += step
  ) {
    ticks.push(t)
  }
  return (
    <div className="timeline-ruler" style={{ width }} aria-hidden="true">
      {ticks.map((t) => (
        <span key={t} className="tick" style={{ left: LABEL_WIDTH + t * scale.pxPerMs }}>
          {formatOffset(t)}
        </span>
      ))}
    </div>
  )
}

interface TurnRowProps {
  layout: TurnLayout
  top: number
  scale: Scale
  now: number
  live: boolean
  selectedCallId: string | null
  onSelect(callId: string, from: 'timeline'): void
  onHover(callId: string | null, rect?: DOMRect): void
  registerRunning(el: HTMLElement | null, start: number | undefined): void
}

const TurnRow = memo(function TurnRow(props: TurnRowProps) {
  const { layout, top, scale } = props
  const calls = layout.parallel.length + layout.serial.length + layout.skipped.length
  // Rewinding to a turn goes back to before its first call (the conversation to the turn itself).
  const firstCall = [...layout.parallel, ...layout.serial, ...layout.skipped].sort(
    (a, b) => a.call.index - b.call.index,
  )[0]?.call.callId
  return (
    <div
      className="tl-turn"
      style={{ top, height: layout.height }}
      data-testid="timeline-turn"
      data-turn={layout.turn}
    >
      <div className="tl-turn-header" style={{ height: TURN_HEADER }}>
        <span className="tl-turn-title">
          Turn {layout.turn}
          <span className="muted">
            {' '}
            · {calls === 0 ? 'no tool calls' : `${calls} ${calls === 1 ? 'call' : 'calls'}`}
          </span>
        </span>
        {firstCall && <RewindToHereButton callId={firstCall} turn={layout.turn} />}
        <span className="tl-turn-tick" style={{ left: xOf(scale, layout.startedAt) }} aria-hidden="true" />
      </div>
      {layout.parallelRows > 0 && (
        <div
          className="tl-lane parallel"
          data-testid="lane-parallel"
          style={{ height: layout.parallelRows * ROW_HEIGHT, marginBottom: LANE_GAP }}
        >
          <div className="tl-lane-label" title="Reads and searches that ran at the same time">
            Parallel
          </div>
          {layout.parallel.map((bar) => (
            <Bar key={bar.call.callId} bar={bar} {...props} />
          ))}
        </div>
      )}
      {layout.serialRows > 0 && (
        <div
          className="tl-lane serial"
          data-testid="lane-serial"
          style={{ height: layout.serialRows * ROW_HEIGHT }}
        >
          <div className="tl-lane-label" title="Writes and commands, one at a time in order">
            Serial
          </div>
          {layout.serial.map((bar) => (
            <Bar key={bar.call.callId} bar={bar} {...props} />
          ))}
          {layout.skipped.map((bar) => (
            <SkipMarker key={bar.call.callId} bar={bar} {...props} />
          ))}
        </div>
      )}
      {calls === 0 && <div className="tl-lane empty" style={{ height: ROW_HEIGHT }} />}
    </div>
  )
})

function Bar({
  bar,
  scale,
  now,
  live,
  selectedCallId,
  onSelect,
  onHover,
  registerRunning,
}: TurnRowProps & { bar: BarLayout }) {
  const { call } = bar
  const start = bar.start
  const x = xOf(scale, start)
  const end = bar.end ?? now
  const width = Math.max(MIN_BAR, (end - start) * scale.pxPerMs)
  // The part spent waiting (queue, approval) is drawn lighter than the part spent running.
  const waitWidth =
    bar.runStart === undefined ? width : Math.min(width, (bar.runStart - start) * scale.pxPerMs)
  const growing = live && bar.end === undefined
  const title = callTitle(call)
  const flag = sandboxFlag(call)
  const element = (
    <button
      type="button"
      className={`tool-bar status-${call.status} ${selectedCallId === call.callId ? 'selected' : ''} ${call.rewoundBy ? 'rewound' : ''}`}
      data-sandbox-flag={flag ?? undefined}
      data-testid="tool-bar"
      data-status={call.status}
      data-call-id={call.callId}
      data-start={start}
      data-run-start={bar.runStart ?? ''}
      data-end={bar.end ?? ''}
      data-row={bar.row}
      style={{ left: x, top: bar.row * ROW_HEIGHT + 3, width }}
      ref={(el) => registerRunning(el, growing ? start : undefined)}
      aria-label={`${title}${flag ? ` (${flag})` : ''}: ${statusLabel(call.status)}${call.durationMs !== undefined ? `, ${formatDuration(call.durationMs)}` : ''}`}
      onClick={() => onSelect(call.callId, 'timeline')}
      onMouseEnter={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
      onMouseLeave={() => onHover(null)}
      onFocus={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
      onBlur={() => onHover(null)}
    >
      {waitWidth > 0 && bar.runStart !== undefined && (
        <span className="bar-wait" style={{ width: waitWidth }} />
      )}
      {flag && <span className="bar-flag">{flag}</span>}
      <span className="bar-label">{title}</span>
    </button>
  )
  // The selected write or edit can be undone from its bar: the button sits just past the bar's end.
  if (selectedCallId !== call.callId || !canUndo(call)) return element
  return (
    <>
      {element}
      <span className="bar-undo" style={{ left: x + width + 4, top: bar.row * ROW_HEIGHT + 1 }}>
        <UndoButton call={call} />
      </span>
    </>
  )
}

function SkipMarker({ bar, scale, selectedCallId, onSelect, onHover }: TurnRowProps & { bar: BarLayout }) {
  const { call, cause } = bar
  // Hung under the failed call (from where it started to run), so the markers stay inside the run's span on
  // screen instead of trailing off past its end.
  const anchor = cause ? (cause.startedAt ?? cause.queuedAt) : bar.start
  const linkX = xOf(scale, anchor) + 6
  const x = linkX
  const text = `skipped because ${shortCall(cause)} failed`
  return (
    <>
      <span
        className="skip-connector"
        aria-hidden="true"
        style={{
          left: Math.min(linkX, x) - 1,
          top: 14,
          height: bar.row * ROW_HEIGHT - 2,
          width: Math.max(8, x - linkX + 8),
        }}
      />
      <div
        className={`tool-bar skip-marker status-skipped ${selectedCallId === call.callId ? 'selected' : ''}`}
        data-testid="tool-bar"
        data-status="skipped"
        data-call-id={call.callId}
        data-cause-call-id={call.causeCallId}
        style={{ left: x + 8, top: bar.row * ROW_HEIGHT + 3 }}
        onMouseEnter={(e) => onHover(call.callId, e.currentTarget.getBoundingClientRect())}
        onMouseLeave={() => onHover(null)}
      >
        <button
          type="button"
          className="skip-self"
          onClick={() => onSelect(call.callId, 'timeline')}
          aria-label={`${callTitle(call)}: ${text}`}
        >
          <span className="skip-title">{callTitle(call)}</span>
          <span className="skip-text">{text}</span>
        </button>
        {call.causeCallId && (
          <button
            type="button"
            className="skip-link"
            data-testid="skip-link"
            onClick={() => onSelect(call.causeCallId as string, 'timeline')}
            title="Show the call that failed"
            aria-label={`Show the failed call: ${cause ? callTitle(cause) : call.causeCallId}`}
          >
            ↖ show failed call
          </button>
        )}
      </div>
    </>
  )
}

function BarTooltip({
  call,
  x,
  y,
  origin,
  view,
}: {
  call: ToolCallState
  x: number
  y: number
  origin: number
  view: SessionState
}) {
  const cause = call.causeCallId ? findCall(view, call.causeCallId) : undefined
  const left = Math.min(Math.max(8, x - 160), window.innerWidth - 328)
  return (
    <div className="tooltip" role="tooltip" data-testid="timeline-tooltip" style={{ left, top: y + 6 }}>
      <div className="tooltip-title">{callTitle(call)}</div>
      <dl>
        <dt>Status</dt>
        <dd>
          <span className={`status-dot status-${call.status}`} aria-hidden="true" />{' '}
          {statusLabel(call.status)}
        </dd>
        <dt>Tool</dt>
        <dd>
          {call.name} · {call.lane.kind === 'parallel' ? `parallel group ${call.lane.group + 1}` : 'serial'}
        </dd>
        <dt>Queued</dt>
        <dd>+{formatOffset(call.queuedAt - origin)}</dd>
        {call.startedAt !== undefined && (
          <>
            <dt>Started</dt>
            <dd>+{formatOffset(call.startedAt - origin)}</dd>
          </>
        )}
        {call.durationMs !== undefined && (
          <>
            <dt>Took</dt>
            <dd>{formatDuration(call.durationMs)}</dd>
          </>
        )}
        {cause && (
          <>
            <dt>Because</dt>
            <dd>{callTitle(cause)} failed</dd>
          </>
        )}
      </dl>
    </div>
  )
}
