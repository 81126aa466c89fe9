import { RadioField } from '../../components/RadioField'
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
    <RadioField
      label="Thinking"
      testIdPrefix="settings-thinking"
      options={options.map((option) => ({ value: option, label: LABELS[option] }))}
      value={value}
      onChange={onChange}
    />
  )
}
