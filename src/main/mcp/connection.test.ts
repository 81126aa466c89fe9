import { mkdir, rm, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { useTempDir } from '../test-fixtures/temp-dir'
import { defaultPermissions, type McpPermissions, type McpServerConfig } from './config'
import { McpConnection, ServerUnavailable } from './connection'

const TEST_SERVER = fileURLToPath(new URL('./test-fixtures/test-server.mjs', import.meta.url))
const sandboxed = sandboxSupport().available

describe('McpConnection', () => {
  const dir = useTempDir('lanes-mcp-conn-')
  const open: McpConnection[] = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()))
  })

  async function connect(lanes: McpPermissions = {}, origin: 'user' | 'workspace' = 'user') {
    const workspace = join(dir(), 'ws')
    await mkdir(workspace, { recursive: true })
    const config: McpServerConfig = {
      name: 't',
      origin,
      source: 'test',
      permissions: { ...defaultPermissions(origin), ...lanes },
      kind: 'stdio',
      command: 'node',
      args: [TEST_SERVER],
      env: { GIVEN: 'yes' },
    }
    const statuses: string[] = []
    const connection = new McpConnection(config, workspace, {
      status: (s) => statuses.push(s),
      tools: () => undefined,
    })
    open.push(connection)
    await connection.start()
    return { connection, workspace, statuses }
  }

  const call = (c: McpConnection, name: string, args: Record<string, unknown>, signal?: AbortSignal) =>
    c.callTool(name, args, { signal: signal ?? new AbortController().signal, onProgress: () => undefined })

  it('Stop cancels a call in flight at once, and the server goes on serving', async () => {
    const { connection } = await connect()
    const stop = new AbortController()
    const started = Date.now()
    const pending = call(connection, 'wait', { ms: 20_000 }, stop.signal)
    setTimeout(() => stop.abort(), 200)
    await expect(pending).rejects.toThrow()
    expect(Date.now() - started).toBeLessThan(5000)
    await expect(call(connection, 'wait', { ms: 1 })).resolves.toMatchObject({
      content: [{ type: 'text', text: 'waited 1 ms' }],
    })
  })

  it('a call past the server timeout ends with an error that says so', async () => {
    const { connection } = await connect({ timeoutSec: 1 })
    const error = await call(connection, 'wait', { ms: 10_000 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ServerUnavailable)
    expect((error as Error).message).toContain('did not answer within 1 s')
  })

  it('a server given no workspace cannot read it; its environment is its own and no more', async () => {
    if (!sandboxed) return console.warn('skipped: no sandbox on this machine')
    const { connection, workspace } = await connect({ workspace: 'none' }, 'workspace')
    await writeFile(join(workspace, 'secret.txt'), 'hidden')
    const read = await call(connection, 'cat', { path: join(workspace, 'secret.txt') })
    expect(read).toMatchObject({ isError: true, content: [{ text: 'could not read: ENOENT' }] })
    const env = await call(connection, 'env', {})
    const seen = JSON.parse((env.content[0] as { text: string }).text) as Record<string, unknown>
    expect(seen).toMatchObject({ home: '/tmp/home', cwd: '/tmp/home', given: 'yes', secret: null })
    expect(connection.sandboxed).toBe(true)
  })

  it('never shows the server the rest of HOME', async () => {
    if (!sandboxed) return console.warn('skipped: no sandbox on this machine')
    const { connection } = await connect()
    const file = join(homedir(), '.lanes-mcp-test-home-file')
    await writeFile(file, 'mine')
    try {
      const read = await call(connection, 'cat', { path: file })
      expect(read).toMatchObject({ isError: true, content: [{ text: 'could not read: ENOENT' }] })
      // The same server reads its own install folder (the test server's package).
      const own = await call(connection, 'cat', { path: TEST_SERVER })
      expect(own.isError).toBeFalsy()
    } finally {
      await rm(file, { force: true })
    }
  })
})
