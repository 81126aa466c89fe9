import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { ToolRegistry } from '../tools/registry'
import { makeToolContext } from '../tools/test-fixtures/tool-context'
import { useTempDir } from '../test-fixtures/temp-dir'
import { loadMcpConfigs } from './config'
import type { McpHub } from './hub'
import { openMcp, trustKey, trustWorkspaceServer, workspaceServers } from './index'
import { McpTrustStore } from './trust'

/**
 * The trust dialog's permission choices: written as the server's `"lanes"` key in the user's trust record,
 * honoured when the server starts, asked again only when the hash of what runs says so.
 */

const TEST_SERVER = fileURLToPath(new URL('./test-fixtures/test-server.mjs', import.meta.url))
const NONE = { workspace: 'none', network: false, timeoutSec: 60 } as const

describe('trusting a folder’s server with the permissions the user chose', () => {
  const base = useTempDir('lanes-mcp-trust-')
  let workspace: string
  let store: McpTrustStore
  let storeFile: string
  const hubs: McpHub[] = []
  beforeEach(async () => {
    workspace = join(base(), 'ws')
    await mkdir(workspace)
    storeFile = join(base(), 'mcp-trust.json')
    store = new McpTrustStore(storeFile)
  })
  afterEach(async () => {
    await Promise.all(hubs.splice(0).map((h) => h.close()))
  })

  const writeConfig = (entry: Record<string, unknown>) =>
    writeFile(join(workspace, '.mcp.json'), JSON.stringify({ mcpServers: { helper: entry } }))
  const only = async () => {
    const view = await workspaceServers(workspace, store)
    const server = view.servers[0]
    if (!server) throw new Error('no server listed')
    return server
  }

  it('keeps the choice as a lanes key; a changed file asks again only when what runs changed', async () => {
    await writeConfig({ command: process.execPath, args: [TEST_SERVER] })
    const shown = await only()
    expect(shown).toMatchObject({ trusted: false, permissions: { workspace: 'read-only', network: false } })

    expect(await trustWorkspaceServer(workspace, store, shown.trustKey, NONE)).toBe(true)
    expect(await only()).toMatchObject({
      trusted: true,
      permissions: NONE,
      requested: { workspace: 'read-only', network: false },
    })
    const record = JSON.parse(await readFile(storeFile, 'utf8'))[workspace]
    expect(record).toEqual([{ key: expect.stringMatching(/^[0-9a-f]{64}$/), lanes: NONE }])

    // The folder's file now asks for more: the server stays trusted, with what the user chose.
    await writeConfig({
      command: process.execPath,
      args: [TEST_SERVER],
      lanes: { workspace: 'read-write', network: true },
    })
    expect(await only()).toMatchObject({
      trusted: true,
      permissions: NONE,
      requested: { workspace: 'read-write', network: true },
    })

    // Changing the choice replaces the record (one per server), without asking anything else.
    const again = await only()
    const readOnly = { ...NONE, workspace: 'read-only' } as const
    expect(await trustWorkspaceServer(workspace, store, again.trustKey, readOnly)).toBe(true)
    expect(await only()).toMatchObject({ trusted: true, permissions: readOnly })
    expect(JSON.parse(await readFile(storeFile, 'utf8'))[workspace]).toHaveLength(1)

    // What runs changed (one more argument): nobody trusted this.
    await writeConfig({ command: process.execPath, args: [TEST_SERVER, '--x'] })
    expect(await only()).toMatchObject({ trusted: false, permissions: { workspace: 'read-only' } })
  })

  it('honours a record from before the choice existed (the file’s own permissions)', async () => {
    await writeConfig({ command: process.execPath, args: [TEST_SERVER] })
    const { servers } = await loadMcpConfigs({ workspace, userFiles: [] })
    await writeFile(storeFile, JSON.stringify({ [workspace]: [trustKey(servers[0] as never)] }))
    expect(await only()).toMatchObject({ trusted: true, permissions: { workspace: 'read-only' } })
  })

  it.skipIf(!sandboxSupport().available)(
    'starts the server with the chosen permissions: with "none" it cannot read the folder',
    async () => {
      await writeFile(join(workspace, 'notes.txt'), 'private notes\n')
      await writeConfig({ command: process.execPath, args: [TEST_SERVER] })
      const cat = async (): Promise<{ output: string; isError: boolean }> => {
        const opened = await openMcp({
          workspace,
          registry: new ToolRegistry([]),
          userFiles: [],
          trust: await store.trusted(workspace),
        })
        if (!opened) throw new Error('no servers')
        hubs.push(opened.hub)
        await opened.hub.settled()
        const tool = opened.registry.get('mcp__helper__cat')
        if (!tool) throw new Error('the server did not start')
        const result = await tool.execute({ path: join(workspace, 'notes.txt') }, makeToolContext(workspace))
        await opened.hub.close()
        return result
      }
      const shown = await only()
      await trustWorkspaceServer(workspace, store, shown.trustKey)
      expect(await cat()).toMatchObject({ isError: false, output: 'private notes\n' })
      await trustWorkspaceServer(workspace, store, shown.trustKey, NONE)
      const refused = await cat()
      expect(refused.isError).toBe(true)
      expect(refused.output).toContain('could not read')
    },
  )
})
