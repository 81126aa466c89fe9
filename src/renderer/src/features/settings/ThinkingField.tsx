import { thinkingSettingsFor, type ThinkingSetting } from '../../../../shared/models'

const LABELS: Record<ThinkingSetting, string> = {
  adaptive: 'Think as needed before acting (best results)',
  between_tools: 'Only short notes between steps (faster, cheaper)',
}

/** The thinking choice, offered only for a model that takes it (shared/models.ts). */
export function ThinkingField({
  model,
  value,
  onChange,
}: {
  model: string
  value: ThinkingSetting
  onChange(value: ThinkingSetting): void
}) {
  const options = thinkingSettingsFor(model)
  if (!options) return null
  return (
    <div className="field">
      <span>Thinking</span>
      <div className="radio-group" role="radiogroup" aria-label="Thinking">
        {options.map((option) => (
          <label className="checkbox" key={option}>
            <input
              type="radio"
              name="thinking"
              data-testid={`settings-thinking-${option}`}
              checked={value === option}
              onChange={() => onChange(option)}
            />
            {LABELS[option]}
          </label>
        ))}
      </div>
    </div>
  )
}
