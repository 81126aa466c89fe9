import { afterEach, describe, expect, it } from 'vitest'
import { useTempDir } from '../test-fixtures/temp-dir'
import { defaultPermissions, type McpServerConfig } from './config'
import { McpConnection, ServerUnavailable, type ServerStatus } from './connection'
import { McpOAuthStore, signIn, type McpOAuthStore as Store } from './oauth'
import { startOAuthTestServer, type OAuthTestServer } from './test-fixtures/oauth-server'

const temp = useTempDir('lanes-oauth-')

/**
 * Secret slots kept in a map standing for the key store (app/key-store.ts, whose files and keychain entries
 * app/mcp-oauth-store.test.ts checks): a store made on the same map is what another session would read.
 */
let slots = new Map<string, string>()
afterEach(() => void (slots = new Map()))
function mcpOAuthStoreOf(): Store {
  return new McpOAuthStore((id) => ({
    get: async () => slots.get(id) ?? null,
    set: async (value: string) => void slots.set(id, value),
    clear: async () => void slots.delete(id),
  }))
}
let server: OAuthTestServer | null = null
const connections: McpConnection[] = []

afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => c.close()))
  await server?.close()
  server = null
})

function httpConfig(url: string, headers: Record<string, string> = {}): McpServerConfig {
  return {
    name: 'remote',
    origin: 'user',
    source: 'Settings',
    permissions: { ...defaultPermissions('user'), timeoutSec: 10 },
    kind: 'http',
    url,
    headers,
  }
}

/** The "browser": follows the authorization URL (the server signs in at once and redirects back). */
function testBrowser(): { open(url: URL): void; pages: Promise<Response>[]; urls: URL[] } {
  const pages: Promise<Response>[] = []
  const urls: URL[] = []
  return {
    pages,
    urls,
    // Not awaited: a browser opens the page and returns; the loopback listener answers once signed in.
    open: (url) => {
      urls.push(url)
      pages.push(fetch(url))
    },
  }
}

async function connect(
  config: McpServerConfig,
  store: Store,
): Promise<{ connection: McpConnection; statuses: { status: ServerStatus; message?: string }[] }> {
  const statuses: { status: ServerStatus; message?: string }[] = []
  const connection = new McpConnection(
    config,
    temp(),
    { status: (status, message) => statuses.push({ status, message }), tools: () => undefined },
    store,
  )
  connections.push(connection)
  await connection.start()
  return { connection, statuses }
}

const call = (c: McpConnection) =>
  c.callTool('whoami', {}, { signal: new AbortController().signal, onProgress: () => undefined })

describe('OAuth for remote MCP servers', () => {
  it('signs in through the browser and a loopback redirect, keeps its client and tokens in its own slot, and the tool works', async () => {
    server = await startOAuthTestServer()
    const store = mcpOAuthStoreOf()
    const remote = { name: 'remote', url: server.url }
    const browser = testBrowser()

    await signIn({ store, server: remote, open: browser.open })

    // PKCE and state went out; the redirect came to a random port on 127.0.0.1.
    const asked = browser.urls[0] as URL
    expect(asked.searchParams.get('code_challenge_method')).toBe('S256')
    expect(asked.searchParams.get('state')).toMatch(/^[\w-]{43}$/)
    expect(asked.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)
    const page = await (browser.pages[0] as Promise<Response>)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('Signed in to &#34;remote&#34;')
    expect(server.counts).toMatchObject({ registrations: 1, codes: 1 })

    // One slot for the server, keyed to its name and URL: the client registered and the tokens, not the verifier.
    const kept = slots.get(McpOAuthStore.idOf(remote)) as string
    const record = JSON.parse(kept) as { tokens: { access_token: string }; client: { client_id: string } }
    expect(record.tokens.access_token).toMatch(/^at-/)
    expect(record.client.client_id).toBeTruthy()
    expect(kept).not.toContain('verifier')

    // A fresh store (another session, or `lanes run`) reads them back and the server's tool answers.
    const later = mcpOAuthStoreOf()
    expect(await later.status(remote)).toEqual({
      signedIn: true,
      account: 'ada@example.com',
      issuer: new URL(server.url).host,
    })
    const { connection, statuses } = await connect(httpConfig(server.url), later)
    expect(statuses.map((s) => s.status)).toEqual(['starting', 'ready'])
    const result = await call(connection)
    expect(result.content).toEqual([{ type: 'text', text: expect.stringContaining('signed in as ada') }])
  })

  it('refreshes the access token when it expires, without a new sign-in', async () => {
    server = await startOAuthTestServer({ accessTtlSec: 1 })
    const store = mcpOAuthStoreOf()
    const remote = { name: 'remote', url: server.url }
    await signIn({ store, server: remote, open: testBrowser().open })
    const first = (await store.get(remote))?.tokens?.access_token
    const { connection } = await connect(httpConfig(server.url), store)
    await call(connection)
    await new Promise((r) => setTimeout(r, 1200))

    const result = await call(connection)
    expect(result.isError).toBeFalsy()
    // No new sign-in: the same client, one code; refreshed (once more if connecting outlived the token).
    expect(server.counts).toMatchObject({ codes: 1, registrations: 1, toolCalls: 2 })
    expect(server.counts.refreshes).toBeGreaterThanOrEqual(1)
    const second = (await store.get(remote))?.tokens?.access_token
    expect(second).toMatch(/^at-/)
    expect(second).not.toBe(first)
    // Written through to the slot: a new store sees the refreshed token.
    expect((await mcpOAuthStoreOf().get(remote))?.tokens?.access_token).toBe(second)
  })

  it('sends one refresh when two requests find the token expired at once (refresh tokens rotate)', async () => {
    server = await startOAuthTestServer()
    const store = mcpOAuthStoreOf()
    const remote = { name: 'remote', url: server.url }
    await signIn({ store, server: remote, open: testBrowser().open })
    const record = await store.get(remote)
    const body = () =>
      new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: record?.tokens?.refresh_token as string,
        client_id: (record?.client as { client_id: string }).client_id,
      })
    const tokenUrl = new URL('/token', server.url)
    const [a, b] = await Promise.all([
      store.fetch(tokenUrl, { method: 'POST', body: body() }),
      store.fetch(tokenUrl, { method: 'POST', body: body() }),
    ])
    expect([a.status, b.status]).toEqual([200, 200])
    const [ta, tb] = (await Promise.all([a.json(), b.json()])) as { access_token: string }[]
    expect(ta?.access_token).toBe(tb?.access_token)
    expect(server.counts.refreshes).toBe(1)
  })

  it('refuses a redirect with the wrong state and keeps waiting for the real one', async () => {
    server = await startOAuthTestServer()
    const store = mcpOAuthStoreOf()
    const remote = { name: 'remote', url: server.url }
    let authorizationUrl!: URL
    const opened = new Promise<void>((resolve) => {
      void signIn({
        store,
        server: remote,
        open: (url) => {
          authorizationUrl = url
          resolve()
        },
      }).then(
        () => (signedIn = 'yes'),
        (e: Error) => (signedIn = e.message),
      )
    })
    let signedIn = 'pending'
    await opened
    const answer = await fetch(authorizationUrl, { redirect: 'manual' })
    const back = new URL(answer.headers.get('location') as string)
    const forged = new URL(back)
    forged.searchParams.set('state', 'x'.repeat(43))
    const refused = await fetch(forged)
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain('refused')
    const noState = new URL(back)
    noState.searchParams.delete('state')
    expect((await fetch(noState)).status).toBe(400)
    expect(await store.get(remote)).toMatchObject({ client: expect.anything() })
    expect((await store.get(remote))?.tokens).toBeUndefined()
    expect(signedIn).toBe('pending')

    expect((await fetch(back)).status).toBe(200)
    await expect.poll(() => signedIn).toBe('yes')
    expect((await store.get(remote))?.tokens?.access_token).toMatch(/^at-/)
    // The listener is gone with the sign-in.
    await expect(fetch(back)).rejects.toThrow()
  })

  it('reports a server that needs sign-in without tokens, registers nothing, opens nothing, and the call fails cleanly', async () => {
    server = await startOAuthTestServer()
    const store = mcpOAuthStoreOf()
    const { connection, statuses } = await connect(httpConfig(server.url), store)
    expect(statuses.map((s) => s.status)).toEqual(['starting', 'needs-sign-in'])
    expect(statuses[1]?.message).toMatch(/needs you to sign in/)
    expect(server.counts.registrations).toBe(0)
    await expect(call(connection)).rejects.toThrow(ServerUnavailable)

    // Signing in while it waits connects it.
    await signIn({ store, server: { name: 'remote', url: server.url }, open: testBrowser().open })
    connection.signedIn()
    await connection.whenSettled()
    expect(connection.status).toBe('ready')
    expect((await call(connection)).isError).toBeFalsy()
  })

  it('asks for a new sign-in when the refresh token stops working, and the session goes on', async () => {
    server = await startOAuthTestServer({ accessTtlSec: 1 })
    const store = mcpOAuthStoreOf()
    const remote = { name: 'remote', url: server.url }
    await signIn({ store, server: remote, open: testBrowser().open })
    const { connection, statuses } = await connect(httpConfig(server.url), store)
    server.revokeRefreshTokens()
    await new Promise((r) => setTimeout(r, 1200))
    await expect(call(connection)).rejects.toThrow(/needs you to sign in/)
    expect(statuses.at(-1)?.status).toBe('needs-sign-in')
    expect((await store.status(remote)).signedIn).toBe(false)
  })

  it('keeps tokens to the URL they were obtained for, and leaves a server with its own Authorization header alone', async () => {
    server = await startOAuthTestServer()
    const store = mcpOAuthStoreOf()
    await signIn({ store, server: { name: 'remote', url: server.url }, open: testBrowser().open })
    expect((await store.status({ name: 'remote', url: `${server.url}/other` })).signedIn).toBe(false)
    expect((await store.status({ name: 'other', url: server.url })).signedIn).toBe(false)

    const { statuses } = await connect(httpConfig(server.url, { Authorization: 'Bearer mine' }), store)
    expect(statuses.at(-1)?.status).toBe('failed')
  })
})
