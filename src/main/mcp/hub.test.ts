import { afterEach, describe, expect, it } from 'vitest'
import { makeToolContext } from '../tools/test-fixtures/tool-context'
import { ToolRegistry } from '../tools/registry'
import { useTempDir } from '../test-fixtures/temp-dir'
import { McpHub } from './hub'
import { stdioServer } from './test-fixtures/servers'
import { TOOL_SEARCH_NAME } from './tool-search'

describe('McpHub', () => {
  const dir = useTempDir('lanes-mcp-hub-')
  const hubs: McpHub[] = []
  afterEach(async () => {
    await Promise.all(hubs.splice(0).map((h) => h.close()))
  })

  async function hub(contextWindowTokens: number): Promise<{ hub: McpHub; registry: ToolRegistry }> {
    const made = new McpHub({
      workspace: dir(),
      servers: [stdioServer('t')],
      trust: (server) => server.permissions,
      reserved: new Set(),
      contextWindowTokens,
    })
    hubs.push(made)
    made.start()
    await made.settled()
    return { hub: made, registry: new ToolRegistry([]).withSource(made) }
  }

  it('offers every tool when their definitions fit in a tenth of the context window', async () => {
    const { registry } = await hub(200_000)
    const names = registry.definitions().map((d) => d.name)
    expect(names).toContain('mcp__t__wait')
    expect(names).not.toContain(TOOL_SEARCH_NAME)
  })

  it('over the budget: only the search tool is sent; what it finds is sent from then on, and callable anyway', async () => {
    const { hub: made, registry } = await hub(1000)
    expect(registry.definitions().map((d) => d.name)).toEqual([TOOL_SEARCH_NAME])
    const before = made.version()
    const search = registry.get(TOOL_SEARCH_NAME)
    const found = await search?.execute({ query: 'waits milliseconds' }, makeToolContext(dir()))
    expect(found?.output).toContain('mcp__t__wait')
    expect(made.version()).not.toBe(before)
    expect(registry.definitions().map((d) => d.name)).toContain('mcp__t__wait')
    // A tool no search loaded still runs when called by its name.
    const shapes = registry.get('mcp__t__shapes')
    expect(shapes?.server).toBe('t')
    const none = await search?.execute({ query: 'zebra' }, makeToolContext(dir()))
    expect(none?.output).toContain('No MCP tool matches')
  })
})
