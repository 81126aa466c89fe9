import { namingArgument } from '../../shared/call-naming'
import { ERROR_HINT, executionTimeLine } from '../../shared/result-text'
import type { ToolResult } from './tool'

export { ERROR_HINT }

/**
 * What the model finally reads for a tool result (DESIGN 3.2, 3.3). The hint (src/shared/result-text.ts) is a
 * constant: tool output is never spliced into it, so nothing a file or command prints can pose as our
 * instructions.
 */
export const STOPPED_TEXT = 'Cancelled: the user stopped the run before this call finished.'

export const GROUP_CANCELLED_TEXT =
  'Cancelled: another call running alongside this one failed unexpectedly, so this one was stopped; issue it again if it is still needed.'

export function skipText(label: string): string {
  return `Skipped: not run because ${label} failed earlier in this turn; issue it again if it is still needed.`
}

/** `bash(npm test)`, `edit_file(src/a.ts)`: a call named the way the model wrote it, kept short. */
export function callLabel(name: string, input: unknown): string {
  const arg = namingArgument(input, 'model') ?? ''
  const oneLine = arg.replace(/\s+/g, ' ').trim()
  const short = oneLine.length > 60 ? `${oneLine.slice(0, 57)}...` : oneLine
  return `${name}(${short})`
}

/**
 * The tool_result text: the output, `[Execution time: N ms]` when the call carries an elapsed time, and
 * for errors the hint as the very last, separated part.
 */
export function formatForModel(result: ToolResult, opts: { elapsedMs?: number } = {}): string {
  const parts = [result.output.length > 0 ? result.output : '(no output)']
  if (opts.elapsedMs !== undefined) parts.push(executionTimeLine(opts.elapsedMs))
  if (result.isError) parts.push(ERROR_HINT)
  return parts.join('\n\n')
}
