import { memo, useMemo, useState } from 'react'
import type { HunkDecision, WritePreview } from '../../../../shared/events'
import { diffLines, diffStats, splitRows, type DiffLine } from '../../lib/diff-rows'
import { languageOf, type Token } from '../../lib/highlight'

/** Rows drawn before "show all": a 10,000-line rewrite must not freeze the review screen. */
const ROW_CAP = 400

type Layout = 'unified' | 'split'

/** Remembered for the session: a reviewer who prefers side by side wants it on every file. */
let preferredLayout: Layout = 'unified'

/** A write or edit as a diff: unified or side by side, syntax-highlighted, numbered, capped with "show all". */
/** How a part the user did not take as proposed is marked (per-hunk review, live and on the finished card). */
const PART_MARK = { rejected: 'left out', edited: 'edited by you', accepted: '' } as const

export const DiffView = memo(function DiffView({
  preview,
  decisions,
}: {
  preview: WritePreview
  /** Per-hunk decisions: parts left out are struck through, edited ones say so. */
  decisions?: readonly HunkDecision[]
}) {
  const marks = useMemo(() => new Map(decisions?.map((d) => [d.index, d.decision])), [decisions])
  const headerOf = (header: string, hunk: number): string => {
    const mark = marks.get(hunk)
    return mark && PART_MARK[mark] ? `${header} — ${PART_MARK[mark]}` : header
  }
  const partClass = (hunk: number): string => (marks.get(hunk) === 'rejected' ? ' left-out' : '')
  const [layout, setLayoutState] = useState<Layout>(preferredLayout)
  const [showAll, setShowAll] = useState(false)
  const language = languageOf(preview.path)
  const unified = useMemo(() => diffLines(preview.hunks, language), [preview.hunks, language])
  const split = useMemo(() => (layout === 'split' ? splitRows(unified) : []), [layout, unified])
  const stats = useMemo(() => diffStats(preview.hunks), [preview.hunks])
  const total = layout === 'split' ? split.length : unified.length
  const capped = !showAll && total > ROW_CAP
  const isNew = preview.before === null
  const setLayout = (next: Layout): void => {
    preferredLayout = next
    setLayoutState(next)
  }

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
            <tbody>
              {layout === 'unified'
                ? unified.slice(0, capped ? ROW_CAP : undefined).map((row) =>
                    row.kind === 'hunk' ? (
                      <tr key={row.key} className={`diff-hunk${partClass(row.hunk)}`}>
                        <td colSpan={3}>{headerOf(row.header, row.hunk)}</td>
                      </tr>
                    ) : (
                      <tr key={row.key} className={`diff-line ${row.line.kind}${partClass(row.hunk)}`}>
                        <td className="ln">{row.line.oldNo ?? ''}</td>
                        <td className="ln">{row.line.newNo ?? ''}</td>
                        <td className="code">
                          <span className="mark" aria-hidden="true">
                            {mark(row.line)}
                          </span>
                          <Code line={row.line} />
                        </td>
                      </tr>
                    ),
                  )
                : split.slice(0, capped ? ROW_CAP : undefined).map((row) =>
                    row.kind === 'hunk' ? (
                      <tr key={row.key} className={`diff-hunk${partClass(row.hunk)}`}>
                        <td colSpan={4}>{headerOf(row.header, row.hunk)}</td>
                      </tr>
                    ) : (
                      <tr key={row.key} className={`diff-line pair${partClass(row.hunk)}`}>
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
            </tbody>
          </table>
        </div>
      )}
      {capped && (
        <button
          type="button"
          className="link-button diff-show-all"
          data-testid="diff-show-all"
          onClick={() => setShowAll(true)}
        >
          Show all {total} lines ({total - ROW_CAP} more)
        </button>
      )}
      {preview.truncated && preview.hunks.length > 0 && (
        <div className="muted small diff-note">
          Part of this change is too large to preview; the rest is shown.
        </div>
      )}
    </div>
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
