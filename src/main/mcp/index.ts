import { sandboxSupport } from '../tools/bash/sandbox/launch'
import type { ToolRegistry } from '../tools/registry'
import type { McpServersView } from '../../shared/ipc'
import { DEFAULT_CONTEXT_WINDOW } from '../../shared/models'
import {
  describeProblem,
  loadMcpConfigs,
  type McpConfigProblem,
  type McpPermissions,
  type McpServerConfig,
} from './config'
import type { McpHub } from './hub'
import type { McpOAuthStore } from './oauth'
import { trustKey, type McpTrustStore } from './trust'

export type { McpHub } from './hub'
export { McpTrustStore, trustKey } from './trust'
export { McpOAuthStore, signIn, type SecretSlot } from './oauth'
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
  /** What was wrong with the user's servers of Settings (each shown as a misconfigured server). */
  userProblems?: readonly McpConfigProblem[]
  /**
   * The permissions a workspace server may start with, null for none (`--trust-project-mcp`: those of its
   * entry; the app: what the user chose in the trust dialog).
   */
  trust(server: McpServerConfig): Required<McpPermissions> | null
  /** Tool definitions over a tenth of it are found through a search tool (default: Claude's window). */
  contextWindowTokens?: number
  /** Where remote servers' OAuth tokens are kept. */
  oauth?: McpOAuthStore
}): Promise<{ hub: McpHub; registry: ToolRegistry } | null> {
  const loaded = await loadMcpConfigs(opts)
  const { servers } = loaded
  const problems = [...(opts.userProblems ?? []), ...loaded.problems]
  if (servers.length === 0 && problems.length === 0) return null
  // The MCP SDK and its schema validator load here, for a session that has servers: most have none.
  const { McpHub } = await import('./hub')
  const hub = new McpHub({
    workspace: opts.workspace,
    servers,
    problems,
    trust: opts.trust,
    reserved: new Set(opts.registry.names()),
    contextWindowTokens: opts.contextWindowTokens ?? DEFAULT_CONTEXT_WINDOW,
    ...(opts.oauth ? { oauth: opts.oauth } : {}),
  })
  hub.start()
  return { hub, registry: opts.registry.withSource(hub) }
}

/** The workspace's own servers as the trust dialog shows them. */
export async function workspaceServers(workspace: string, store: McpTrustStore): Promise<McpServersView> {
  const { servers, problems } = await loadMcpConfigs({ workspace, userFiles: [] })
  const trusted = await store.trusted(workspace)
  const sandbox = sandboxSupport()
  return {
    servers: servers.map((s) => {
      const given = trusted(s)
      return {
        name: s.name,
        kind: s.kind,
        ...(s.kind === 'stdio'
          ? { command: s.command, args: s.args, env: s.env }
          : { url: s.url, headers: s.headers }),
        permissions: given ?? s.permissions,
        requested: s.permissions,
        trusted: given !== null,
        trustKey: trustKey(s),
        noSandbox: s.kind === 'stdio' && !sandbox.available ? sandbox.reason : null,
      }
    }),
    problems: problems.map(describeProblem),
  }
}

/**
 * Trusts the workspace's server with this key, if the file still holds it (false when it does not), with the
 * permissions the user chose in the dialog (by default those its entry asks for).
 */
export async function trustWorkspaceServer(
  workspace: string,
  store: McpTrustStore,
  key: string,
  lanes?: Required<McpPermissions>,
): Promise<boolean> {
  const { servers } = await loadMcpConfigs({ workspace, userFiles: [] })
  const server = servers.find((s) => trustKey(s) === key)
  if (!server) return false
  await store.trust(workspace, server, lanes)
  return true
}
