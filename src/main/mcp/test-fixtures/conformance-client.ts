import type { Tool as McpToolDef } from '@modelcontextprotocol/sdk/types.js'
import { defaultPermissions } from '../config'
import { McpConnection } from '../connection'
import { McpOAuthStore, signIn } from '../oauth'

/**
 * Lanes' MCP client wiring (McpConnection: the SDK's client with our lifecycle around it) as the command the
 * MCP conformance suite runs for its client scenarios: it is given the scenario server's URL as its last
 * argument, connects to it as a user's HTTP server would be, calls every tool the server lists (arguments made
 * from each tool's schema), and exits 0 when every step answered, 1 otherwise. The suite judges the traffic.
 * A server that needs a sign-in (the auth scenarios) is signed in to as the app would (mcp/oauth.ts), with a
 * "browser" that follows the authorization URL (the suite's authorization server redirects straight back).
 */

/** The sign-in kept in memory for this one run. */
const slots = new Map<string, string>()
const oauth = new McpOAuthStore((id) => ({
  get: async () => slots.get(id) ?? null,
  set: async (value: string) => void slots.set(id, value),
  clear: async () => void slots.delete(id),
}))

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
  oauth,
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
/** Signs in as the app does when the user chooses "Sign in", then lets the waiting connection go on. */
async function signInAgain(): Promise<void> {
  try {
    await signIn({ store: oauth, server: { name: 'conformance', url }, open: (page) => void fetch(page) })
    connection.signedIn()
    await connection.whenSettled()
  } catch (e) {
    process.stderr.write(`sign-in failed: ${(e as Error).message}\n`)
  }
}
if (connection.status === 'needs-sign-in') await signInAgain()
for (const tool of connection.status === 'ready' ? tools : []) {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>
  const args = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, sample(v)]))
  const call = () =>
    connection.callTool(tool.name, args, {
      signal: new AbortController().signal,
      onProgress: () => undefined,
    })
  try {
    let result
    try {
      result = await call()
    } catch (e) {
      // A tool that needs more than the sign-in gave (a step-up): sign in again, as the user would, and retry.
      if (connection.status !== 'needs-sign-in') throw e
      await signInAgain()
      result = await call()
    }
    process.stdout.write(`${tool.name}: ${JSON.stringify(result.content)}\n`)
  } catch (e) {
    failed = true
    process.stderr.write(`${tool.name} failed: ${(e as Error).message}\n`)
  }
}
await connection.close()
process.exit(failed ? 1 : 0)
