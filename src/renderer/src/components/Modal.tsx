import type { ReactNode, Ref } from 'react'
import { Button } from './Button'

/**
 * The shell every modal dialog shares: a backdrop that closes it when pressed outside the dialog, the dialog
 * labelled by its title, and a header with the title and a close button. Keyboard handling (Escape, focus)
 * stays with each dialog, which knows what it needs.
 */
export function Modal({
  title,
  titleId,
  testId,
  className,
  closeLabel = 'Close',
  closeTestId,
  dialogRef,
  onClose,
  children,
}: {
  title: ReactNode
  /** The id of the heading, which labels the dialog. */
  titleId: string
  testId: string
  /** Added to `modal`. */
  className?: string
  closeLabel?: string
  closeTestId?: string
  dialogRef?: Ref<HTMLDivElement>
  onClose(): void
  children: ReactNode
}) {
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        className={className === undefined ? 'modal' : `modal ${className}`}
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        data-testid={testId}
        ref={dialogRef}
      >
        <header className="modal-header">
          <h2 id={titleId}>{title}</h2>
          <Button look="icon" aria-label={closeLabel} testId={closeTestId} onClick={onClose}>
            ✕
          </Button>
        </header>
        {children}
      </div>
    </div>
  )
}
