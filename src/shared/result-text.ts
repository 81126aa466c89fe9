/**
 * The fixed parts the engine adds to a tool result for the model (DESIGN 3.3): the execution time and, for
 * errors, the hint. Defined here so that the engine writes them and the UI takes them off again from one
 * definition: people read the tool's own words, never text addressed to the model.
 */

export const ERROR_HINT =
  '[HINT: The tool returned an error. Analyze the error message and try a different approach.]'

export function executionTimeLine(ms: number): string {
  return `[Execution time: ${Math.round(ms)} ms]`
}

const EXECUTION_TIME = /^\[Execution time: \d+ ms\]$/

/** A tool result as people should read it: without the trailing hint and execution time parts. */
export function resultForPeople(output: string): string {
  const parts = output.split('\n\n')
  while (parts.length > 1) {
    const last = parts[parts.length - 1] as string
    if (last !== ERROR_HINT && !EXECUTION_TIME.test(last)) break
    parts.pop()
  }
  return parts.join('\n\n')
}
