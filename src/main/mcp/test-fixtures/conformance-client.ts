import type { Tool as McpToolDef } from '@modelcontextprotocol/sdk/types.js'
import { defaultPermissions } from '../config'
import { McpConnection } from '../connection'

/**
 * Lanes' MCP client wiring (McpConnection: the SDK's client with our lifecycle around it) as the command the
 * MCP conformance suite runs for its client scenarios: it is given the scenario server's URL as its last
 * argument, connects to it as a user's HTTP server would be, calls every tool the server lists (arguments made
 * from each tool's schema), and exits 0 when every step answered, 1 otherwise. The suite judges the traffic.
 */

const url = process.argv.at(-1) ?? ''
let tools: McpToolDef[] = []
const connection = new McpConnection(
  {
    name: 'conformance',
    origin: 'user',
    source: 'conformance',
    permissions: { ...defaultPermissions('user'), timeoutSec: 20 },
    kind: 'http',
    url,
    headers: {},
  },
  process.cwd(),
  {
    status: (status, message) => process.stderr.write(`server ${status}${message ? `: ${message}` : ''}\n`),
    tools: (listed) => {
      tools = listed
    },
  },
)

/** The simplest value a schema property accepts. */
function sample(schema: Record<string, unknown> | undefined): unknown {
  if (Array.isArray(schema?.enum) && schema.enum.length > 0) return schema.enum[0]
  switch (schema?.type) {
    case 'number':
    case 'integer':
      return 2
    case 'boolean':
      return true
    case 'array':
      return []
    case 'object':
      return {}
    default:
      return 'x'
  }
}

let failed = false
await connection.start()
if (connection.status !== 'ready') failed = true
for (const tool of connection.status === 'ready' ? tools : []) {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>
  const args = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, sample(v)]))
  try {
    const result = await connection.callTool(tool.name, args, {
      signal: new AbortController().signal,
      onProgress: () => undefined,
    })
    process.stdout.write(`${tool.name}: ${JSON.stringify(result.content)}\n`)
  } catch (e) {
    failed = true
    process.stderr.write(`${tool.name} failed: ${(e as Error).message}\n`)
  }
}
await connection.close()
process.exit(failed ? 1 : 0)
