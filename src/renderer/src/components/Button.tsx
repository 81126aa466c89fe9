import type { ComponentPropsWithRef } from 'react'

/** The app's button looks (controls.css), by what the button is for. */
const LOOKS = {
  plain: 'button',
  primary: 'button primary',
  danger: 'button danger-outline',
  small: 'button small',
  'small-primary': 'button small primary',
  link: 'link-button',
  icon: 'icon-button',
} as const

export type ButtonLook = keyof typeof LOOKS

/**
 * A button in one of the app's looks. It is `type="button"` unless it says otherwise, so a button inside a
 * form never submits it by accident; `className` adds to the look's classes.
 */
export function Button({
  look = 'plain',
  testId,
  className,
  type = 'button',
  ...rest
}: Omit<ComponentPropsWithRef<'button'>, 'type'> & {
  look?: ButtonLook
  testId?: string
  type?: 'button' | 'submit'
}) {
  return (
    <button
      type={type}
      className={className === undefined ? LOOKS[look] : `${LOOKS[look]} ${className}`}
      data-testid={testId}
      {...rest}
    />
  )
}
