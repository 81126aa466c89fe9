import { WorkspaceListsFile } from '../fs/workspace-lists'
import { sameAlwaysAllowRule, type AlwaysAllowRule } from '../tools/tool'

/**
 * "Always allow this command in this folder" (or this tool of this MCP server), kept per workspace in one JSON
 * file. Written atomically so a crash never leaves a half file that would lose every rule.
 */
export class AlwaysAllowStore {
  private readonly lists: WorkspaceListsFile<AlwaysAllowRule>

  constructor(file: string) {
    this.lists = new WorkspaceListsFile(file, isRule)
  }

  /** Read once, then kept: the policy asks for every call, on the path from block close to tool start. */
  private cache: Promise<Record<string, AlwaysAllowRule[]>> | null = null
  /** What `cache` resolved to, once it has: the rules without an await. */
  private loaded: Record<string, AlwaysAllowRule[]> | null = null

  async rules(workspace: string): Promise<AlwaysAllowRule[]> {
    this.cache ??= this.lists.read().then((all) => (this.loaded = all))
    return WorkspaceListsFile.listOf(await this.cache, workspace)
  }

  /** The rules, if they have been read already (`rules` reads them); undefined before. */
  rulesNow(workspace: string): AlwaysAllowRule[] | undefined {
    return this.loaded ? WorkspaceListsFile.listOf(this.loaded, workspace) : undefined
  }

  async add(workspace: string, rule: AlwaysAllowRule): Promise<void> {
    const all = await this.lists.read()
    const rules = WorkspaceListsFile.listOf(all, workspace)
    if (!rules.some((r) => sameAlwaysAllowRule(r, rule))) rules.push(rule)
    await this.lists.write(all, workspace, rules)
    this.cache = Promise.resolve(all)
    this.loaded = all
  }
}

function isRule(value: unknown): value is AlwaysAllowRule {
  if (typeof value !== 'object' || value === null) return false
  const r = value as Record<string, unknown>
  if (r.tool === 'bash') return typeof r.command === 'string'
  return r.tool === 'mcp' && typeof r.server === 'string' && typeof r.name === 'string'
}
