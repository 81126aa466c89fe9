import { z } from 'zod'
import { defineTool, ok, type Tool } from '../tools/tool'

/**
 * When the MCP tools' definitions together would take more than a tenth of the model's context window, they
 * are not sent with every request: the model gets this one tool instead, searches by words, and the tools it
 * finds are sent from the next request on (as the API's own tool search does).
 */

export const TOOL_SEARCH_NAME = 'mcp_tool_search'
/** Found tools loaded per search: enough to choose from, few enough to keep the point of searching. */
const MAX_LOADED_PER_SEARCH = 5

export interface SearchableTool {
  tool: Tool
  /** Its name on its server, and its server. */
  original: string
  server: string
}

export function toolSearch(opts: {
  candidates(): readonly SearchableTool[]
  load(names: readonly string[]): void
  servers(): string[]
}): Tool {
  return defineTool({
    name: TOOL_SEARCH_NAME,
    description:
      `Finds tools of the MCP servers ${opts.servers().join(', ')} (their definitions are not sent until needed). ` +
      'Give a few words of what you need; the best matches are listed and can be called from your next step.',
    input: z.strictObject({
      query: z.string().min(1).max(500).describe('Words describing the tool you need'),
    }),
    concurrencySafe: true,
    title: (input) => `Search MCP tools for "${input.query}"`,
    policy: () => ({ kind: 'allow' }),
    async execute(input) {
      const words = input.query
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .filter(Boolean)
      const scored = opts
        .candidates()
        .map((c) => {
          const name = `${c.original} ${c.tool.name}`.toLowerCase()
          const text = c.tool.description.toLowerCase()
          const score = words.reduce(
            (sum, w) => sum + (name.includes(w) ? 3 : 0) + (text.includes(w) ? 1 : 0),
            0,
          )
          return { c, score }
        })
        .filter((s) => s.score > 0)
        .sort((a, b) => b.score - a.score || (a.c.tool.name < b.c.tool.name ? -1 : 1))
        .slice(0, MAX_LOADED_PER_SEARCH)
      if (scored.length === 0) return ok(`No MCP tool matches "${input.query}". Try other words.`)
      opts.load(scored.map((s) => s.c.tool.name))
      const lines = scored.map(
        (s) => `- ${s.c.tool.name} (server "${s.c.server}"): ${s.c.tool.description.split('\n')[0]}`,
      )
      return ok(`These tools are now available to call:\n${lines.join('\n')}`)
    },
  }) as Tool
}
