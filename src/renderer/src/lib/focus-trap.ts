import { useEffect, type RefObject } from 'react'

/**
 * Keeps Tab and Shift+Tab inside a modal: from its last focusable element Tab goes to its first, and back.
 * Call from the modal's keydown handler.
 */
const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'

export function trapTab(event: KeyboardEvent, container: HTMLElement): void {
  if (event.key !== 'Tab') return
  const items = [...container.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (el) => el.offsetParent !== null,
  )
  const first = items[0]
  const last = items[items.length - 1]
  if (!first || !last) return
  const active = document.activeElement
  if (!container.contains(active)) {
    event.preventDefault()
    first.focus()
  } else if (event.shiftKey && active === first) {
    event.preventDefault()
    last.focus()
  } else if (!event.shiftKey && active === last) {
    event.preventDefault()
    first.focus()
  }
}

/**
 * A modal dialog's keyboard, while `active`: the dialog's first element matching `first` takes the focus,
 * Escape calls `onEscape`, Tab stays inside the dialog, and when it closes the focus goes back where it was.
 */
export function useDialogKeys(
  dialogRef: RefObject<HTMLElement | null>,
  onEscape: () => void,
  first: string,
  active = true,
): void {
  useEffect(() => {
    if (!active) return
    const previous = document.activeElement as HTMLElement | null
    dialogRef.current?.querySelector<HTMLElement>(first)?.focus()
    const onKey = (event: KeyboardEvent): void => {
      if (event.key === 'Escape') onEscape()
      else if (dialogRef.current) trapTab(event, dialogRef.current)
    }
    window.addEventListener('keydown', onKey)
    return () => {
      window.removeEventListener('keydown', onKey)
      previous?.focus()
    }
  }, [dialogRef, onEscape, first, active])
}
