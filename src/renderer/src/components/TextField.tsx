/** A labelled one-line text input (the label text stands above the box). */
export function TextField({
  label,
  testId,
  value,
  onChange,
  mono = false,
  placeholder,
}: {
  label: string
  testId: string
  value: string
  onChange(value: string): void
  /** Code-like text (a command, a URL): in the monospace font. */
  mono?: boolean
  placeholder?: string
}) {
  return (
    <label className="field">
      <span>{label}</span>
      <input
        className={mono ? 'text-input mono' : 'text-input'}
        data-testid={testId}
        placeholder={placeholder}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
    </label>
  )
}
