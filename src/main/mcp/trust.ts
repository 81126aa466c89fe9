import { createHash } from 'node:crypto'
import { WorkspaceListsFile } from '../fs/workspace-lists'
import type { McpServerConfig } from './config'

/**
 * Trust in a workspace's server is trust in exactly what runs: its command, arguments, environment, URL and
 * headers, and the permissions it gets. The key is a hash of all of them, never the server's name, so a
 * changed `.mcp.json` (a new argument, an extra variable, a wider permission) asks again.
 */
export function trustKey(server: McpServerConfig): string {
  const what =
    server.kind === 'stdio'
      ? {
          kind: 'stdio',
          command: server.command,
          args: server.args,
          env: sorted(server.env),
        }
      : { kind: 'http', url: server.url, headers: sorted(server.headers) }
  const canonical = JSON.stringify({ ...what, permissions: sorted(server.permissions) })
  return createHash('sha256').update(canonical).digest('hex')
}

function sorted<T>(record: Record<string, T>): [string, T][] {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** The trusted keys per workspace, in one JSON file written atomically. */
export class McpTrustStore {
  private readonly lists: WorkspaceListsFile<string>

  constructor(file: string) {
    this.lists = new WorkspaceListsFile(file, (k): k is string => typeof k === 'string')
  }

  async trustedKeys(workspace: string): Promise<Set<string>> {
    return new Set(WorkspaceListsFile.listOf(await this.lists.read(), workspace))
  }

  async trust(workspace: string, server: McpServerConfig): Promise<void> {
    const all = await this.lists.read()
    const keys = new Set(WorkspaceListsFile.listOf(all, workspace))
    keys.add(trustKey(server))
    await this.lists.write(all, workspace, [...keys])
  }
}
