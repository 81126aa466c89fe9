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

/** The image types the model takes in a tool result. */
export const MODEL_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const

/** An image a tool returned (an MCP server's): sent to the model as an image block, shown in the card. */
export interface ResultImage {
  mediaType: string
  data: string
}

/**
 * The images a result carries (`metadata.images`, as the engine writes it), checked: the same list builds the
 * tool_result the model gets live and after a continue (rebuilt from the log), and the card the user sees.
 */
export function resultImages(metadata: Record<string, unknown> | undefined): ResultImage[] {
  const images = metadata?.images
  if (!Array.isArray(images)) return []
  return images.filter(
    (i): i is ResultImage =>
      typeof i === 'object' &&
      i !== null &&
      typeof (i as ResultImage).data === 'string' &&
      (MODEL_IMAGE_TYPES as readonly string[]).includes((i as ResultImage).mediaType),
  )
}

/** A tool_result's content: its text, then its images as image blocks (the API's shape). */
export function toolResultContent(
  output: string,
  metadata: Record<string, unknown> | undefined,
): string | ({ type: 'text'; text: string } | ImageBlock)[] {
  const images = resultImages(metadata)
  if (images.length === 0) return output
  return [
    ...(output !== '' ? [{ type: 'text' as const, text: output }] : []),
    ...images.map((i): ImageBlock => ({
      type: 'image',
      source: { type: 'base64', media_type: i.mediaType as ImageBlock['source']['media_type'], data: i.data },
    })),
  ]
}

interface ImageBlock {
  type: 'image'
  source: { type: 'base64'; media_type: (typeof MODEL_IMAGE_TYPES)[number]; data: string }
}
