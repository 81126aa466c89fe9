/**
 * Whether an element takes typed text or choices from the keyboard: a text input of any kind, a textarea, a
 * select, or anything contenteditable. The one rule every window-wide key (the review's A/R/J/K/H) checks first:
 * while such an element has the focus, a letter is the user's text, never a command, with or without Shift or Alt.
 */
const NOT_TYPED = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'image'])

export function isEditable(el: Element | null | undefined): boolean {
  if (!el) return false
  if (el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) return true
  if (el instanceof HTMLInputElement) return !NOT_TYPED.has(el.type)
  return el instanceof HTMLElement && el.isContentEditable
}

/** The element with the focus, or null when nothing has it (the page body). */
export function focusedElement(): HTMLElement | null {
  const active = document.activeElement
  return active instanceof HTMLElement && active !== document.body ? active : null
}
