import { useVirtualizer } from '@tanstack/react-virtual'
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { CompactionState, RewindState, SessionState } from '../../../../shared/reducer'
import { useAppStore, useSelection } from '../../store/app-store'
import { BarTooltip, findCall } from './BarTooltip'
import { placeTurn, type TurnGeometry } from './geometry'
import { callCount as turnCallCount, layoutTurn, type BarLayout, type TurnLayout } from './layout'
import { Legend } from './Legend'
import { shownTurn } from '../../lib/turn-numbers'
import { BreakBands, Ruler, type RunMark } from './Ruler'
import {
  buildTimeAxis,
  displayTime,
  fitPxPerMs,
  LABEL_WIDTH,
  MAX_PX_PER_MS,
  MIN_PX_PER_MS,
  PAD_RIGHT,
  xOf,
  type Scale,
} from './scale'
import { CompactionMarks } from './CompactionMarks'
import { REWIND_MARK_PX, RewindMarks, rewindMarkX } from './RewindMarks'
import { TurnRow } from './TurnRow'
import { useLiveGrowth } from './use-live-growth'
import { Button } from '../../components/Button'

/**
 * The timeline of lanes: per turn with tool calls, the parallel lane (calls that ran together, one row each
 * while they overlap) and the serial lane (writes and commands one after the other, skipped siblings below
 * them), on one time axis shared by the whole session, its idle stretches squeezed (scale.ts). "Fit" frames the
 * whole session, every run of it, with a flag where each run starts.
 */

const RULER = 26
const NO_REWINDS: readonly RewindState[] = []
const NO_COMPACTIONS: readonly CompactionState[] = []

export function Timeline() {
  const { view, head, replay } = useAppStore(
    useShallow((s) => ({ view: s.view, head: s.timeline?.head, replay: s.replay })),
  )
  const { selectedCallId, selectedRewindId, selectedFrom, selectionCount, selectCall, selectRewind } =
    useSelection()
  const scrollRef = useRef<HTMLDivElement>(null)
  const [width, setWidth] = useState(800)
  // The pane's height: a smaller window follows the run again (its latest turn kept in view).
  const [paneHeight, setPaneHeight] = useState(0)
  /** null: fit the whole session (and keep fitting while it grows); a number: the user's zoom. */
  const [zoom, setZoom] = useState<number | null>(null)
  const [hover, setHover] = useState<{ callId: string; x: number; y: number } | null>(null)

  const running = view?.status === 'running' && !replay.active
  // "now" for the axis: the replay position, the wall clock while running, else the last event.
  const [clock, setClock] = useState(() => Date.now())
  const now = replay.active
    ? replay.at
    : running
      ? Math.max(clock, view?.lastEventAt ?? 0)
      : (view?.lastEventAt ?? clock)

  // A replay keeps the axis of the whole session, so bars appear on a still scale as the position moves (and a
  // scrub does not re-lay out the timeline).
  const axisSource = replay.active ? head : view
  const axisTurns = axisSource?.turns
  const axisLastAt = axisSource?.lastEventAt
  const axisOrigin = axisSource?.firstEventAt
  const time = useMemo(
    () =>
      buildTimeAxis(
        { turns: axisTurns ?? [], firstEventAt: axisOrigin ?? 0 } as SessionState,
        running ? Number.POSITIVE_INFINITY : (axisLastAt ?? 0),
      ),
    [axisTurns, axisOrigin, axisLastAt, running],
  )
  const origin = time.origin
  const fitNow = replay.active ? (head?.lastEventAt ?? now) : now
  // While fitting a live run, leave headroom so the scale changes only now and then, not every frame.
  const fitSpan = displayTime(time, fitNow) * (running ? 1.3 : 1.02)
  const pxPerMs = zoom ?? fitPxPerMs(fitSpan, width)
  const scale: Scale = useMemo(() => ({ origin, pxPerMs, time }), [origin, pxPerMs, time])
  const contentWidth = Math.max(
    width,
    LABEL_WIDTH + Math.max(fitSpan, displayTime(time, fitNow)) * pxPerMs + PAD_RIGHT,
  )

  // Turns without tool calls take no row: the lanes are about calls.
  const turns = view?.turns
  const layouts = useMemo(() => (turns ?? []).map(layoutTurn).filter((l) => turnCallCount(l) > 0), [turns])
  const geometries = useMemo(() => layouts.map((l) => placeTurn(l, scale)), [layouts, scale])

  const runs = axisSource?.runs
  const runMarks = useMemo((): RunMark[] => {
    if (!runs || runs.length < 2) return []
    return runs.map((r, i) => ({ runId: r.runId, at: r.startedAt, label: `Run ${i + 1}`, task: r.task }))
  }, [runs])
  // The first turn of each run carries the run's name, when there is more than one run.
  const runLabels = useMemo(() => {
    const labels = new Map<number, string>()
    if (runMarks.length === 0) return labels
    const seen = new Set<string | undefined>()
    for (const l of layouts) {
      if (seen.has(l.runId)) continue
      seen.add(l.runId)
      const mark = runMarks.find((m) => m.runId === l.runId)
      if (mark)
        labels.set(
          l.turn,
          `${mark.label}: ${mark.task.length > 48 ? mark.task.slice(0, 47) + '…' : mark.task}`,
        )
    }
    return labels
  }, [layouts, runMarks])

  useLayoutEffect(() => {
    const el = scrollRef.current
    if (!el) return
    const observer = new ResizeObserver(() => {
      setWidth(el.clientWidth)
      setPaneHeight(el.clientHeight)
    })
    observer.observe(el)
    setWidth(el.clientWidth)
    setPaneHeight(el.clientHeight)
    return () => observer.disconnect()
  }, [])

  // Fit mode frames the whole session from its start.
  useLayoutEffect(() => {
    const el = scrollRef.current
    // Writing scrollLeft forces a layout even when it does not move: only when it would.
    if (zoom === null && el && el.scrollLeft > 1) el.scrollLeft = 0
  }, [zoom, scale])

  // Turn heights come from their geometry, never from measuring. A key function new with every list makes the
  // virtualizer recompute its offsets in the same render (measure() would cost a second render).
  const getItemKey = useCallback((i: number) => geometries[i]?.layout.turn ?? i, [geometries])
  // The virtualizer's functions are read fresh every render here (nothing memoizes them), which is what the
  // lint rule warns about.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: geometries.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (i) => geometries[i]?.height ?? 60,
    getItemKey,
    overscan: 3,
  })

  // Following a run (live, waiting for a review, or a replay playing) keeps its latest turn in view, unless the user zoomed to look
  // around: its end when the turn fits, else its header (never scrolled past a turn's header).
  const following =
    zoom === null && (running || replay.playing || (view?.status === 'paused' && !replay.active))
  useEffect(() => {
    const el = scrollRef.current
    if (!following || !el || geometries.length === 0) return
    let start = 0
    for (let i = 0; i < geometries.length - 1; i++) start += (geometries[i] as TurnGeometry).height
    const last = geometries[geometries.length - 1] as TurnGeometry
    const target = Math.max(0, Math.min(start, start + last.height + RULER - el.clientHeight))
    if (Math.abs(el.scrollTop - target) > 1) virtualizer.scrollToOffset(target)
  }, [following, geometries, virtualizer, paneHeight])

  const nowLine = useRef<HTMLDivElement>(null)
  const registerGrowing = useLiveGrowth(running, scale, fitSpan, nowLine, setClock)

  // A card selected in the transcript (or a link followed): bring its bar into view.
  useEffect(() => {
    if (selectedFrom === 'timeline' || selectedFrom === null || selectedCallId === null) return
    const index = layouts.findIndex((l) => selectedIn(l, selectedCallId) !== null)
    if (index < 0) return
    virtualizer.scrollToIndex(index, { align: 'auto' })
    const g = geometries[index]
    const bar = [...(g?.parallel ?? []), ...(g?.serial ?? [])].find(
      (b) => b.bar.call.callId === selectedCallId,
    )
    const el = scrollRef.current
    if (bar && el) {
      const x = bar.x
      if (x < el.scrollLeft + LABEL_WIDTH || x > el.scrollLeft + el.clientWidth - 40) {
        el.scrollLeft = Math.max(0, x - LABEL_WIDTH - 40)
      }
    }
  }, [selectedCallId, selectedFrom, selectionCount, layouts, geometries, virtualizer])

  // A rewind picked in the transcript (or by a link): bring its mark into view.
  const rewinds = view?.rewinds ?? NO_REWINDS
  const rewindAts = useMemo(() => rewinds.map((r) => r.startedAt), [rewinds])
  useEffect(() => {
    const el = scrollRef.current
    const rewind = rewinds.find((r) => r.rewindId === selectedRewindId)
    if (selectedFrom === 'timeline' || !rewind || !el) return
    const x = rewindMarkX(scale, rewind)
    if (x < el.scrollLeft + LABEL_WIDTH || x > el.scrollLeft + el.clientWidth - REWIND_MARK_PX)
      el.scrollLeft = Math.max(0, x - LABEL_WIDTH - 40)
    // selectionCount: the same mark picked again comes back into view.
  }, [selectedRewindId, selectedFrom, selectionCount, rewinds, scale])

  const zoomBy = useCallback(
    (factor: number, anchorClientX?: number) => {
      const el = scrollRef.current
      const next = Math.min(MAX_PX_PER_MS, Math.max(MIN_PX_PER_MS, pxPerMs * factor))
      if (!el) return setZoom(next)
      // Keep the moment under the pointer (or the view's centre) where it is.
      const rect = el.getBoundingClientRect()
      const offset = anchorClientX === undefined ? el.clientWidth / 2 : anchorClientX - rect.left
      const d = (el.scrollLeft + offset - LABEL_WIDTH) / pxPerMs
      setZoom(next)
      requestAnimationFrame(() => {
        el.scrollLeft = Math.max(0, LABEL_WIDTH + d * next - offset)
      })
    },
    [pxPerMs],
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
          {runMarks.length > 1 ? `, ${runMarks.length} runs` : ''}
        </span>
        <Legend inline={width >= 1080} />
        <div className="toolbar" role="group" aria-label="Zoom">
          <Button look="icon" onClick={() => zoomBy(0.8)} aria-label="Zoom out" title="Zoom out (Ctrl+wheel)">
            −
          </Button>
          <Button look="icon" onClick={() => zoomBy(1.25)} aria-label="Zoom in" title="Zoom in (Ctrl+wheel)">
            +
          </Button>
          <Button
            look="small"
            className={zoom === null ? 'active' : ''}
            testId="timeline-fit"
            onClick={() => setZoom(null)}
            aria-pressed={zoom === null}
            title="Fit the whole session in view"
          >
            Fit
          </Button>
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
            style={{ width: contentWidth, height: virtualizer.getTotalSize() + RULER }}
          >
            <RewindMarks
              rewinds={rewinds}
              scale={scale}
              contentWidth={contentWidth}
              selectedRewindId={selectedRewindId}
              onSelect={selectRewind}
            />
            <CompactionMarks compactions={view?.compactions ?? NO_COMPACTIONS} scale={scale} />
            <Ruler
              scale={scale}
              scrollRef={scrollRef}
              width={contentWidth}
              runs={runMarks}
              rewindAts={rewindAts}
            />
            <BreakBands scale={scale} scrollRef={scrollRef} />
            <div
              ref={nowLine}
              className={`timeline-now ${replay.active ? 'replay' : ''}`}
              style={{ transform: `translateX(${xOf(scale, now)}px)` }}
              aria-hidden="true"
            />
            {virtualizer.getVirtualItems().map((item) => {
              const geometry = geometries[item.index] as TurnGeometry
              const layout = geometry.layout
              return (
                <TurnRow
                  key={layout.turn}
                  shown={shownTurn(turns, layout.turn)}
                  geometry={geometry}
                  top={item.start + RULER}
                  scale={scale}
                  contentWidth={contentWidth}
                  runLabel={runLabels.get(layout.turn)}
                  // Only a turn with a call still going draws up to "now": the others keep their props (and skip
                  // rendering) while a replay moves.
                  now={layout.end === undefined ? now : 0}
                  live={running}
                  // Likewise, only the turn holding the selected call sees the selection.
                  selectedCallId={selectedIn(layout, selectedCallId)}
                  rewinds={rewinds}
                  onSelect={selectCall}
                  onSelectRewind={selectRewind}
                  onHover={onHover}
                  registerGrowing={registerGrowing}
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
