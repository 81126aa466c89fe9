import { memo, useMemo, useState, type ComponentType } from 'react'
import type { DiffHunk, HunkDecision, WritePreview } from '../../../../shared/events'
import {
  diffLines,
  diffStats,
  editedHunk,
  splitRows,
  type DiffLine,
  type SplitRow,
  type UnifiedRow,
} from '../../lib/diff-rows'
import { languageOf, type Token } from '../../lib/highlight'
import type { HunkChoices, HunkState } from '../rewind/hunk-choices'
import { ChangeSummary } from './ChangeSummary'
import { Button } from '../../components/Button'

/** Rows drawn before "show all": a 10,000-line rewrite must not freeze the review screen. */
const ROW_CAP = 400

type Layout = 'unified' | 'split'

/** Remembered for the session: a reviewer who prefers side by side wants it on every file. */
let preferredLayout: Layout = 'unified'

/** A write or edit as a diff: unified or side by side, syntax-highlighted, numbered, capped with "show all". */
/** How a part the user did not take as proposed is marked (per-hunk review, live and on the finished card). */
const PART_MARK = { rejected: 'left out', edited: 'edited by you', accepted: '' } as const

/**
 * The parts of a change under review, drawn inside the diff (issue 23: the diff once, with its parts in it): each
 * part's header row carries its controls (`Head`), and a row after its lines its fields (`Fields`). The
 * components and `update` are stable, so a key on one part redraws that part alone (a change may have 500).
 */
export interface PartReview {
  update(index: number, patch: Partial<HunkState>): void
  Head: ComponentType<PartProps>
  Fields: ComponentType<PartProps>
}

export interface PartProps {
  hunk: DiffHunk
  index: number
  s: HunkState | undefined
  update(index: number, patch: Partial<HunkState>): void
  /** How many of the part's lines are not drawn (past the diff's cap, until "Show all"). */
  hidden?: number
}

export interface DiffViewProps {
  preview: WritePreview
  /** Per-hunk decisions: parts left out are struck through, edited ones show the user's lines and say so. */
  decisions?: readonly HunkDecision[]
  /** Under review: the parts' controls (one object for the life of the review) and their choices so far. */
  review?: PartReview
  states?: HunkChoices
}

/** A large or binary change is shown by its summary (ChangeSummary), never as lines. */
export function isSummarized(preview: WritePreview): preview is WritePreview & { show: 'large' | 'binary' } {
  return preview.show === 'large' || preview.show === 'binary'
}

export const DiffView = memo(function DiffView(props: DiffViewProps) {
  return isSummarized(props.preview) ? <ChangeSummary preview={props.preview} /> : <TextDiff {...props} />
})

function TextDiff({ preview, decisions, review, states }: DiffViewProps) {
  const marks = useMemo(() => new Map(decisions?.map((d) => [d.index, d.decision])), [decisions])
  const [layout, setLayoutState] = useState<Layout>(preferredLayout)
  const [showAll, setShowAll] = useState(false)
  const language = languageOf(preview.path)
  // The hunks as they will land: an edited part is the user's text, not the agent's.
  const hunks = useMemo(() => {
    const edits = new Map(
      decisions?.flatMap((d) => (d.decision === 'edited' && d.text !== undefined ? [[d.index, d.text]] : [])),
    )
    return preview.hunks.map((hunk, i) => {
      const text = edits.get(i)
      return text === undefined ? hunk : editedHunk(hunk, text)
    })
  }, [preview.hunks, decisions])
  const stats = useMemo(() => diffStats(hunks), [hunks])
  // Rows per part, each computed once per hunk object (an edit replaces only its own).
  const parts = hunks.map((hunk, i) => rowsOf(hunk, i, language, layout))
  const total = parts.reduce((n, rows) => n + rows.length, 0)
  const capped = !showAll && total > ROW_CAP
  const isNew = preview.before === null
  const setLayout = (next: Layout): void => {
    preferredLayout = next
    setLayoutState(next)
  }
  // How many rows of each part are drawn: all, until the cap is spent.
  const shownOf: number[] = []
  parts.reduce(
    (left, rows) => {
      shownOf.push(Math.max(0, Math.min(rows.length, left)))
      return left - rows.length
    },
    capped ? ROW_CAP : Infinity,
  )

  return (
    <div className="diff" data-testid="diff-view" data-layout={layout}>
      <div className="diff-toolbar">
        <span className="diff-path" title={preview.path}>
          {preview.path}
        </span>
        {isNew && <span className="badge">new file</span>}
        {preview.protected && (
          <span
            className="badge danger"
            data-testid="protected-badge"
            title="Protected paths are always reviewed"
          >
            protected path
          </span>
        )}
        <span className="diff-stats">
          <span className="added">+{stats.added}</span> <span className="removed">−{stats.removed}</span>
        </span>
        <div className="segmented" role="group" aria-label="Diff layout">
          <button
            type="button"
            aria-pressed={layout === 'unified'}
            data-testid="diff-unified"
            onClick={() => setLayout('unified')}
          >
            Unified
          </button>
          <button
            type="button"
            aria-pressed={layout === 'split'}
            data-testid="diff-split"
            onClick={() => setLayout('split')}
          >
            Side by side
          </button>
        </div>
      </div>
      {preview.hunks.length === 0 ? (
        <div className="diff-empty muted">
          {preview.truncated
            ? 'This change is too large to preview here.'
            : 'No changes to the file’s content.'}
        </div>
      ) : (
        // Reachable by Tab, so a long diff scrolls from the keyboard too.
        <div className="diff-scroll" tabIndex={0} role="region" aria-label={`Changes to ${preview.path}`}>
          {/* A table per part: a change in one part lays out that part alone (a change may have 500). */}
          <div className="diff-parts">
            {parts.map((rows, i) => {
              // Past the cap a part under review keeps its header and controls (every part stays decidable);
              // elsewhere the diff simply ends there.
              const shown = shownOf[i] as number
              if (shown === 0 && !review) return null
              return (
                <Part
                  key={i}
                  index={i}
                  hunk={preview.hunks[i] as DiffHunk}
                  rows={rows}
                  shown={shown}
                  layout={layout}
                  mark={marks.get(i)}
                  review={review}
                  s={states?.[i]}
                />
              )
            })}
          </div>
        </div>
      )}
      {capped && (
        <Button look="link" className="diff-show-all" testId="diff-show-all" onClick={() => setShowAll(true)}>
          Show all {total} lines ({total - ROW_CAP} more)
        </Button>
      )}
      {preview.truncated && preview.hunks.length > 0 && (
        <div className="muted small diff-note">
          Part of this change is too large to preview; the rest is shown.
        </div>
      )}
    </div>
  )
}

type Row = UnifiedRow | SplitRow

const rowCache = new WeakMap<DiffHunk, Map<string, Row[]>>()

/** The rows of one part in a layout, cached per hunk object: typing in one part's edit redraws only that part. */
function rowsOf(hunk: DiffHunk, index: number, language: string | undefined, layout: Layout): Row[] {
  let byKey = rowCache.get(hunk)
  if (!byKey) rowCache.set(hunk, (byKey = new Map()))
  const key = `${index}:${language ?? ''}:${layout}`
  let rows = byKey.get(key)
  if (!rows) {
    const unified = diffLines([hunk], language, index)
    rows = layout === 'split' ? splitRows(unified) : unified
    byKey.set(key, rows)
  }
  return rows
}

const Part = memo(function Part({
  index,
  hunk,
  rows,
  shown,
  layout,
  mark: partMark,
  review,
  s,
}: {
  index: number
  hunk: DiffHunk
  rows: Row[]
  shown: number
  layout: Layout
  mark: HunkDecision['decision'] | undefined
  review: PartReview | undefined
  s: HunkState | undefined
}) {
  const span = layout === 'unified' ? 3 : 4
  const leftOut = review ? s !== undefined && !s.apply : partMark === 'rejected'
  const cls = leftOut ? ' left-out' : ''
  const hidden = rows.length - Math.max(shown, 1)
  return (
    <table className={`diff-table ${layout}`}>
      {/* Fixed layout takes column widths from the first row, a hunk header spanning all: set them here. */}
      <colgroup>
        {layout === 'unified' ? (
          <>
            <col className="ln-col" />
            <col className="ln-col" />
            <col />
          </>
        ) : (
          <>
            <col className="ln-col" />
            <col />
            <col className="ln-col" />
            <col />
          </>
        )}
      </colgroup>
      <tbody
        data-hunk={index}
        {...(review
          ? {
              'data-testid': 'hunk-item',
              'data-decision': !s || s.apply ? (s?.text !== undefined ? 'edited' : 'accepted') : 'rejected',
            }
          : {})}
      >
        {rows.slice(0, Math.max(shown, 1)).map((row) =>
          row.kind === 'hunk' ? (
            <tr key={row.key} className={`diff-hunk${cls}${review ? ' diff-part-head' : ''}`}>
              <td colSpan={span}>
                {review ? (
                  <review.Head hunk={hunk} index={index} s={s} update={review.update} hidden={hidden} />
                ) : partMark && PART_MARK[partMark] ? (
                  `${row.header} — ${PART_MARK[partMark]}`
                ) : (
                  row.header
                )}
              </td>
            </tr>
          ) : row.kind === 'line' ? (
            <tr key={row.key} className={`diff-line ${row.line.kind}${cls}`}>
              <td className="ln">{row.line.oldNo ?? ''}</td>
              <td className="ln">{row.line.newNo ?? ''}</td>
              <td className="code">
                <span className="mark" aria-hidden="true">
                  {mark(row.line)}
                </span>
                <Code line={row.line} />
              </td>
            </tr>
          ) : (
            <tr key={row.key} className={`diff-line pair${cls}`}>
              <td className="ln">{row.left?.oldNo ?? ''}</td>
              <td
                className={`code half ${row.left ? (row.left.kind === 'context' ? 'context' : 'del') : 'blank'}`}
              >
                {row.left && <Code line={row.left} />}
              </td>
              <td className="ln">{row.right?.newNo ?? ''}</td>
              <td
                className={`code half ${row.right ? (row.right.kind === 'context' ? 'context' : 'add') : 'blank'}`}
              >
                {row.right && <Code line={row.right} />}
              </td>
            </tr>
          ),
        )}
        {review && (!s?.apply || s.text !== undefined) && s !== undefined && (
          <tr className="diff-part-fields">
            <td colSpan={span}>
              <review.Fields hunk={hunk} index={index} s={s} update={review.update} />
            </td>
          </tr>
        )}
      </tbody>
    </table>
  )
})

function mark(line: DiffLine): string {
  return line.kind === 'add' ? '+' : line.kind === 'del' ? '−' : ' '
}

function Code({ line }: { line: DiffLine }) {
  return (
    <>
      {line.tokens.map((token: Token, i) =>
        token.kind === 'plain' ? (
          token.text
        ) : (
          <span key={i} className={`tok-${token.kind}`}>
            {token.text}
          </span>
        ),
      )}
      {line.noNewline && (
        <span className="no-newline" title="No newline at end of file">
          ⏎̸
        </span>
      )}
    </>
  )
}
