import { useCallback, useEffect, useRef, useState, type UIEvent } from 'react'
import type { WritePreview } from '../../../../shared/events'
import {
  formatBytes,
  isPreviewableImage,
  LARGE_CHANGE_LINES,
  typeLabel,
  type ContentFacts,
} from '../../../../shared/file-content'
import { Modal } from '../../components/Modal'
import { trapTab } from '../../lib/focus-trap'
import { Button } from '../../components/Button'

/**
 * A change too large to show line by line, or a binary one, as the user judges it (issue 23): its facts (sizes,
 * exact line counts, type), the ends of a large text, an image's preview, and for a large change "open in
 * full", which pages through the whole diff from the engine as it scrolls. Approved or rejected whole: there
 * are no parts to pick and nothing to edit, and it says so.
 */

const n = (count: number): string => count.toLocaleString('en-US')

/** "PNG image, 12 KB" · "3 lines, 14 bytes": one side of a change, or a file a command left. */
export function describeContent(facts: Pick<ContentFacts, 'bytes' | 'binary' | 'lines' | 'mime'>): string {
  if (facts.binary) return `${typeLabel(facts.mime)}, ${formatBytes(facts.bytes)}`
  const lines = facts.lines === undefined ? '' : `${n(facts.lines)} ${facts.lines === 1 ? 'line' : 'lines'}, `
  return `${lines}${formatBytes(facts.bytes)}`
}

/** A text file a command left with more lines than a review shows one by one. */
export function isLargeText(facts: Pick<ContentFacts, 'binary' | 'lines'>): boolean {
  return !facts.binary && (facts.lines ?? 0) > LARGE_CHANGE_LINES
}

export function ChangeSummary({
  preview,
  fullDiff,
}: {
  preview: WritePreview & { show: 'large' | 'binary' }
  /** While the change waits for review: where "open in full" pages its diff from (absent on a finished card). */
  fullDiff?: { sessionId: string; callId: string }
}) {
  const [open, setOpen] = useState(false)
  const files = preview.files
  const before = files?.before ?? null
  const after = files?.after
  const binary = preview.show === 'binary'
  const changed = n((preview.added ?? 0) + (preview.removed ?? 0))
  return (
    <div className={`change-summary ${preview.show}`} data-testid="change-summary" data-show={preview.show}>
      <div className="change-summary-head">
        <span className="diff-path" title={preview.path}>
          {preview.path}
        </span>
        {before === null && <span className="badge">new file</span>}
        <span className="badge" data-testid="change-kind">
          {binary ? 'binary file' : 'large change'}
        </span>
        {preview.protected && (
          <span className="badge danger" data-testid="protected-badge">
            protected path
          </span>
        )}
      </div>
      <dl className="change-facts">
        <dt>Now</dt>
        <dd data-testid="facts-before">{before === null ? 'no file yet' : describeContent(before)}</dd>
        {after && (
          <>
            <dt>{binary ? (before === null ? 'Would be created' : 'Would become') : 'After'}</dt>
            <dd data-testid="facts-after">{describeContent(after)}</dd>
          </>
        )}
        {!binary && preview.added !== undefined && preview.removed !== undefined && (
          <>
            <dt>Lines</dt>
            <dd data-testid="facts-lines">
              <span className="added">{n(preview.added)} added</span>,{' '}
              <span className="removed">{n(preview.removed)} removed</span>
            </dd>
          </>
        )}
      </dl>
      {binary ? (
        <>
          {(before?.image !== undefined || after?.image !== undefined) && (
            <div className="change-images">
              {before && <ImageSide label="Now" facts={before} />}
              {after && <ImageSide label={before ? 'After' : 'New'} facts={after} />}
            </div>
          )}
          <p className="muted small" data-testid="change-whole-note">
            A binary file is not text: it is shown by its size and type, never as lines, and cannot be edited
            here.
            {!fullDiff
              ? ''
              : before === null
                ? ' Create it, or not.'
                : ' Replace it as a whole, or keep the file as it is.'}
          </p>
        </>
      ) : (
        <>
          {preview.excerpt && (
            <div className="change-excerpt">
              <Excerpt title="First lines of the new content" lines={preview.excerpt.head} from={1} />
              {preview.excerpt.tail.length > 0 && (
                <Excerpt
                  title="Last lines"
                  lines={preview.excerpt.tail}
                  from={preview.excerpt.tailFrom}
                  gap={preview.excerpt.tailFrom > preview.excerpt.head.length + 1}
                />
              )}
            </div>
          )}
          <p className="muted small" data-testid="change-whole-note">
            {fullDiff
              ? `Too large to show part by part (${changed} changed lines): approve or reject it as a whole. “Open in full” shows every line.`
              : `Too large to show line by line (${changed} changed lines).`}
          </p>
          {fullDiff && (
            <Button testId="open-in-full" onClick={() => setOpen(true)}>
              Open in full…
            </Button>
          )}
          {open && fullDiff && (
            <FullDiffDialog
              path={preview.path}
              sessionId={fullDiff.sessionId}
              callId={fullDiff.callId}
              onClose={() => setOpen(false)}
            />
          )}
        </>
      )}
    </div>
  )
}

function ImageSide({ label, facts }: { label: string; facts: ContentFacts }) {
  return (
    <figure className="change-image">
      {facts.image !== undefined && isPreviewableImage(facts.mime) ? (
        <img
          src={`data:${facts.mime};base64,${facts.image}`}
          alt={`${label}: ${typeLabel(facts.mime)}`}
          data-testid="change-image"
        />
      ) : (
        <div className="change-image-none muted small">
          {isPreviewableImage(facts.mime) ? 'Too large to preview' : 'No preview'}
        </div>
      )}
      <figcaption className="small">{label}</figcaption>
    </figure>
  )
}

function Excerpt({
  title,
  lines,
  from,
  gap,
}: {
  title: string
  lines: string[]
  from: number
  gap?: boolean
}) {
  return (
    <figure className="excerpt" data-testid="change-excerpt">
      <figcaption className="small muted">{gap ? `… ${title.toLowerCase()}` : title}</figcaption>
      <pre className="mono">
        {lines.map((line, i) => (
          <div key={i} className="excerpt-line">
            <span className="ln" aria-hidden="true">
              {from + i}
            </span>
            {line}
          </div>
        ))}
      </pre>
    </figure>
  )
}

/** Rows of the full diff drawn above and below the ones in view, so a quick scroll does not show blanks. */
const OVERSCAN = 30
const ROW_HEIGHT = 20
const PAGE = 1000

/**
 * Every line of a large change, drawn only where the user looks: the list is as tall as all its rows, the rows
 * in view (and a few around) are drawn, and their lines are asked for a page at a time as the user scrolls.
 */
function FullDiffDialog({
  path,
  sessionId,
  callId,
  onClose,
}: {
  path: string
  sessionId: string
  callId: string
  onClose(): void
}) {
  const dialogRef = useRef<HTMLDivElement>(null)
  const [total, setTotal] = useState<number | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [pages, setPages] = useState<ReadonlyMap<number, string[]>>(new Map())
  const [view, setView] = useState({ top: 0, height: 400 })
  const asked = useRef(new Set<number>())

  const load = useCallback(
    (page: number) => {
      if (asked.current.has(page)) return
      asked.current.add(page)
      void window.api
        .invoke('approval:diff', { sessionId, callId, from: page * PAGE, count: PAGE })
        .then((result) => {
          if (!result.ok) {
            setError(result.error)
            return
          }
          setTotal(result.value.total)
          setPages((now) => new Map(now).set(page, result.value.lines))
        })
    },
    [sessionId, callId],
  )

  useEffect(() => {
    const previous = document.activeElement as HTMLElement | null
    dialogRef.current?.querySelector<HTMLElement>('.full-diff-scroll')?.focus()
    const onKey = (event: KeyboardEvent): void => {
      if (event.key === 'Escape') {
        event.stopPropagation()
        onClose()
      } else if (dialogRef.current) trapTab(event, dialogRef.current)
    }
    window.addEventListener('keydown', onKey, true)
    return () => {
      window.removeEventListener('keydown', onKey, true)
      previous?.focus({ preventScroll: true })
    }
  }, [onClose])

  const first = Math.max(0, Math.floor(view.top / ROW_HEIGHT) - OVERSCAN)
  const last = Math.min(total ?? PAGE, Math.ceil((view.top + view.height) / ROW_HEIGHT) + OVERSCAN)
  useEffect(() => {
    for (let page = Math.floor(first / PAGE); page <= Math.floor(Math.max(first, last - 1) / PAGE); page++)
      load(page)
  }, [first, last, load])

  const onScroll = (event: UIEvent<HTMLDivElement>): void => {
    const el = event.currentTarget
    setView({ top: el.scrollTop, height: el.clientHeight })
  }
  const measure = useCallback((el: HTMLDivElement | null) => {
    if (el) setView((v) => ({ ...v, height: el.clientHeight }))
  }, [])

  const rows = []
  for (let i = first; i < last; i++) {
    const line = pages.get(Math.floor(i / PAGE))?.[i % PAGE]
    const kind =
      line === undefined
        ? 'loading'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+')
            ? 'add'
            : line.startsWith('-')
              ? 'del'
              : 'context'
    rows.push(
      <div
        key={i}
        className={`full-diff-row ${kind}`}
        style={{ top: i * ROW_HEIGHT, height: ROW_HEIGHT }}
        data-row={i}
      >
        <span className="ln" aria-hidden="true">
          {i + 1}
        </span>
        <span className="code">
          {line === undefined ? '…' : kind === 'hunk' ? line : `${mark(line)} ${line.slice(1)}`}
        </span>
      </div>,
    )
  }
  return (
    <Modal
      title={`The whole change to ${path}`}
      titleId="full-diff-title"
      testId="full-diff"
      className="full-diff"
      dialogRef={dialogRef}
      onClose={onClose}
    >
      <p className="muted small" data-testid="full-diff-total">
        {error ??
          (total === null
            ? 'Loading…'
            : `${n(total)} diff lines; they are loaded as you scroll. Close this to approve or reject the change.`)}
      </p>
      <div
        className="full-diff-scroll mono"
        ref={measure}
        onScroll={onScroll}
        tabIndex={0}
        role="region"
        aria-label={`Every line of the change to ${path}`}
      >
        <div className="full-diff-space" style={{ height: (total ?? 0) * ROW_HEIGHT }}>
          {rows}
        </div>
      </div>
    </Modal>
  )
}

function mark(line: string): string {
  return line.startsWith('+') ? '+' : line.startsWith('-') ? '−' : ' '
}
