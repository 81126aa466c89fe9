import { validateBashCommand } from '../validate'

/** What the validator decides for `command`, as the corpus spells it. */
export function verdict(command: string): 'allow' | 'deny' {
  return validateBashCommand(command).ok ? 'allow' : 'deny'
}

/** The reason of a denial; a test that expected one fails if the command was allowed. */
export function reasonOf(command: string): string {
  const result = validateBashCommand(command)
  if (result.ok) throw new Error(`expected a denial for ${JSON.stringify(command)}`)
  return result.reason
}
