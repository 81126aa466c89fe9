import { memo, useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { Usage } from '../../../../shared/events'
import type { RunState } from '../../../../shared/reducer'
import { MarkdownText } from '../../components/MarkdownText'
import { canRetry, failureLine, plainFailure, plainRunError } from '../../lib/failure'
import { callTitle, formatDuration } from '../../lib/format'
import { usageDetail, usageSummary } from '../../lib/usage'
import { useAppStore, useSelection } from '../../store/app-store'
import { FILES_SHOWN, RewindRow, TurnHeader } from '../rewind/RewindRow'
import { canUndo } from '../rewind/UndoButton'
import { rewindRowKey } from '../rewind/rewind-summary'
import { CompactionRow } from '../context/CompactionRow'
import { folderRowCount, PATHS_SHOWN } from './CommandChanges'
import { ContinueRunButton } from './ContinueRunButton'
import { transcriptRows, type TranscriptRow } from './rows'
import { Narration, RetryNotice, RunEndExplanation, ThinkingSection, WaitNotice } from './ModelNotes'
import { liveTailOf, ToolCard } from './ToolCard'
import { useTailList } from './use-tail-list'
import { own } from '../../../../shared/own'
import { Button } from '../../components/Button'
import type { ToolCallState } from '../../../../shared/tool-call'

/**
 * The conversation: tasks, the model's text, one card per tool call, how each run ended. Virtualized (only the
 * rows in view and a few around them are mounted) and kept at the bottom while a run is live, unless the user
 * scrolled up to read.
 */
export function Transcript() {
  const { view, replayActive, replayPlaying } = useAppStore(
    useShallow((s) => ({
      view: s.transcriptView,
      replayActive: s.replay.active,
      replayPlaying: s.replay.playing,
    })),
  )
  const { selectedCallId, selectedRewindId, selectedFrom, selectionCount, selectCall } = useSelection()
  const rows = useMemo(() => (view ? transcriptRows(view) : []), [view])
  const keys = useMemo(() => rows.map((r) => r.key), [rows])
  const estimateAt = useCallback((i: number) => estimate(rows[i]), [rows])
  const scrollRef = useRef<HTMLDivElement>(null)
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(() => new Set())
  const shapeAt = useCallback((i: number) => shapeOf(rows[i], expanded), [rows, expanded])

  // A playing replay follows the playhead, whatever was picked before; a replay held still shows the end of the
  // moment scrubbed to; a live run stays at its newest row unless the user scrolled up to read; a card picked on
  // the timeline stays in view while the run goes on.
  const list = useTailList({
    keys,
    estimate: estimateAt,
    shape: shapeAt,
    follow: replayPlaying
      ? 'always'
      : selectedFrom === 'timeline' || selectedFrom === 'link'
        ? 'never'
        : replayActive
          ? 'always'
          : 'when-at-end',
    scrollRef,
    padStart: 10,
    padEnd: 10,
  })

  // A bar clicked on the timeline, or a link followed (a rewind's calls, a struck card's rewind): bring its row
  // into view and focus it (the highlight follows `selected`).
  const { scrollToKey } = list
  useEffect(() => {
    if (selectedFrom === 'transcript' || selectedFrom === null) return
    const target =
      selectedCallId !== null
        ? { key: selectedCallId, focus: `[data-call-id="${CSS.escape(selectedCallId)}"] .tool-card-toggle` }
        : selectedRewindId !== null
          ? {
              key: rewindRowKey(selectedRewindId),
              focus: `[data-rewind-id="${CSS.escape(selectedRewindId)}"] .rewind-row-title`,
            }
          : null
    if (!target) return
    scrollToKey(target.key)
    // Focus once the row is mounted and in place, unless the user has gone on elsewhere meanwhile (clicked into a
    // note, say): focus never moves by itself.
    const from = document.activeElement
    const timer = setTimeout(() => {
      if (document.activeElement !== from) return
      scrollRef.current?.querySelector<HTMLElement>(target.focus)?.focus({ preventScroll: true })
    }, 120)
    return () => clearTimeout(timer)
    // selectionCount: the same row picked again comes back into view.
  }, [selectedCallId, selectedRewindId, selectedFrom, selectionCount, scrollToKey])

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
  const { items } = list
  return (
    <div className="transcript-scroll" ref={scrollRef} data-testid="transcript">
      <div className="transcript-inner" style={{ height: list.total }}>
        <div className="transcript-window" style={{ transform: `translateY(${items[0]?.start ?? 0}px)` }}>
          {items.map((item) => {
            const row = rows[item.index] as TranscriptRow
            return (
              <div
                key={item.slot}
                data-key={item.key}
                ref={list.slotRef(item.slot)}
                className={`transcript-row ${'rewoundBy' in row && row.rewoundBy ? 'rewound-turn' : ''}`}
                data-testid="transcript-row"
              >
                <Row
                  row={row}
                  selected={
                    (row.kind === 'call' && selectedCallId === row.call.callId) ||
                    (row.kind === 'rewind' && selectedRewindId === row.rewind.rewindId)
                  }
                  expanded={row.kind === 'call' && expanded.has(row.call.callId)}
                  onToggle={toggle}
                  onSelect={onSelectCard}
                  live={!replayActive}
                />
              </div>
            )
          })}
        </div>
      </div>
    </div>
  )
}

/** Text lines at the transcript's width, roughly: enough to tell a one-line text from a paragraph. */
function textLines(text: string): number {
  let lines = 0
  for (const line of text.split('\n')) lines += Math.max(1, Math.ceil(line.length / 90))
  return lines
}

/**
 * Rows that come out the same height (see TailList): the same kind of row with the same parts shown. Open cards
 * have no shape (their height is their own).
 */
function shapeOf(row: TranscriptRow | undefined, expanded: ReadonlySet<string>): string | undefined {
  if (row === undefined) return undefined
  if (row.kind === 'call' && expanded.has(row.call.callId)) return undefined
  // Rows are kept per turn object (rows.ts), so a scrub finds most shapes already worked out.
  let shape = shapes.get(row)
  if (shape === undefined) shapes.set(row, (shape = rowShape(row)))
  return shape
}

const shapes = new WeakMap<TranscriptRow, string>()

/**
 * What a row's height depends on at a given width, besides its text's length: rows of one shape come out equally
 * tall, so a row measured once teaches the height of every row of its shape (TailList). A shape that misses
 * something that changes the height makes a replay lay the transcript out twice whenever the other height turns up.
 */
export function rowShape(row: TranscriptRow): string {
  switch (row.kind) {
    case 'task':
      return `task:${textLines(row.run.task)}`
    case 'turn':
      return `turn:${row.rewoundBy ? 'r' : ''}`
    case 'compaction':
      return 'compaction'
    case 'rewind': {
      const { rewind } = row
      return `rewind:${rewind.status}:${rewind.changes.length}:${rewind.skipped.length}:${rewind.callIds.length}:${rewind.error ? textLines(rewind.error) : 0}`
    }
    case 'text':
      return `text:${textLines(row.text)}`
    case 'thinking':
      // Narration grows with its text; a closed Thinking section is one line.
      return row.narration && row.block.type === 'thinking'
        ? `narration:${textLines(row.block.thinking)}`
        : 'thinking'
    case 'call': {
      const { call } = row
      const bash = call.name === 'bash'
      const input = (typeof call.input === 'object' && call.input !== null ? call.input : {}) as Record<
        string,
        unknown
      >
      // The card shows the description on a line of its own when the title is not already it.
      const description =
        bash &&
        typeof input.description === 'string' &&
        typeof input.command === 'string' &&
        input.description !== '' &&
        input.command !== '' &&
        input.description !== callTitle(call)
      const note =
        call.status === 'skipped' ||
        call.approval?.decision === 'rejected' ||
        call.approval?.decision === 'approved'
      const live = liveTailOf(call)
      const liveLines = live === undefined ? 0 : live.split('\n').length
      // A change taken back has a note; one that can be taken back has its Undo button.
      const rewind = call.rewoundBy !== undefined ? 'r' : canUndo(call) ? 'u' : ''
      return `call:${bash ? 'bash' : 'tool'}:${description ? 'd' : ''}:${note ? 'n' : ''}:${rewind}:${liveLines}${failureShape(call)}${changesShape(call)}`
    }
    case 'run-end':
      return `end:${row.run.status}:${row.failedCalls > 0 ? 'f' : ''}`
    case 'working':
      return `working:${row.paused ? 'paused' : row.retry ? 'retry' : 'running'}`
  }
}

/**
 * A failed call's card says why under its header (lib/failure.ts: a plain explanation in two paragraphs, or one
 * line): as tall as its words, so their lengths are part of the shape. Without them a failed command and a
 * finished one shared a shape of two heights, and a replay re-rendered the transcript whenever it mounted the one
 * the estimate did not expect.
 */
function failureShape(call: ToolCallState): string {
  const plain = plainFailure(call)
  if (plain !== undefined) return `:p${plain.what.length}.${plain.next.length}`
  const line = failureLine(call)
  return line === undefined ? '' : `:f${line.length}`
}

/**
 * The lines a card adds for what a command changed or held back (CommandChanges) and for a write approved in parts
 * (HunkOutcome).
 */
function changesShape(call: ToolCallState): string {
  const changes = call.metadata?.changes as { paths?: unknown; error?: unknown } | undefined
  const paths = changes && Array.isArray(changes.paths) ? Math.min(changes.paths.length, PATHS_SHOWN + 1) : -1
  const hunks = call.approval?.decision === 'approved' ? (call.approval.hunks?.length ?? -1) : -1
  const { held } = call
  if (paths < 0 && hunks < 0 && held === undefined) return ''
  const heldShape =
    held === undefined
      ? ''
      : `${held.pending ?? '-'}${held.pending === false ? Math.min(held.rejected?.length ?? 0, PATHS_SHOWN) : held.paths.map((p) => p.relPath).join(',').length}`
  return `:c${paths}${changes?.error === undefined ? '' : 'e'}:g${folderRowCount(changes)}:h${hunks}:${heldShape}`
}

function estimate(row: TranscriptRow | undefined): number {
  switch (row?.kind) {
    case 'task':
      return 80
    case 'turn':
      return 28
    case 'compaction':
      return 44
    case 'rewind':
      return 96 + 22 * (Math.min(row.rewind.changes.length, FILES_SHOWN + 1) + row.rewind.skipped.length)
    case 'text':
      return Math.min(400, 13 + textLines(row.text) * 21)
    case 'thinking':
      return row.narration && row.block.type === 'thinking'
        ? Math.min(400, 13 + textLines(row.block.thinking) * 21)
        : 32
    case 'call':
      return row.call.name === 'bash' ? 79 : 43
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
  selected: boolean
  expanded: boolean
  onToggle(callId: string): void
  onSelect(callId: string): void
  /** Not a replay: a wait's elapsed time is measured against the clock, which means nothing in a replay. */
  live: boolean
}

const Row = memo(function Row({ row, selected, expanded, onToggle, onSelect, live }: RowProps) {
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
    case 'turn':
      return <TurnHeader turn={row.turn} firstCallId={row.firstCallId} rewoundBy={row.rewoundBy} />
    case 'rewind':
      return <RewindRow rewind={row.rewind} selected={selected} />
    case 'compaction':
      return <CompactionRow compaction={row.compaction} />
    case 'text':
      return (
        <div className="assistant-text" data-testid="assistant-text">
          <MarkdownText text={row.text} />
        </div>
      )
    case 'thinking':
      return row.narration ? <Narration block={row.block} /> : <ThinkingSection block={row.block} />
    case 'call': {
      const { call, cause } = row
      return (
        <ToolCard
          call={call}
          cause={cause}
          selected={selected}
          expanded={expanded}
          onToggle={onToggle}
          onSelect={onSelect}
        />
      )
    }
    case 'run-end':
      return <RunEnd run={row.run} failedCalls={row.failedCalls} usage={row.usage} />
    case 'working':
      return (
        <div className="working" data-testid="working">
          {row.paused ? (
            'Waiting for your review…'
          ) : row.retry ? (
            <>
              <span className="spinner" aria-hidden="true" /> <RetryNotice retry={row.retry} />
            </>
          ) : (
            <>
              <span className="spinner" aria-hidden="true" />{' '}
              {row.wait && live ? <WaitNotice wait={row.wait} /> : 'Working…'}
            </>
          )}
        </div>
      )
  }
})

const REASONS: Record<string, string> = {
  end_turn: 'The agent finished.',
  max_turns: 'Stopped at the turn limit.',
  max_tokens: 'The model hit its output limit; the cut-off call was not run.',
  stop_sequence: 'The agent finished.',
  refusal: 'The model declined to continue.',
  context_window_exceeded: 'The conversation no longer fits the model’s context.',
  unknown_stop: 'The model stopped.',
}

function RunEnd({ run, failedCalls, usage }: { run: RunState; failedCalls: number; usage?: Usage }) {
  // Set apart from the sentence before it and named, so a duration never reads as part of an error message
  // ("invalid x-api-key 32 ms").
  const took = (
    <>
      {run.endedAt !== undefined && (
        <span className="muted run-took" data-testid="run-took">
          {' · '}took {formatDuration(run.endedAt - run.startedAt)}
        </span>
      )}
      {usage && <RunUsage usage={usage} />}
    </>
  )
  switch (run.status) {
    case 'finished':
      // A run in which calls failed is not a plain success: say so, and where to look.
      return failedCalls > 0 ? (
        <div className="run-end finished with-failures" data-testid="run-end" data-status="finished">
          <span aria-hidden="true">⚠</span> {own(REASONS, run.reason ?? 'end_turn') ?? 'Finished.'}{' '}
          {failedCalls === 1 ? 'One call failed' : `${failedCalls} calls failed`} on the way (marked in red
          above).{took}
          <RunEndExplanation run={run} />
        </div>
      ) : (
        <div className="run-end finished" data-testid="run-end" data-status="finished">
          ✓ {own(REASONS, run.reason ?? 'end_turn') ?? 'Finished.'}
          {took}
          <RunEndExplanation run={run} />
        </div>
      )
    case 'failed':
      return (
        <div className="run-end failed" data-testid="run-end" data-status="failed" role="alert">
          ✕ The run failed: {plainRunError(run.error)}
          {took}
          <RunEndExplanation run={run} />
          {run.errorKind === 'auth' && <OpenSettingsButton />}
          {canRetry(run) && <ContinueButton runId={run.runId} />}
        </div>
      )
    case 'stopped':
      return (
        <div className="run-end stopped" data-testid="run-end" data-status="stopped">
          ■ You stopped the run.{took}
        </div>
      )
    case 'running':
    case 'paused':
      return null
  }
}

/** A refused key is fixed in Settings: one click there, rather than a hunt for the gear. */
function OpenSettingsButton() {
  const setSettingsOpen = useAppStore((s) => s.setSettingsOpen)
  return (
    <Button look="small" testId="run-end-settings" onClick={() => setSettingsOpen(true)}>
      Open Settings
    </Button>
  )
}

/** Continue for the session's last run, when it failed in a way a new attempt can get past. */
function ContinueButton({ runId }: { runId: string }) {
  const { last, live } = useAppStore(
    useShallow((s) => ({
      last: s.view?.runs[s.view.runs.length - 1]?.runId === runId && !s.replay.active,
      live: s.view?.status === 'running' || s.view?.status === 'paused',
    })),
  )
  if (!last || live) return null
  return <ContinueRunButton />
}

/** A run's tokens and their estimated cost, priced at the session's model. */
function RunUsage({ usage }: { usage: Usage }) {
  const settings = useAppStore((s) => s.view?.session?.settings)
  if (!settings) return null
  return (
    <span
      className="muted run-usage"
      data-testid="run-usage"
      title={usageDetail(usage, settings.model, settings.demo)}
    >
      {' · '}
      {usageSummary(usage, settings.model, settings.demo)}
    </span>
  )
}
