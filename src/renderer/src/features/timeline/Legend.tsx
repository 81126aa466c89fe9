import { useState } from 'react'
import type { ToolCallStatus } from '../../../../shared/tool-call'
import { Button } from '../../components/Button'

/** Every state a bar can have, in the order a call goes through them, then the side exits. */
const ENTRIES: { status: ToolCallStatus; label: string; hint: string }[] = [
  { status: 'queued', label: 'Queued', hint: 'Waiting for an earlier call to finish' },
  { status: 'awaiting-approval', label: 'Waiting for you', hint: 'Needs your approval in the review' },
  { status: 'running', label: 'Running', hint: 'Running now' },
  { status: 'ok', label: 'Done', hint: 'Finished without error' },
  { status: 'error', label: 'Failed', hint: 'Finished with an error (the model saw it)' },
  { status: 'rejected', label: 'Rejected', hint: 'You said no in the review' },
  { status: 'skipped', label: 'Skipped', hint: 'Not run because an earlier write or command failed' },
  { status: 'cancelled', label: 'Cancelled', hint: 'Stopped by you' },
]

/** Inline when the panel is wide; behind a "Key" button otherwise, so it never pushes the zoom buttons down. */
export function Legend({ inline }: { inline: boolean }) {
  const [open, setOpen] = useState(false)
  if (inline) return <LegendList />
  return (
    <div className="legend-toggle">
      <Button
        look="small"
        aria-expanded={open}
        aria-controls="timeline-legend"
        onClick={() => setOpen((o) => !o)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') setOpen(false)
        }}
      >
        Key
      </Button>
      {open && <LegendList popover />}
    </div>
  )
}

function LegendList({ popover = false }: { popover?: boolean }) {
  return (
    <ul
      id="timeline-legend"
      className={`timeline-legend ${popover ? 'popover' : ''}`}
      aria-label="What the colours mean"
      data-testid="timeline-legend"
    >
      {ENTRIES.map(({ status, label, hint }) => (
        <li key={status} title={hint}>
          <span
            className={`legend-swatch ${status === 'queued' || status === 'awaiting-approval' ? 'wait' : ''} status-${status}`}
            aria-hidden="true"
          />
          {label}
        </li>
      ))}
      <li title="A stretch with no call running (the model thinking, you reviewing), drawn shorter">
        <span className="legend-swatch break" aria-hidden="true" />
        Idle, shortened
      </li>
      <li title="A write or edit an undo or rewind took back: its change is no longer in the files">
        <span className="legend-swatch undone status-ok" aria-hidden="true" />
        Undone
      </li>
      <li title="When an undo or rewind happened; its label on the ruler opens it in the transcript">
        <span className="legend-swatch rewind" aria-hidden="true" />
        Undo or rewind
      </li>
    </ul>
  )
}
