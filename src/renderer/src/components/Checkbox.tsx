import type { ReactNode } from 'react'

/** A labelled checkbox (the label text is the children; clicking it toggles the box). */
export function Checkbox({
  testId,
  checked,
  disabled,
  onChange,
  children,
}: {
  testId: string
  checked: boolean
  disabled?: boolean
  onChange(checked: boolean): void
  children: ReactNode
}) {
  return (
    <label className="checkbox">
      <input
        type="checkbox"
        data-testid={testId}
        checked={checked}
        disabled={disabled}
        onChange={(e) => onChange(e.target.checked)}
      />
      {children}
    </label>
  )
}
