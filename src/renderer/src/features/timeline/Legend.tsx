import { statusLabel } from '../../lib/format'

export function Legend() {
  return (
    <ul className="timeline-legend" aria-label="Colours">
      {(['running', 'ok', 'error', 'awaiting-approval', 'skipped'] as const).map((s) => (
        <li key={s}>
          <span className={`legend-swatch status-${s}`} aria-hidden="true" />
          {statusLabel(s)}
        </li>
      ))}
    </ul>
  )
}
