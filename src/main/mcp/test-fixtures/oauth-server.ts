import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express, { type Response } from 'express'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthRouter,
} from '@modelcontextprotocol/sdk/server/auth/router.js'
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js'
import type {
  AuthorizationParams,
  OAuthServerProvider,
} from '@modelcontextprotocol/sdk/server/auth/provider.js'
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js'
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'

/**
 * An OAuth-protected streamable HTTP MCP server for tests, built from the SDK's server-side auth pieces
 * (`mcpAuthRouter`: metadata, dynamic registration, authorize, token; `requireBearerAuth` on /mcp) with an
 * in-memory authorization server that signs everyone in as "ada@example.com" without a login page: its
 * authorize endpoint redirects straight back with a code. Access tokens live `accessTtlSec`; refresh tokens
 * rotate. Counts what happened, so a test can tell a refresh from a new sign-in.
 */

export interface OAuthTestServer {
  /** The MCP endpoint. */
  url: string
  counts: { registrations: number; codes: number; refreshes: number; toolCalls: number }
  /** Makes every refresh token unusable (the server revoked them). */
  revokeRefreshTokens(): void
  close(): Promise<void>
}

class Clients implements OAuthRegisteredClientsStore {
  readonly clients = new Map<string, OAuthClientInformationFull>()
  constructor(private readonly counts: OAuthTestServer['counts']) {}
  getClient(id: string): OAuthClientInformationFull | undefined {
    return this.clients.get(id)
  }
  registerClient(client: OAuthClientInformationFull): OAuthClientInformationFull {
    this.counts.registrations++
    this.clients.set(client.client_id, client)
    return client
  }
}

class Provider implements OAuthServerProvider {
  readonly clientsStore: Clients
  private readonly codes = new Map<string, { clientId: string; params: AuthorizationParams }>()
  private readonly access = new Map<string, { clientId: string; expiresAt: number }>()
  private readonly refresh = new Map<string, string>()

  constructor(
    private readonly counts: OAuthTestServer['counts'],
    private readonly accessTtlSec: number,
  ) {
    this.clientsStore = new Clients(counts)
  }

  async authorize(
    client: OAuthClientInformationFull,
    params: AuthorizationParams,
    res: Response,
  ): Promise<void> {
    const code = randomUUID()
    this.codes.set(code, { clientId: client.client_id, params })
    const target = new URL(params.redirectUri)
    target.searchParams.set('code', code)
    if (params.state !== undefined) target.searchParams.set('state', params.state)
    res.redirect(302, target.href)
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const entry = this.codes.get(code)
    if (!entry) throw new Error('unknown code')
    return entry.params.codeChallenge
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const entry = this.codes.get(code)
    if (!entry || entry.clientId !== client.client_id) throw new Error('unknown code')
    this.codes.delete(code)
    this.counts.codes++
    return this.issue(client.client_id, true)
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, token: string): Promise<OAuthTokens> {
    const owner = this.refresh.get(token)
    if (owner !== client.client_id) throw new InvalidGrantError('refresh token not valid')
    this.refresh.delete(token)
    this.counts.refreshes++
    return this.issue(client.client_id, false)
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const entry = this.access.get(token)
    if (!entry) throw new InvalidTokenError('unknown token')
    return { token, clientId: entry.clientId, scopes: [], expiresAt: Math.floor(entry.expiresAt / 1000) }
  }

  revokeRefreshTokens(): void {
    this.refresh.clear()
  }

  private issue(clientId: string, withIdToken: boolean): OAuthTokens {
    const accessToken = `at-${randomUUID()}`
    const refreshToken = `rt-${randomUUID()}`
    this.access.set(accessToken, { clientId, expiresAt: Date.now() + this.accessTtlSec * 1000 })
    this.refresh.set(refreshToken, clientId)
    const claims = Buffer.from(JSON.stringify({ sub: 'u1', email: 'ada@example.com' })).toString('base64url')
    return {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: this.accessTtlSec,
      refresh_token: refreshToken,
      ...(withIdToken ? { id_token: `e30.${claims}.sig` } : {}),
    }
  }
}

export async function startOAuthTestServer(opts: { accessTtlSec?: number } = {}): Promise<OAuthTestServer> {
  const counts = { registrations: 0, codes: 0, refreshes: 0, toolCalls: 0 }
  const provider = new Provider(counts, opts.accessTtlSec ?? 3600)
  const app = express()
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  const mcpUrl = new URL('/mcp', base)
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(base),
      resourceServerUrl: mcpUrl,
      // Tests make many requests from one address within seconds.
      authorizationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
    }),
  )
  const bearer = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
  })
  app.post('/mcp', express.json(), bearer, async (req, res) => {
    // Stateless, as the SDK's simple example: a server and a transport per request.
    const server = new McpServer({ name: 'oauth-test', version: '1.0.0' })
    server.registerTool(
      'whoami',
      { description: 'Says who is signed in.', annotations: { readOnlyHint: true } },
      async () => {
        counts.toolCalls++
        return { content: [{ type: 'text', text: `signed in as ada (client ${req.auth?.clientId ?? '?'})` }] }
      },
    )
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.on('close', () => void transport.close().then(() => server.close()))
    await server.connect(transport)
    await transport.handleRequest(req, res, req.body)
  })
  app.get('/mcp', bearer, (_req, res) => void res.status(405).end())
  app.delete('/mcp', bearer, (_req, res) => void res.status(405).end())
  return {
    url: mcpUrl.href,
    counts,
    revokeRefreshTokens: () => provider.revokeRefreshTokens(),
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections()
        http.close(() => resolve())
      }),
  }
}
