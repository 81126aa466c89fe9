import { createHash } from 'node:crypto'
import { WorkspaceListsFile } from '../fs/workspace-lists'
import { McpPermissions, type McpServerConfig } from './config'

/**
 * Trust in a workspace's server is trust in exactly what runs: its command, arguments, environment, URL and
 * headers, and the permissions it gets. The key is a hash of all of them, never the server's name, so a
 * changed `.mcp.json` (a new argument, an extra variable, a wider permission) asks again.
 */
export function trustKey(server: McpServerConfig): string {
  const canonical = JSON.stringify({ ...whatRuns(server), permissions: sorted(server.permissions) })
  return createHash('sha256').update(canonical).digest('hex')
}

/**
 * A hash of what runs alone (command, arguments, environment; or URL and headers): the server an "always allow"
 * rule for one of its tools is for, so a rule never carries over to another program that took its name.
 */
export function serverIdentity(server: McpServerConfig): string {
  return createHash('sha256')
    .update(JSON.stringify(whatRuns(server)))
    .digest('hex')
}

function whatRuns(server: McpServerConfig): Record<string, unknown> {
  return server.kind === 'stdio'
    ? { kind: 'stdio', command: server.command, args: server.args, env: sorted(server.env) }
    : { kind: 'http', url: server.url, headers: sorted(server.headers) }
}

function sorted<T>(record: Record<string, T>): [string, T][] {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/**
 * What the user trusted: the key of exactly what runs, with the permissions the user chose for it in the trust
 * dialog (its `"lanes"` key, written the way `.mcp.json` writes one). A string is a record from before the
 * dialog offered a choice: the server with the permissions its file asked for.
 */
export type TrustRecord = string | { key: string; lanes: Required<McpPermissions> }

/** The permissions `server` runs with by this record, or null when the record is not for exactly this server. */
function permissionsBy(record: TrustRecord, server: McpServerConfig): Required<McpPermissions> | null {
  if (typeof record === 'string') return record === trustKey(server) ? server.permissions : null
  // The command, arguments, environment and URL as the file has them now, with the user's permissions: a file
  // that changed what runs has another hash and asks again; one that only asks for other permissions does not
  // get them (the user's choice holds).
  return trustKey({ ...server, permissions: record.lanes }) === record.key ? record.lanes : null
}

/** The trust records per workspace, in one JSON file written atomically. */
export class McpTrustStore {
  private readonly lists: WorkspaceListsFile<TrustRecord>

  constructor(file: string) {
    this.lists = new WorkspaceListsFile(file, isRecord)
  }

  /** For one workspace: the permissions each of its servers may start with, null for one nobody trusted. */
  async trusted(workspace: string): Promise<(server: McpServerConfig) => Required<McpPermissions> | null> {
    const records = WorkspaceListsFile.listOf(await this.lists.read(), workspace)
    return (server) => {
      for (const record of records) {
        const permissions = permissionsBy(record, server)
        if (permissions) return permissions
      }
      return null
    }
  }

  /** Trusts `server` with `lanes` (the dialog's choice; the file's own by default), replacing what it had. */
  async trust(workspace: string, server: McpServerConfig, lanes = server.permissions): Promise<void> {
    const all = await this.lists.read()
    const records = WorkspaceListsFile.listOf(all, workspace).filter((r) => permissionsBy(r, server) === null)
    records.push({ key: trustKey({ ...server, permissions: lanes }), lanes })
    await this.lists.write(all, workspace, records)
  }
}

function isRecord(value: unknown): value is TrustRecord {
  if (typeof value === 'string') return true
  if (typeof value !== 'object' || value === null) return false
  const { key, lanes } = value as { key?: unknown; lanes?: unknown }
  const parsed = McpPermissions.required().safeParse(lanes)
  return typeof key === 'string' && parsed.success
}
