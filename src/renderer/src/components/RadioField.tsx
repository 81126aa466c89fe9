/**
 * A labelled group of radio buttons, one per option. `testIdPrefix` names the group (its inputs' `name`); each
 * input's test id is `${testIdPrefix}-${value}`.
 */
export function RadioField<T extends string>({
  label,
  testIdPrefix,
  options,
  value,
  onChange,
}: {
  label: string
  testIdPrefix: string
  options: readonly { value: T; label: string }[]
  value: NoInfer<T>
  onChange(value: NoInfer<T>): void
}) {
  return (
    <div className="field">
      <span>{label}</span>
      <div className="radio-group" role="radiogroup" aria-label={label}>
        {options.map((option) => (
          <label className="checkbox" key={option.value}>
            <input
              type="radio"
              name={testIdPrefix}
              data-testid={`${testIdPrefix}-${option.value}`}
              checked={value === option.value}
              onChange={() => onChange(option.value)}
            />
            {option.label}
          </label>
        ))}
      </div>
    </div>
  )
}
