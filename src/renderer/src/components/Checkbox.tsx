import type { ReactNode } from 'react'

/** A labelled checkbox (the label text is the children; clicking it toggles the box). */
export function Checkbox({
  testId,
  checked,
  onChange,
  children,
}: {
  testId: string
  checked: boolean
  onChange(checked: boolean): void
  children: ReactNode
}) {
  return (
    <label className="checkbox">
      <input
        type="checkbox"
        data-testid={testId}
        checked={checked}
        onChange={(e) => onChange(e.target.checked)}
      />
      {children}
    </label>
  )
}
