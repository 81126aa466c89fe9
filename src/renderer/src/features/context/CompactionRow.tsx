import { useState } from 'react'
import { createPortal } from 'react-dom'
import type { CompactionState } from '../../../../shared/reducer'
import { Modal } from '../../components/Modal'
import { formatClock } from '../../lib/format'
import { formatTokens } from '../../lib/usage'
import { Button } from '../../components/Button'
import './context.css'

/** What a compaction did, in a few words. */
export function compactionHeadline(c: CompactionState): string {
  const who = c.mode === 'server' ? 'The API compacted the conversation' : 'Lanes compacted the conversation'
  const how =
    c.strategy === 'cleared_tool_results'
      ? 'old tool results cleared'
      : c.keptFromTurn !== undefined
        ? `summarized up to turn ${c.keptFromTurn - 1}, later turns kept`
        : 'summarized'
  return `${who}: ${how}${WHY[c.reason]}`
}

const WHY: Record<CompactionState['reason'], string> = {
  threshold: '',
  window_full: ' (the window was full)',
  continue: ' (harder, on Continue)',
}

/**
 * A compaction in the transcript, between the turns it happened between (live and in replay alike): who did
 * it, how much context it freed, and the summary the model goes on from, opened in a dialog.
 */
export function CompactionRow({ compaction }: { compaction: CompactionState }) {
  const [open, setOpen] = useState(false)
  const after = compaction.tokensAfter
  return (
    <section
      className="compaction-row"
      data-testid="compaction-row"
      data-mode={compaction.mode}
      data-strategy={compaction.strategy}
      aria-label={`Compaction at ${formatClock(compaction.at)}`}
    >
      <span className="compaction-icon" aria-hidden="true">
        ⇊
      </span>
      <span className="compaction-text" data-testid="compaction-headline">
        {compactionHeadline(compaction)}
      </span>
      <span className="muted small" data-testid="compaction-tokens">
        {formatTokens(compaction.tokensBefore)} tokens
        {after !== undefined ? ` → about ${formatTokens(after)}` : ''}
      </span>
      {compaction.summary !== undefined && (
        <Button look="link" testId="compaction-open-summary" onClick={() => setOpen(true)}>
          Show summary
        </Button>
      )}
      {open &&
        // Rendered at the document's root: a transcript row is positioned and clipped by the virtual list.
        createPortal(
          <Modal
            title="What the model carries on from"
            titleId="compaction-summary-title"
            testId="compaction-summary"
            onClose={() => setOpen(false)}
          >
            <p className="muted small">{compactionHeadline(compaction)}.</p>
            <pre className="compaction-summary-text" data-testid="compaction-summary-text">
              {compaction.summary}
            </pre>
            {compaction.readFiles && compaction.readFiles.length > 0 && (
              <p className="small">
                Files it was told to read again:{' '}
                <span className="mono">{compaction.readFiles.join(', ')}</span>
              </p>
            )}
          </Modal>,
          document.body,
        )}
    </section>
  )
}
