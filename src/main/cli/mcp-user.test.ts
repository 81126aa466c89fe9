import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { userMcpStores } from '../app/key-store'
import { UserMcpServers } from '../app/mcp-user-servers'
import { settingsFileOf } from '../app/paths'
import { signIn } from '../mcp/oauth'
import { startOAuthTestServer, type OAuthTestServer } from '../mcp/test-fixtures/oauth-server'
import { useTempDir } from '../test-fixtures/temp-dir'
import { finished, runWithMcp, TEST_SERVER } from './test-fixtures/mcp-run'

/**
 * `lanes run` and the user's own MCP servers of Settings: they are the user's (trusted, like `--mcp-config`), so
 * a headless run starts them too, with their keys and sign-ins from the same stores as the app; `--no-user-mcp`
 * leaves them out. Through the real CLI, the scripted model over HTTP, a real server process and a real
 * OAuth-protected HTTP server.
 */

const KEY = 'sk-test-4f9a8b7c6d5e4f3a2b1c0d9e'

describe("lanes run with the user's servers of Settings", () => {
  const base = useTempDir('lanes-mcp-user-')
  let workspace: string
  let sessionsDir: string
  let oauthServer: OAuthTestServer | null = null
  beforeEach(async () => {
    // The stores are files here, as on a machine without a keychain (never the developer's own keychain).
    vi.stubEnv('LANES_NO_KEYCHAIN', '1')
    workspace = join(base(), 'ws')
    sessionsDir = join(base(), 'sessions')
    await mkdir(workspace)
    await mkdir(sessionsDir)
  })
  afterEach(async () => {
    vi.unstubAllEnvs()
    await oauthServer?.close()
    oauthServer = null
  })

  /** Saves servers as Settings does: entries in settings.json, key-like values in the secrets store. */
  async function saveInSettings(
    servers: { name: string; server: Parameters<UserMcpServers['save']>[1]['server'] }[],
  ): Promise<void> {
    const user = new UserMcpServers(userMcpStores(sessionsDir, { keychain: false }).mcpSecrets)
    let entries = {}
    for (const { name, server } of servers) {
      const saved = await user.save(entries, {
        name,
        server,
        lanes: { workspace: 'read-write', network: false, timeoutSec: 30 },
      })
      if ('error' in saved) throw new Error(saved.error)
      entries = saved.entries
    }
    await writeFile(settingsFileOf(sessionsDir), JSON.stringify({ mcpServers: entries }))
  }

  it('starts them, with their keys; --no-user-mcp leaves them out', async () => {
    await saveInSettings([
      { name: 'mine', server: { kind: 'stdio', command: 'node', args: [TEST_SERVER], env: { GIVEN: KEY } } },
    ])
    const turns = [
      { afterReady: { mine: 1 }, blocks: [{ tool: 'mcp__mine__env', id: 'e1', input: {} }] },
      { blocks: [{ text: 'done' }] },
    ]
    const { code, events, requests, stderr } = await runWithMcp({ workspace, sessionsDir, turns })
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(events.find((e) => e.type === 'mcp.server' && e.status === 'ready')).toMatchObject({
      server: 'mine',
      origin: 'user',
    })
    // The key reached the server (its exact value is what the redactor hides) and never the model or the log.
    const env = finished(events, 'e1')
    expect(env?.isError).toBe(false)
    expect(env?.output).toContain("[secret from an MCP server's key in Settings hidden]")
    expect(JSON.stringify(requests)).not.toContain(KEY)
    expect(await allLogs()).not.toContain(KEY)

    const without = await runWithMcp({
      workspace,
      sessionsDir,
      args: ['--no-user-mcp'],
      turns: [{ blocks: [{ tool: 'mcp__mine__env', id: 'e2', input: {} }] }, { blocks: [{ text: 'ok' }] }],
    })
    expect(without.code).toBe(0)
    expect(without.events.some((e) => e.type === 'mcp.server')).toBe(false)
    expect(finished(without.events, 'e2')).toMatchObject({ isError: true })
    expect(finished(without.events, 'e2')?.output).toMatch(/Unknown tool/)
  })

  it("uses a remote server's stored sign-in; without one, reports it as needing sign-in and goes on", async () => {
    oauthServer = await startOAuthTestServer()
    await saveInSettings([{ name: 'remote', server: { kind: 'http', url: oauthServer.url, headers: {} } }])
    // Signed in from the app earlier: the tokens are in the data folder's store.
    const { mcpOAuth } = userMcpStores(sessionsDir, { keychain: false })
    const remote = { name: 'remote', url: oauthServer.url }
    await signIn({ store: mcpOAuth, server: remote, open: (url) => void fetch(url) })
    const token = (await mcpOAuth.get(remote))?.tokens?.access_token as string

    const turns = [
      { afterReady: { remote: 1 }, blocks: [{ tool: 'mcp__remote__whoami', id: 'w1', input: {} }] },
      { blocks: [{ text: 'done' }] },
    ]
    const signedIn = await runWithMcp({ workspace, sessionsDir, turns })
    expect(signedIn.code).toBe(0)
    expect(finished(signedIn.events, 'w1')).toMatchObject({ isError: false })
    expect(finished(signedIn.events, 'w1')?.output).toContain('signed in as ada')
    expect(await allLogs()).not.toContain(token)

    await mcpOAuth.forget(remote)
    const out = await runWithMcp({
      workspace,
      sessionsDir,
      turns: [
        // Its server starts once the first request is out; the call comes when it has given up on it.
        {
          afterStatus: { remote: 'needs-sign-in' },
          blocks: [{ tool: 'mcp__remote__whoami', id: 'w2', input: {} }],
        },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(out.code).toBe(0)
    expect(out.events.find((e) => e.type === 'mcp.server' && e.status === 'needs-sign-in')).toMatchObject({
      server: 'remote',
      origin: 'user',
    })
    expect(out.stderr).toMatch(/MCP server "remote" needs-sign-in: .*sign in/)
    expect(finished(out.events, 'w2')).toMatchObject({ isError: true })
    // Headless never registers a client nor opens a page: the one registration is the app's sign-in.
    expect(oauthServer.counts.registrations).toBe(1)
  })

  async function allLogs(): Promise<string> {
    const files = (await readdir(sessionsDir)).filter((f) => f.endsWith('.jsonl'))
    return (await Promise.all(files.map((f) => readFile(join(sessionsDir, f), 'utf8')))).join('\n')
  }
})
