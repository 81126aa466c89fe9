import type {
  PolicyOptions,
  PolicyVerdict,
  PreviewOptions,
  PreviewResult,
  Tool,
  ToolContext,
} from '../tools/tool'

/**
 * The approval policy (DESIGN 5), as the loop applies it. Each tool decides for its own calls (`Tool.policy`,
 * `Tool.preview`: protected paths always ask, whatever the settings); what is left here holds for every
 * tool: one without a policy asks (a side effect until proven otherwise), one without a preview shows its
 * arguments. The user's "always allow" rules are kept in always-allow-store.ts.
 */

export function decidePolicy(tool: Tool | undefined, input: unknown, opts: PolicyOptions): PolicyVerdict {
  return tool?.policy?.(input, opts) ?? { kind: 'ask', protected: false }
}

/**
 * What the user reviews. A change that cannot be planned (old_string missing) fails here, before anyone is
 * asked to approve something that would not apply.
 */
export function buildPreview(
  tool: Tool,
  input: unknown,
  ctx: ToolContext,
  opts: PreviewOptions,
): Promise<PreviewResult<unknown>> {
  if (tool.preview) return tool.preview(input, ctx, opts)
  const summary = `${tool.name} ${JSON.stringify(input).slice(0, 500)}`
  return Promise.resolve({ ok: true, preview: { kind: 'other', summary } })
}
