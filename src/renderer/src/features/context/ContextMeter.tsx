import { useShallow } from 'zustand/react/shallow'
import { compactionThreshold, modelContext } from '../../../../shared/models'
import { formatCount } from '../../lib/format'
import { formatTokens } from '../../lib/usage'
import { useAppStore } from '../../store/app-store'
import './context.css'

/**
 * The context meter in the session header (issue 21): how full the model's window is as the API last reported
 * it, and what happens when it fills: the API compacts (models that support it) or Lanes summarizes.
 */
export function ContextMeter() {
  const { used, model, demo, compactAt } = useAppStore(
    useShallow((s) => ({
      used: s.view?.contextTokens ?? 0,
      compactAt: s.settings?.compactAtTokens ?? undefined,
      model: s.view?.session?.settings.model,
      demo: s.view?.session?.settings.demo === true,
    })),
  )
  if (!model || demo || used === 0) return null
  const { window, serverCompaction } = modelContext(model)
  const at = compactionThreshold(window, compactAt)
  const share = Math.min(1, used / window)
  const next = serverCompaction
    ? `At ${formatTokens(at)} tokens the API compacts the conversation (Lanes does, if the API cannot); old tool results are cleared first.`
    : `At ${formatTokens(at)} tokens Lanes clears old tool results, or summarizes the earlier turns and keeps the latest.`
  return (
    <span
      className="context-meter"
      data-testid="context-meter"
      data-used={used}
      data-window={window}
      title={`Context: ${formatCount(used)} of ${formatCount(window)} tokens. ${next}`}
    >
      <span className="context-meter-bar" aria-hidden="true">
        <span
          className={`context-meter-fill ${used >= at ? 'over' : ''}`}
          style={{ width: `${Math.round(share * 100)}%` }}
        />
      </span>
      <span className="muted small">
        {formatTokens(used)} / {formatTokens(window)}
      </span>
    </span>
  )
}
