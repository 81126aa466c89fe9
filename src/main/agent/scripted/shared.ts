/** Small facts the scripted model's parts share. */

/** A "token" is 4 characters (Unicode code points), the usual rule of thumb for English and code. */
export const CHARS_PER_TOKEN = 4

export function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

export function hasCacheControl(part: unknown): boolean {
  return typeof part === 'object' && part !== null && 'cache_control' in part && part.cache_control != null
}

export function tokensOf(text: string): number {
  return Math.ceil(Array.from(text).length / CHARS_PER_TOKEN)
}
