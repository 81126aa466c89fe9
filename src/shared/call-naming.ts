import type { ApprovalPreview } from './approval-preview'
import { own } from './own'

/**
 * How a call is named where its tool gave it no title (arguments that did not parse, an unknown tool, a log
 * written before tools titled their calls): one rule for the engine (`callLabel`, in skip texts the model
 * reads) and the UI (`callTitle`, `reviewKind`).
 */

/**
 * The argument that names a call: its description, command, path or pattern, else its first text argument.
 * A description is what people read; the model is told of its own call by what it sent (`model`), so for it
 * the description is passed over.
 */
export function namingArgument(input: unknown, reader: 'people' | 'model'): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined
  const record = input as Record<string, unknown>
  const fields =
    reader === 'people' ? ['description', 'command', 'path', 'pattern'] : ['command', 'path', 'pattern']
  for (const name of fields) {
    const value = own(record, name)
    if (value != null) return typeof value === 'string' ? value : undefined
  }
  const first = Object.values(record)[0]
  return typeof first === 'string' ? first : undefined
}

/** What the review calls a change or command: "Edit", "New file", "Write", "Command", or the tool's name. */
export function reviewKind(name: string, preview: ApprovalPreview): string {
  switch (preview.kind) {
    case 'write':
      return name === 'edit_file'
        ? 'Edit'
        : preview.before === null || preview.files?.before === null
          ? 'New file'
          : 'Write'
    case 'bash':
      return 'Command'
    case 'other':
      return name
  }
}

/**
 * A built-in tool's call named in words, for a call whose arguments are not known (too large, or not valid): the
 * user reads "Write a file", not "write_file". Other tools (an MCP server's) keep their names.
 */
export function toolInWords(name: string): string {
  switch (name) {
    case 'write_file':
      return 'Write a file'
    case 'edit_file':
      return 'Edit a file'
    case 'read_file':
      return 'Read a file'
    case 'bash':
      return 'Run a command'
    case 'grep':
      return 'Search the files'
    case 'glob':
      return 'List files'
    default:
      return name
  }
}
