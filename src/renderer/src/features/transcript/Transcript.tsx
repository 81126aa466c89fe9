import { useVirtualizer } from '@tanstack/react-virtual'
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { RunState, SessionState } from '../../../../shared/reducer'
import { formatDuration } from '../../lib/format'
import { useAppStore } from '../../store/app-store'
import { transcriptRows, type TranscriptRow } from './rows'
import { ToolCard } from './ToolCard'

/**
 * The conversation: tasks, the model's text, one card per tool call, how each run ended. Virtualized (only the
 * rows in view and a few around them are mounted) and kept at the bottom while a run is live, unless the user
 * scrolled up to read.
 */
export function Transcript() {
  const { view, selectedCallId, selectedFrom, selectCall, replayActive } = useAppStore(
    useShallow((s) => ({
      view: s.view,
      selectedCallId: s.selectedCallId,
      selectedFrom: s.selectedFrom,
      selectCall: s.selectCall,
      replayActive: s.replay.active,
    })),
  )
  const rows = useMemo(() => (view ? transcriptRows(view) : []), [view])
  const scrollRef = useRef<HTMLDivElement>(null)
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(() => new Set())
  const stickToBottom = useRef(true)

  // The virtualizer's functions change identity with its state; this component re-renders with it on purpose.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (i) => estimate(rows[i]),
    getItemKey: (i) => rows[i]?.key ?? i,
    // One row beyond each edge keeps scrolling seamless while mounting at most about twice the rows in view.
    overscan: 1,
  })

  const onScroll = useCallback(() => {
    const el = scrollRef.current
    if (el) stickToBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 48
  }, [])

  // Stay at the newest row. A plain scrollTop write costs one layout; the virtualizer's scrollToIndex would
  // re-check over several frames, which a replay scrubbed every frame cannot afford. Rows measured taller than
  // estimated change the total size, which runs this again.
  const totalSize = virtualizer.getTotalSize()
  useLayoutEffect(() => {
    const el = scrollRef.current
    if (!el || rows.length === 0 || selectedFrom === 'timeline') return
    if (stickToBottom.current || replayActive) el.scrollTop = el.scrollHeight
  }, [rows, totalSize, replayActive, selectedFrom])

  // A bar clicked on the timeline: scroll its card into view (the highlight follows `selected`).
  useEffect(() => {
    if (selectedFrom !== 'timeline' || selectedCallId === null) return
    const index = rows.findIndex((r) => r.kind === 'call' && r.call.callId === selectedCallId)
    if (index < 0) return
    stickToBottom.current = false
    virtualizer.scrollToIndex(index, { align: 'center' })
    // scrollToIndex does its own corrections as rows get measured; focus after it settled.
    const timer = setTimeout(() => {
      const card = scrollRef.current?.querySelector<HTMLElement>(
        `[data-call-id="${CSS.escape(selectedCallId)}"] .tool-card-toggle`,
      )
      card?.focus({ preventScroll: true })
    }, 120)
    return () => clearTimeout(timer)
    // Only a new selection scrolls; new rows arriving must not pull the view back to it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selectedCallId, selectedFrom])

  const toggle = useCallback((callId: string) => {
    setExpanded((prev) => {
      const next = new Set(prev)
      if (next.has(callId)) next.delete(callId)
      else next.add(callId)
      return next
    })
  }, [])
  const onSelectCard = useCallback((callId: string) => selectCall(callId, 'transcript'), [selectCall])

  if (!view) return null
  const items = virtualizer.getVirtualItems()
  return (
    <div className="transcript-scroll" ref={scrollRef} onScroll={onScroll} data-testid="transcript">
      <div className="transcript-inner" style={{ height: totalSize }}>
        <div className="transcript-window" style={{ transform: `translateY(${items[0]?.start ?? 0}px)` }}>
          {items.map((item) => {
            const row = rows[item.index] as TranscriptRow
            return (
              <div
                key={item.key}
                data-index={item.index}
                ref={virtualizer.measureElement}
                className="transcript-row"
                data-testid="transcript-row"
              >
                <Row
                  row={row}
                  view={view}
                  selectedCallId={selectedCallId}
                  expanded={expanded}
                  onToggle={toggle}
                  onSelect={onSelectCard}
                />
              </div>
            )
          })}
        </div>
      </div>
    </div>
  )
}

function estimate(row: TranscriptRow | undefined): number {
  switch (row?.kind) {
    case 'task':
      return 72
    case 'text':
      return Math.min(400, 28 + Math.ceil(row.text.length / 90) * 21)
    case 'call':
      return row.call.name === 'bash' ? 86 : 52
    case 'run-end':
      return 44
    case 'working':
      return 40
    case undefined:
      return 50
  }
}

interface RowProps {
  row: TranscriptRow
  view: SessionState
  selectedCallId: string | null
  expanded: ReadonlySet<string>
  onToggle(callId: string): void
  onSelect(callId: string): void
}

function Row({ row, view, selectedCallId, expanded, onToggle, onSelect }: RowProps) {
  switch (row.kind) {
    case 'task':
      return (
        <div className="task-row">
          <div className="task-label">{row.number === 1 ? 'Task' : `Follow-up ${row.number - 1}`}</div>
          <div className="task-text" data-testid="task-text">
            {row.run.task}
          </div>
        </div>
      )
    case 'text':
      return (
        <div className="assistant-text" data-testid="assistant-text">
          <InlineMarkdown text={row.text} />
        </div>
      )
    case 'call': {
      const { call } = row
      const cause = call.causeCallId ? findCall(view, call.causeCallId) : undefined
      return (
        <ToolCard
          call={call}
          cause={cause}
          selected={selectedCallId === call.callId}
          expanded={expanded.has(call.callId)}
          onToggle={onToggle}
          onSelect={onSelect}
        />
      )
    }
    case 'run-end':
      return <RunEnd run={row.run} />
    case 'working':
      return (
        <div className="working" data-testid="working">
          {row.paused ? (
            'Waiting for your review…'
          ) : (
            <>
              <span className="spinner" aria-hidden="true" /> Working…
            </>
          )}
        </div>
      )
  }
}

/**
 * The two inline forms models use all the time, **bold** and `code`, as React elements; everything else stays
 * text (never parsed as HTML).
 */
function InlineMarkdown({ text }: { text: string }) {
  const parts = text.split(/(\*\*[^*\n]+\*\*|`[^`\n]+`)/)
  return (
    <>
      {parts.map((part, i) =>
        i % 2 === 0 ? (
          part
        ) : part.startsWith('**') ? (
          <strong key={i}>{part.slice(2, -2)}</strong>
        ) : (
          <code key={i} className="inline-code">
            {part.slice(1, -1)}
          </code>
        ),
      )}
    </>
  )
}

function findCall(view: SessionState, callId: string) {
  for (let i = view.turns.length - 1; i >= 0; i--) {
    const call = view.turns[i]?.calls[callId]
    if (call) return call
  }
  return undefined
}

const REASONS: Record<string, string> = {
  end_turn: 'The agent finished.',
  max_turns: 'Stopped at the turn limit.',
  no_tool_calls: 'The agent finished.',
  max_tokens: 'The model hit its output limit; the cut-off call was not run.',
  stop_sequence: 'The agent finished.',
  refusal: 'The model declined to continue.',
  context_window_exceeded: 'The conversation no longer fits the model’s context.',
}

function RunEnd({ run }: { run: RunState }) {
  const took = run.endedAt !== undefined ? formatDuration(run.endedAt - run.startedAt) : ''
  switch (run.status) {
    case 'finished':
      return (
        <div className="run-end finished" data-testid="run-end" data-status="finished">
          ✓ {REASONS[run.reason ?? 'end_turn'] ?? 'Finished.'} <span className="muted">{took}</span>
        </div>
      )
    case 'failed':
      return (
        <div className="run-end failed" data-testid="run-end" data-status="failed" role="alert">
          ✕ The run failed: {run.error ?? 'unknown error'} <span className="muted">{took}</span>
        </div>
      )
    case 'stopped':
      return (
        <div className="run-end stopped" data-testid="run-end" data-status="stopped">
          ■ You stopped the run. <span className="muted">{took}</span>
        </div>
      )
    case 'running':
    case 'paused':
      return null
  }
}
