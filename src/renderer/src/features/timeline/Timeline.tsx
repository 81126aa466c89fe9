import { useVirtualizer } from '@tanstack/react-virtual'
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { SessionState } from '../../../../shared/reducer'
import { useAppStore } from '../../store/app-store'
import { BarTooltip, findCall } from './BarTooltip'
import { layoutTurn, type BarLayout, type TurnLayout } from './layout'
import { Legend } from './Legend'
import { Ruler } from './Ruler'
import {
  fitRange,
  LABEL_WIDTH,
  MAX_PX_PER_MS,
  MIN_BAR,
  MIN_PX_PER_MS,
  PAD_RIGHT,
  xOf,
  type Scale,
} from './scale'
import { TurnRow } from './TurnRow'

/**
 * The timeline of lanes: per turn, the parallel lane (calls that ran together, one row each while they overlap)
 * and the serial lane (writes and commands one after the other, skipped siblings below them), on one time axis
 * shared by the whole session. Running bars grow in a requestAnimationFrame loop that writes their width
 * straight to the DOM, so a long command costs no React render per frame.
 */

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

function selectedIn(layout: TurnLayout, callId: string | null): string | null {
  if (callId === null) return null
  const has = (bars: BarLayout[]): boolean => bars.some((b) => b.call.callId === callId)
  return has(layout.parallel) || has(layout.serial) || has(layout.skipped) ? callId : null
}
