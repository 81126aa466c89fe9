import { readFile } from 'node:fs/promises'
import { writeJsonAtomic } from '../tools/atomic-write'
import { own, setOwn } from '../../shared/own'
import type {
  AlwaysAllowRule,
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
 * arguments, and the user's "always allow" rules are kept.
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

/**
 * "Always allow this command in this folder", kept per workspace in one JSON file. Written atomically so a
 * crash never leaves a half file that would lose every rule.
 */
export class AlwaysAllowStore {
  constructor(private readonly file: string) {}

  /** Read once, then kept: the policy asks for every call, on the path from block close to tool start. */
  private cache: Promise<Record<string, AlwaysAllowRule[]>> | null = null

  async rules(workspace: string): Promise<AlwaysAllowRule[]> {
    this.cache ??= this.readAll()
    return own(await this.cache, workspace) ?? []
  }

  async add(workspace: string, rule: AlwaysAllowRule): Promise<void> {
    const all = await this.readAll()
    const rules = own(all, workspace) ?? []
    if (!rules.some((r) => r.tool === rule.tool && r.command === rule.command)) rules.push(rule)
    setOwn(all, workspace, rules)
    await writeJsonAtomic(this.file, all)
    this.cache = Promise.resolve(all)
  }

  private async readAll(): Promise<Record<string, AlwaysAllowRule[]>> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as unknown
      if (typeof parsed !== 'object' || parsed === null) return {}
      const out: Record<string, AlwaysAllowRule[]> = {}
      for (const [workspace, rules] of Object.entries(parsed)) {
        if (!Array.isArray(rules)) continue
        setOwn(
          out,
          workspace,
          rules.filter(
            (r): r is AlwaysAllowRule =>
              typeof r === 'object' && r !== null && r.tool === 'bash' && typeof r.command === 'string',
          ),
        )
      }
      return out
    } catch {
      return {}
    }
  }
}
