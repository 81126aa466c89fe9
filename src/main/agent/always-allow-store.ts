import { readFile } from 'node:fs/promises'
import { writeJsonAtomic } from '../fs/atomic-write'
import type { AlwaysAllowRule } from '../tools/tool'

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
    return (await this.cache)[workspace] ?? []
  }

  async add(workspace: string, rule: AlwaysAllowRule): Promise<void> {
    const all = await this.readAll()
    const rules = all[workspace] ?? []
    if (!rules.some((r) => r.tool === rule.tool && r.command === rule.command)) rules.push(rule)
    all[workspace] = rules
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
        out[workspace] = rules.filter(
          (r): r is AlwaysAllowRule =>
            typeof r === 'object' && r !== null && r.tool === 'bash' && typeof r.command === 'string',
        )
      }
      return out
    } catch {
      return {}
    }
  }
}
