import type { EventOf } from '../events'
import { own, setOwn } from '../own'
import { edit, type Reduction } from './draft'

/** The session's MCP servers: mcp.server. */

export function onMcpServer(r: Reduction, event: EventOf<'mcp.server'>): void {
  const s = r.state
  const { type: _type, seq: _seq, ...server } = event
  const servers = (s.mcpServers = edit(r, s.mcpServers))
  // A server's tools and sandbox stay known while it restarts or stops.
  const before = own(servers, event.server)
  setOwn(servers, event.server, {
    ...(before?.tools ? { tools: before.tools } : {}),
    ...(before?.sandboxed !== undefined ? { sandboxed: before.sandboxed } : {}),
    ...server,
  })
}
