import { WorkspaceListsFile } from '../fs/workspace-lists'
import type { AlwaysAllowRule } from '../tools/tool'

/**
 * "Always allow this command in this folder", kept per workspace in one JSON file. Written atomically so a
 * crash never leaves a half file that would lose every rule.
 */
export class AlwaysAllowStore {
  private readonly lists: WorkspaceListsFile<AlwaysAllowRule>

  constructor(file: string) {
    this.lists = new WorkspaceListsFile(
      file,
      (r): r is AlwaysAllowRule =>
        typeof r === 'object' &&
        r !== null &&
        (r as AlwaysAllowRule).tool === 'bash' &&
        typeof (r as AlwaysAllowRule).command === 'string',
    )
  }

  /** Read once, then kept: the policy asks for every call, on the path from block close to tool start. */
  private cache: Promise<Record<string, AlwaysAllowRule[]>> | null = null

  async rules(workspace: string): Promise<AlwaysAllowRule[]> {
    this.cache ??= this.lists.read()
    return WorkspaceListsFile.listOf(await this.cache, workspace)
  }

  async add(workspace: string, rule: AlwaysAllowRule): Promise<void> {
    const all = await this.lists.read()
    const rules = WorkspaceListsFile.listOf(all, workspace)
    if (!rules.some((r) => r.tool === rule.tool && r.command === rule.command)) rules.push(rule)
    await this.lists.write(all, workspace, rules)
    this.cache = Promise.resolve(all)
  }
}
