/**
 * What MCP tools' definitions cost in context (issue 22), computed once here for the engine (which switches to
 * the search tool over the budget) and every screen that shows it (the sidebar, Settings).
 */

/** The share of the context window the MCP tools' definitions may take before they are searched for instead. */
export const DEFERRED_SHARE = 0.1

/** One tool definition (name, description, input schema) in tokens: about four characters of JSON a token. */
export function definitionTokens(definition: unknown): number {
  return Math.ceil(JSON.stringify(definition).length / 4)
}

/** The tokens of a server's tool definitions (each as `definitionTokens` counted it). */
export function serverTokens(tools: readonly { tokens: number }[]): number {
  return tools.reduce((sum, t) => sum + t.tokens, 0)
}

/** Whether definitions of `tokens` in all are found through the search tool instead of sent every request. */
export function overBudget(tokens: number, contextWindowTokens: number): boolean {
  return tokens > contextWindowTokens * DEFERRED_SHARE
}
