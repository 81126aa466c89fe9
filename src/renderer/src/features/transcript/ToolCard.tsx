import { CommandChanges } from './CommandChanges'
import { memo, useState } from 'react'
import type { ToolCallState } from '../../../../shared/tool-call'
import { AnsiText } from '../../components/AnsiText'
import { resultForPeople, resultImages } from '../../../../shared/result-text'
import { failureLine, plainFailure } from '../../lib/failure'
import { callTitle, formatDuration, skipReason, statusLabel } from '../../lib/format'
import { DiffView } from '../../lazy-views'
import { HunkOutcome } from '../rewind/HunkOutcome'
import { RewoundNote, useKeptReason } from '../rewind/RewindRow'
import { UndoButton } from '../rewind/UndoButton'
import { Button } from '../../components/Button'

/** Output longer than this is cut in the card until the user asks for all of it (rendering 1 MB of text stalls). */
const OUTPUT_PREVIEW_CHARS = 20_000
/** Lines of live output shown while a command runs. */
const LIVE_LINES = 14

interface ToolCardProps {
  call: ToolCallState
  cause?: ToolCallState
  selected: boolean
  expanded: boolean
  onToggle(callId: string): void
  onSelect(callId: string): void
}

function field(input: unknown, name: string): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined
  const value = (input as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

export const ToolCard = memo(function ToolCard({
  call,
  cause,
  selected,
  expanded,
  onToggle,
  onSelect,
}: ToolCardProps) {
  const title = callTitle(call)
  const isBash = call.name === 'bash'
  const command = isBash ? field(call.input, 'command') : undefined
  const description = isBash ? field(call.input, 'description') : undefined
  const preview = call.approval?.preview
  const liveTail = liveTailOf(call)
  // A failed call in plain words (lib/failure.ts); a cancelled one keeps its one line.
  const plain = plainFailure(call)
  const failure = plain === undefined ? failureLine(call) : undefined
  const kept = useKeptReason(call)
  return (
    <article
      className={`tool-card status-${call.status} ${plain?.handled ? 'handled' : ''} ${selected ? 'selected' : ''} ${call.rewoundBy && kept === undefined ? 'rewound' : ''}`}
      data-testid="tool-card"
      data-call-id={call.callId}
      data-status={call.status}
      data-rewound={call.rewoundBy ?? undefined}
      aria-label={`${title}: ${statusLabel(call.status)}`}
    >
      <header className="tool-card-header">
        <button
          type="button"
          className="tool-card-toggle"
          aria-expanded={expanded}
          onClick={() => {
            onSelect(call.callId)
            onToggle(call.callId)
          }}
        >
          <span className={`status-dot status-${call.status}`} aria-hidden="true" />
          <span className="tool-card-title">{title}</span>
          {call.server !== undefined && (
            <span className="badge tool-card-server" data-testid="tool-card-server" title="MCP server">
              {call.server}
            </span>
          )}
          <span className="tool-card-meta">
            <span className={`status-text status-${call.status}`}>
              {plain?.label ?? statusLabel(call.status)}
            </span>
            {call.durationMs !== undefined && (
              <span className="muted">{formatDuration(call.durationMs)}</span>
            )}
            <span className="chevron" aria-hidden="true">
              {expanded ? '▾' : '▸'}
            </span>
          </span>
        </button>
      </header>
      {plain !== undefined && (
        <div className="failure-plain" data-testid="failure-reason" data-handled={plain.handled}>
          <p className="failure-what">{plain.what}</p>
          <p className="failure-next">{plain.next}</p>
          <details className="failure-for-model" data-testid="failure-for-model">
            <summary>What the agent was told</summary>
            <pre className="output">{plain.forModel}</pre>
          </details>
        </div>
      )}
      {failure !== undefined && (
        <p className="failure-line" data-testid="failure-reason">
          {failure}
        </p>
      )}
      {isBash && (description || command) && (
        <div className="bash-summary">
          {description && command && description !== title && (
            <div className="muted small">{description}</div>
          )}
          {command && (
            <code className="bash-command" data-testid="bash-command">
              <span className="prompt" aria-hidden="true">
                ${' '}
              </span>
              {command}
            </code>
          )}
        </div>
      )}
      {call.status === 'skipped' && (
        <p className="skip-note">
          Not run: {skipReason(cause)}.{' '}
          {call.causeCallId && (
            <Button look="link" onClick={() => onSelect(call.causeCallId as string)}>
              Show the failed call
            </Button>
          )}
        </p>
      )}
      {call.approval?.decision === 'rejected' && (
        <p className="decision-note rejected">
          You rejected this{call.approval.note ? `: “${call.approval.note}”` : '.'}
        </p>
      )}
      {call.approval?.decision === 'approved' && !call.approval.hunks && (
        <p className="decision-note approved">
          Approved{call.approval.always ? ' (always allowed in this folder)' : ''}
          {call.approval.note ? `: “${call.approval.note}”` : ''}
        </p>
      )}
      <HunkOutcome call={call} />
      {isBash && <CommandChanges call={call} />}
      {call.rewoundBy !== undefined && <RewoundNote rewindId={call.rewoundBy} kept={kept} />}
      <UndoButton call={call} />
      {liveTail !== undefined && (
        <pre className="output live" data-testid="live-output" aria-live="off">
          <AnsiText text={liveTail} />
        </pre>
      )}
      {expanded && (
        // Keyed by call: the transcript reuses a card's element for another call (TailList slots), and what the
        // body remembers (show all, diff layout) belongs to this one.
        <div className="tool-card-body" key={call.callId}>
          {preview?.kind === 'write' && <DiffView preview={preview} decisions={call.approval?.hunks} />}
          {call.status === 'skipped' ? null : call.output !== undefined ? (
            <>
              <Output text={resultForPeople(call.output)} ansi={isBash} />
              <ResultImages call={call} />
            </>
          ) : call.live ? (
            <pre className="output">
              <AnsiText text={call.live.tail} />
            </pre>
          ) : (
            <div className="muted small">No output yet.</div>
          )}
          {!isBash && call.input !== null && call.input !== undefined && (
            <details className="args">
              <summary>Arguments</summary>
              <pre className="output">{JSON.stringify(call.input, null, 2)}</pre>
            </details>
          )}
          {call.rawInput !== undefined && (
            <details className="args">
              <summary>Arguments as the model sent them</summary>
              <pre className="output">{call.rawInput}</pre>
            </details>
          )}
        </div>
      )}
    </article>
  )
})

/** The live output a running command's card shows, if any. */
export function liveTailOf(call: ToolCallState): string | undefined {
  return call.status === 'running' && call.live ? lastLines(call.live.tail, LIVE_LINES) : undefined
}

function lastLines(text: string, n: number): string {
  let pos = text.length
  for (let i = 0; i < n && pos > 0; i++) pos = text.lastIndexOf('\n', pos - 2)
  return pos <= 0 ? text : text.slice(pos + 1)
}

function Output({ text, ansi }: { text: string; ansi: boolean }) {
  const [all, setAll] = useState(false)
  const cut = !all && text.length > OUTPUT_PREVIEW_CHARS
  const shown = cut ? text.slice(0, OUTPUT_PREVIEW_CHARS) : text
  return (
    <>
      <pre className="output" data-testid="tool-output">
        {ansi ? <AnsiText text={shown} /> : shown}
      </pre>
      {cut && (
        <Button look="link" onClick={() => setAll(true)}>
          Show all ({Math.round(text.length / 1024)} KB)
        </Button>
      )}
    </>
  )
}

/** Images a tool returned (an MCP server's), as the model got them. */
function ResultImages({ call }: { call: ToolCallState }) {
  const images = resultImages(call.metadata)
  if (images.length === 0) return null
  return (
    <div className="tool-images" data-testid="tool-images">
      {images.map((image, i) => (
        <img
          key={i}
          src={`data:${image.mediaType};base64,${image.data}`}
          alt={`Image ${i + 1} returned by ${call.server ?? call.name}`}
        />
      ))}
    </div>
  )
}
