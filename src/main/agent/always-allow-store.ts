import { readFile } from 'node:fs/promises'
import { writeJsonAtomic } from '../fs/atomic-write'
import { sameRule, type AlwaysAllowRule } from '../tools/tool'
import { own, setOwn } from '../../shared/own'

/**
 * "Always allow this command in this folder" (or this tool of this MCP server), kept per workspace in one JSON file. Written atomically so a
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
    if (!rules.some((r) => sameRule(r, rule))) rules.push(rule)
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
          rules.filter((r): r is AlwaysAllowRule => {
            if (typeof r !== 'object' || r === null) return false
            if (r.tool === 'bash') return typeof r.command === 'string'
            return r.tool === 'mcp' && typeof r.server === 'string' && typeof r.name === 'string'
          }),
        )
      }
      return out
    } catch {
      return {}
    }
  }
}
