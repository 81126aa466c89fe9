import type { ToolRegistry } from '../tools/registry'
import { loadMcpConfigs, type McpServerConfig } from './config'
import { McpHub } from './hub'

export { McpHub } from './hub'
export { McpTrustStore, trustKey } from './trust'
export { loadMcpConfigs, parseMcpConfig, WORKSPACE_MCP_FILE, type McpServerConfig } from './config'

/**
 * A session's MCP servers, for the app and `lanes run` alike: the configuration read (the user's files, then
 * the workspace's `.mcp.json`), the trusted servers started in the background, and the registry the session
 * uses: the shared one plus the servers' tools. Call `hub.attach()` once the session exists and
 * `hub.close()` when it ends.
 */
export async function openMcp(opts: {
  workspace: string
  registry: ToolRegistry
  /** `--mcp-config` files: trusted, because the user named them. */
  userFiles: readonly string[]
  userServers?: readonly McpServerConfig[]
  /** Whether a workspace server may start (`--trust-project-mcp`, or the app's trust store). */
  trusted(server: McpServerConfig): boolean
}): Promise<{ hub: McpHub; registry: ToolRegistry } | null> {
  const { servers, problems } = await loadMcpConfigs(opts)
  if (servers.length === 0 && problems.length === 0) return null
  const hub = new McpHub({
    workspace: opts.workspace,
    servers,
    problems,
    trusted: opts.trusted,
    reserved: new Set(opts.registry.names()),
  })
  hub.start()
  return { hub, registry: opts.registry.withSource(hub) }
}
