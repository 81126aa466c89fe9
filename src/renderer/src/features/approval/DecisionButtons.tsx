import type { ReactNode } from 'react'
import { Button } from '../../components/Button'

interface Side<T extends string> {
  value: T
  testId: string
  label: ReactNode
  /** The key that does it in the review, shown after the label. */
  kbd?: string
}

/**
 * How a review item ends: reject (outlined in the danger colour) then approve (the primary action), side by
 * side. Where the review stages a choice, `chosen` shows it as the pressed button.
 */
export function DecisionButtons<T extends string>({
  reject,
  approve,
  disabled,
  chosen,
  onChoose,
  children,
}: {
  reject: Side<T>
  approve: Side<T>
  disabled: boolean
  chosen?: T | null
  onChoose(value: T): void
  /** Other buttons of the item, before the pair in the same row. */
  children?: ReactNode
}) {
  const sides = [
    { side: reject, look: 'danger' },
    { side: approve, look: 'primary' },
  ] as const
  return (
    <div className="row">
      {children}
      {sides.map(({ side, look }) => (
        <Button
          key={side.value}
          look={look}
          testId={side.testId}
          aria-pressed={chosen === undefined ? undefined : chosen === side.value}
          disabled={disabled}
          onClick={() => onChoose(side.value)}
        >
          {side.label}
          {side.kbd !== undefined && (
            <>
              {' '}
              <kbd>{side.kbd}</kbd>
            </>
          )}
        </Button>
      ))}
    </div>
  )
}
