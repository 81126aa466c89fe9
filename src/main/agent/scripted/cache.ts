import { createHash, type Hash } from 'node:crypto'
import { arrayOf, CHARS_PER_TOKEN, hasCacheControl } from './shared'

export interface SimulatedUsage {
  input_tokens: number
  cache_creation_input_tokens: number
  cache_read_input_tokens: number
}

/**
 * Token counts as the real API reports them, with prompt caching simulated: the prefix up to each block
 * marked `cache_control` (tools, then system, then messages) is "written" the first time it is seen and
 * "read" after that, so the usage a client records behaves like the real thing.
 */
export class CacheSimulator {
  private readonly seen = new Set<string>()

  usage(body: Record<string, unknown>): SimulatedUsage {
    const hash = createHash('sha256')
    let chars = 0
    const breakpoints: { digest: string; chars: number }[] = []
    const feed = (part: unknown, h: Hash): void => {
      const text = JSON.stringify(part) ?? ''
      chars += text.length
      h.update(text)
      if (hasCacheControl(part)) breakpoints.push({ digest: h.copy().digest('hex'), chars })
    }
    for (const tool of arrayOf(body.tools)) feed(tool, hash)
    const system = body.system
    if (typeof system === 'string') feed(system, hash)
    else for (const block of arrayOf(system)) feed(block, hash)
    for (const message of arrayOf(body.messages)) {
      const m = message as { role?: unknown; content?: unknown }
      feed(m.role, hash)
      if (typeof m.content === 'string') feed(m.content, hash)
      else for (const block of arrayOf(m.content)) feed(block, hash)
    }
    let read = 0
    for (const bp of breakpoints) if (this.seen.has(bp.digest)) read = bp.chars
    const cached = breakpoints.at(-1)?.chars ?? 0
    for (const bp of breakpoints) this.seen.add(bp.digest)
    const toTokens = (n: number): number => Math.ceil(n / CHARS_PER_TOKEN)
    return {
      input_tokens: Math.max(1, toTokens(chars - cached)),
      cache_creation_input_tokens: toTokens(cached - read),
      cache_read_input_tokens: toTokens(read),
    }
  }
}
