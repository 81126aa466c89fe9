import { readFile, stat } from 'node:fs/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { McpOAuthStore, signIn } from '../mcp/oauth'
import { startOAuthTestServer, type OAuthTestServer } from '../mcp/test-fixtures/oauth-server'
import { useTempDir } from '../test-fixtures/temp-dir'
import { mcpOAuthFileOf, mcpOAuthStoreOf } from './key-store'

const temp = useTempDir('lanes-oauth-store-')
let server: OAuthTestServer | null = null
afterEach(async () => {
  await server?.close()
  server = null
})

describe("a remote MCP server's OAuth record", () => {
  it('is kept like the API key where there is no keychain: a file of its own, readable by the user only', async () => {
    server = await startOAuthTestServer()
    const remote = { name: 'remote', url: server.url }
    const store = mcpOAuthStoreOf(temp(), { keychain: false })
    await signIn({ store, server: remote, open: (url) => void fetch(url) })

    const file = mcpOAuthFileOf(temp(), McpOAuthStore.idOf(remote))
    // A `.key` file: a secret by name for every tool, should the data folder be opened as a workspace.
    expect(file).toMatch(/mcp-oauth\/[0-9a-f]{32}\.key$/)
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    const kept = JSON.parse(await readFile(file, 'utf8')) as { plain: string }
    expect(JSON.parse(kept.plain)).toMatchObject({ tokens: { access_token: expect.stringMatching(/^at-/) } })

    // Another process (a new session, `lanes run`) reads it back; signing out removes the file.
    const again = mcpOAuthStoreOf(temp(), { keychain: false })
    expect((await again.status(remote)).signedIn).toBe(true)
    await again.forget(remote)
    await expect(stat(file)).rejects.toThrow(/ENOENT/)
  })

  it('is sealed where the app can encrypt it', async () => {
    server = await startOAuthTestServer()
    const remote = { name: 'remote', url: server.url }
    const sealer = {
      encrypt: (plain: string) => Buffer.from(plain).toString('base64'),
      decrypt: (sealed: string) => Buffer.from(sealed, 'base64').toString('utf8'),
    }
    const store = mcpOAuthStoreOf(temp(), { keychain: false, sealer })
    await signIn({ store, server: remote, open: (url) => void fetch(url) })
    const text = await readFile(mcpOAuthFileOf(temp(), McpOAuthStore.idOf(remote)), 'utf8')
    expect(JSON.parse(text)).toEqual({ sealed: expect.any(String) })
    expect(text).not.toContain('at-')
  })
})
