import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'

/**
 * OAuth for remote MCP servers, through the SDK's client auth (`auth()` in client/auth.js: discovery, dynamic
 * client registration, PKCE, the code exchange, refresh): what is ours is where its results are kept and how
 * the user's browser gets there and back.
 *
 * - Kept like the API key: one secret slot per server (keychain entry, else a sealed file, else a 0600 `.key`
 *   file in Lanes' data folder, which no tool reads), keyed to the server's name and URL, so tokens never go
 *   to a URL they were not obtained for.
 * - A session connects with a passive provider: it sends stored tokens and lets the SDK refresh them on a 401;
 *   when only an interactive sign-in would help, it registers nothing and opens nothing: the server is
 *   reported as needing sign-in and the session goes on.
 * - `signIn` is the interactive flow: a loopback listener on 127.0.0.1 with a random port receives the
 *   redirect; the `state` must match (compared in constant time) or the request is refused and the listener
 *   keeps waiting for the real one.
 */

/** One stored secret value: the API key's kind of store (app/key-store.ts `KeyStore` fits). */
export interface SecretSlot {
  get(): Promise<string | null>
  set(value: string): Promise<unknown>
  clear(): Promise<void>
}

/** What is kept per server. */
export interface OAuthRecord {
  client?: OAuthClientInformationMixed
  tokens?: OAuthTokens
  /** Who signed in, from the OpenID id_token when the server gives one. */
  account?: string
}

export interface McpOAuthServer {
  name: string
  url: string
}

/** Where each server's record lives (cached in memory: the SDK reads the tokens before every request). */
export class McpOAuthStore {
  private readonly cache = new Map<string, OAuthRecord | null>()
  private readonly watchers = new Set<(value: string) => void>()
  private readonly refreshing = new Map<string, Promise<Response>>()

  /**
   * The fetch a server's transport uses. Two requests that find the access token expired refresh it side by
   * side; with rotating refresh tokens the second would fail on the refresh token the first used up (and the SDK
   * would then forget the new tokens too). The same refresh, asked twice, is sent once and both get its answer.
   */
  readonly fetch: FetchLike = async (url, init) => {
    const body = init?.body
    const token =
      init?.method === 'POST' && body instanceof URLSearchParams && body.get('grant_type') === 'refresh_token'
        ? body.get('refresh_token')
        : null
    if (!token) return fetch(url, init)
    let answer = this.refreshing.get(token)
    if (!answer) {
      answer = fetch(url, init)
      this.refreshing.set(token, answer)
      // A used-up refresh token never comes again; the entry goes after a while, failed or not.
      setTimeout(() => this.refreshing.delete(token), 60_000).unref()
    }
    return (await answer).clone()
  }
  /**
   * What a session's connection learned and a sign-in needs, in memory only: where the server's metadata is
   * (the SDK's discovery state) and the scope it last asked for (a step-up).
   */
  readonly learned = new Map<string, { discovery?: OAuthDiscoveryState; scope?: string }>()

  constructor(private readonly slot: (id: string) => SecretSlot) {}

  /** The slot of a server: its name and URL hashed (a file name, a keychain account). */
  static idOf(server: McpOAuthServer): string {
    return createHash('sha256').update(`${server.name}\0${server.url}`).digest('hex').slice(0, 32)
  }

  async get(server: McpOAuthServer): Promise<OAuthRecord | null> {
    const id = McpOAuthStore.idOf(server)
    if (this.cache.has(id)) return this.cache.get(id) ?? null
    let record: OAuthRecord | null = null
    const text = await this.slot(id)
      .get()
      .catch(() => null)
    if (text !== null) {
      try {
        const parsed = JSON.parse(text) as unknown
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
          record = parsed as OAuthRecord
      } catch {
        // Unreadable: as if nothing were stored (the user signs in again).
      }
    }
    this.cache.set(id, record)
    return record
  }

  async update(server: McpOAuthServer, change: (record: OAuthRecord) => OAuthRecord | null): Promise<void> {
    const id = McpOAuthStore.idOf(server)
    const next = change({ ...((await this.get(server)) ?? {}) })
    const empty = next === null || (next.client === undefined && next.tokens === undefined)
    this.cache.set(id, empty ? null : next)
    for (const value of tokenValues(next)) for (const watch of this.watchers) watch(value)
    if (empty) await this.slot(id).clear()
    else await this.slot(id).set(JSON.stringify(next))
  }

  /** The token values stored for a server: a running session's redactor hides them from every tool result. */
  async secretValues(server: McpOAuthServer): Promise<string[]> {
    return tokenValues(await this.get(server))
  }

  /** Calls `watch` with each token value stored from now on (a refresh's); returns the function that stops it. */
  watch(watch: (value: string) => void): () => void {
    this.watchers.add(watch)
    return () => void this.watchers.delete(watch)
  }

  /** Signs out: the tokens and the client registration are forgotten. */
  async forget(server: McpOAuthServer): Promise<void> {
    await this.update(server, () => null)
  }

  /** What Settings shows: signed in or not, as whom, where. */
  async status(
    server: McpOAuthServer,
  ): Promise<{ signedIn: boolean; account: string | null; issuer: string | null }> {
    const record = await this.get(server)
    const issuer = record?.tokens?.issuer ?? record?.client?.issuer
    return {
      signedIn: record?.tokens !== undefined,
      account: record?.account ?? null,
      issuer: issuer ? hostOf(issuer) : null,
    }
  }
}

function tokenValues(record: OAuthRecord | null): string[] {
  const t = record?.tokens
  const c = record?.client as { client_secret?: unknown } | undefined
  return [t?.access_token, t?.refresh_token, t?.id_token, c?.client_secret].filter(
    (v): v is string => typeof v === 'string' && v !== '',
  )
}

function hostOf(url: string): string {
  try {
    return new URL(url).host
  } catch {
    return url
  }
}

/** An entry that sets its own Authorization header (a token the user pasted) is left to it: no OAuth. */
export function usesOwnAuthorization(headers: Record<string, unknown>): boolean {
  return Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')
}

/** A server needs an interactive sign-in, which a session's connection never starts by itself. */
export class NeedsSignIn extends Error {
  constructor(server: string) {
    super(`The MCP server "${server}" needs you to sign in: open Settings and choose "Sign in" beside it.`)
  }
}

/** The redirect path of the loopback listener. */
const CALLBACK_PATH = '/callback'
/** Where a session's provider says it would be redirected (never listened on: it starts no sign-in). */
const PASSIVE_REDIRECT = `http://127.0.0.1${CALLBACK_PATH}`

/**
 * The SDK's `OAuthClientProvider` for one server. Passive (a session): stored tokens and refresh only.
 * Interactive (`signIn`): registers where needed and sends the user's browser to the authorization URL.
 */
export class LanesOAuthProvider implements OAuthClientProvider {
  /** Set when the server wanted an interactive sign-in this provider would not start. */
  needsSignIn = false
  private verifier: string | null = null

  constructor(
    private readonly store: McpOAuthStore,
    private readonly server: McpOAuthServer,
    private readonly interactive: {
      redirectUrl: string
      state: string
      open(url: URL): void | Promise<void>
    } | null,
  ) {}

  get redirectUrl(): string {
    return this.interactive?.redirectUrl ?? PASSIVE_REDIRECT
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Lanes',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }

  state(): string {
    return this.interactive?.state ?? randomBytes(32).toString('base64url')
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const client = (await this.store.get(this.server))?.client
    if (!this.interactive) {
      // Registering takes a redirect address, which only a sign-in listens on.
      if (!client) throw this.signInNeeded()
      return client
    }
    // The listener's port is new with each sign-in: a registration for another redirect address is replaced.
    const uris =
      'redirect_uris' in (client ?? {}) ? (client as { redirect_uris: unknown[] }).redirect_uris : null
    if (client && uris && !uris.map(String).includes(this.redirectUrl)) return undefined
    return client
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    await this.store.update(this.server, (r) => ({ ...r, client }))
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    return (await this.store.get(this.server))?.tokens
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const account = accountOf(tokens.id_token)
    await this.store.update(this.server, (r) => ({
      ...r,
      tokens,
      ...(account ? { account } : {}),
    }))
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.store.learned.get(McpOAuthStore.idOf(this.server))?.discovery
  }

  saveDiscoveryState(discovery: OAuthDiscoveryState): void {
    const id = McpOAuthStore.idOf(this.server)
    this.store.learned.set(id, { ...this.store.learned.get(id), discovery })
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    if (!this.interactive) {
      // The scope it wants (more than the tokens have, for a step-up) is what the next sign-in asks for.
      const id = McpOAuthStore.idOf(this.server)
      const scope = url.searchParams.get('scope') ?? undefined
      this.store.learned.set(id, { ...this.store.learned.get(id), ...(scope ? { scope } : {}) })
      throw this.signInNeeded()
    }
    // The address comes from the server's metadata: only a web page is opened (never file:, nor an app's scheme).
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
      throw new Error(
        `the server's sign-in address is not an https: page (${url.protocol}), so Lanes does not open it`,
      )
    }
    await this.interactive.open(url)
  }

  saveCodeVerifier(verifier: string): void {
    // Lives as long as one sign-in, in this process only.
    this.verifier = verifier
  }

  codeVerifier(): string {
    if (this.verifier === null) throw new Error('No sign-in is in progress.')
    return this.verifier
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'verifier') this.verifier = null
    if (scope === 'discovery' || scope === 'all') this.store.learned.delete(McpOAuthStore.idOf(this.server))
    if (scope === 'discovery' || scope === 'verifier') return
    await this.store.update(this.server, (r) => {
      if (scope === 'all') return null
      if (scope === 'client') delete r.client
      else {
        delete r.tokens
        delete r.account
      }
      return r
    })
  }

  private signInNeeded(): NeedsSignIn {
    this.needsSignIn = true
    return new NeedsSignIn(this.server.name)
  }
}

/** The id_token's claims are for display only (never trusted for anything): who signed in. */
function accountOf(idToken: string | undefined): string | undefined {
  const payload = idToken?.split('.')[1]
  if (!payload) return undefined
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
    for (const key of ['email', 'preferred_username', 'name', 'sub']) {
      const value = claims[key]
      if (typeof value === 'string' && value.trim() !== '') return value.slice(0, 200)
    }
  } catch {
    // Not a JWT: nobody named.
  }
  return undefined
}

/** How long a sign-in waits for the browser to come back. */
export const SIGN_IN_TIMEOUT_MS = 5 * 60_000

export interface SignInOptions {
  store: McpOAuthStore
  server: McpOAuthServer
  /** The server's own headers of its entry (not Authorization: such an entry does not sign in). */
  headers?: Record<string, string>
  /** Opens the authorization URL: the system browser, or a message with the URL where there is none. */
  open(url: URL): void | Promise<void>
  signal?: AbortSignal
  timeoutMs?: number
}

/**
 * Signs in to one server: resolves when its tokens are stored (tokens that still work, or a refresh, are
 * enough), rejects with the reason (the server refused, the browser never came back, the user cancelled).
 * It connects as a session would, so the SDK learns from the server's 401 where its metadata is and which
 * scope it wants; the redirect's code then goes to the transport's `finishAuth`.
 */
export async function signIn(opts: SignInOptions): Promise<void> {
  // The SDK's client loads for a sign-in only: the store above is in every process, a sign-in in few.
  const [{ auth, UnauthorizedError }, { Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/auth.js'),
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ])
  const state = randomBytes(32).toString('base64url')
  const listener = await listen()
  const redirectUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}${CALLBACK_PATH}`
  let redirected = false
  const provider = new LanesOAuthProvider(opts.store, opts.server, {
    redirectUrl,
    state,
    open: (url) => {
      redirected = true
      return opts.open(url)
    },
  })
  const transport = new StreamableHTTPClientTransport(new URL(opts.server.url), {
    authProvider: provider,
    requestInit: { headers: opts.headers ?? {} },
  })
  const client = new Client({ name: 'lanes', version: '0.1.0' }, { capabilities: {} })
  try {
    const code = waitForCode(listener, state, opts.signal, opts.timeoutMs ?? SIGN_IN_TIMEOUT_MS)
    // Settled either way, so a flow that ends early leaves no unhandled rejection behind.
    code.promise.catch(() => undefined)
    let finish: (code: string) => Promise<unknown> = (code) => transport.finishAuth(code)
    try {
      // A server may ask for its sign-in at `initialize`, or only for its tools.
      await client.connect(transport)
      await client.listTools()
    } catch (e) {
      if (!(e instanceof UnauthorizedError) || !redirected) {
        throw new Error((e as Error).message || 'the server refused the connection', { cause: e })
      }
    }
    if (!redirected) {
      // Nothing asked yet, or a session was asked for more scope than its tokens have: sign in for it.
      const learned = opts.store.learned.get(McpOAuthStore.idOf(opts.server))
      const haveTokens = (await opts.store.get(opts.server))?.tokens !== undefined
      if (haveTokens && !learned?.scope) return
      const scope = learned?.scope
      const serverUrl = opts.server.url
      const first = await auth(provider, { serverUrl, ...(scope ? { scope } : {}) })
      if (first === 'AUTHORIZED' && !scope) return
      if (!redirected) throw new Error('the server did not ask for a sign-in')
      finish = (authorizationCode) =>
        auth(provider, { serverUrl, authorizationCode, ...(scope ? { scope } : {}) })
    }
    const { value, respond } = await code.promise
    try {
      await finish(value)
      const id = McpOAuthStore.idOf(opts.server)
      const learned = opts.store.learned.get(id)
      if (learned)
        opts.store.learned.set(id, { ...(learned.discovery ? { discovery: learned.discovery } : {}) })
      respond(200, `Signed in to "${opts.server.name}". You can close this tab and go back to Lanes.`)
    } catch (e) {
      respond(400, `Signing in to "${opts.server.name}" failed: ${(e as Error).message}`)
      throw e
    }
  } finally {
    await client.close().catch(() => undefined)
    listener.close()
    listener.closeAllConnections()
  }
}

function listen(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    // Loopback only, any free port (RFC 8252 §7.3): nothing off this machine can reach it.
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

type Respond = (status: number, text: string) => void

/**
 * The first redirect that carries this sign-in's `state`. Anything else is answered 400 and changes nothing: a
 * page that guesses the port cannot end or hijack the sign-in. The browser's request is answered once the code
 * is exchanged, so its tab says how it went.
 */
function waitForCode(
  listener: Server,
  state: string,
  signal: AbortSignal | undefined,
  timeoutMs: number,
): { promise: Promise<{ value: string; respond: Respond }> } {
  const expected = Buffer.from(state)
  const promise = new Promise<{ value: string; respond: Respond }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the browser did not come back within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    )
    timer.unref()
    const abort = (): void => {
      clearTimeout(timer)
      reject(new Error('the sign-in was cancelled'))
    }
    signal?.addEventListener('abort', abort, { once: true })
    let settled = false
    listener.on('request', (req, res) => {
      const answer: Respond = (status, text) => {
        res.writeHead(status, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'content-security-policy': "default-src 'none'",
        })
        res.end(`<!doctype html><meta charset="utf-8"><title>Lanes</title><p>${escapeHtml(text)}</p>`)
      }
      const url = new URL(req.url ?? '/', 'http://127.0.0.1')
      if (req.method !== 'GET' || url.pathname !== CALLBACK_PATH) return answer(404, 'Not found.')
      const given = Buffer.from(url.searchParams.get('state') ?? '')
      if (settled || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return answer(400, 'This sign-in link is not the one Lanes started; it was refused.')
      }
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', abort)
      const error = url.searchParams.get('error')
      if (error) {
        const description = url.searchParams.get('error_description')
        answer(400, `Signing in failed: ${error}${description ? ` (${description})` : ''}.`)
        return reject(
          new Error(`the server refused the sign-in: ${error}${description ? ` (${description})` : ''}`),
        )
      }
      const code = url.searchParams.get('code')
      if (!code) {
        answer(400, 'The sign-in came back without a code.')
        return reject(new Error('the sign-in came back without a code'))
      }
      resolve({ value: code, respond: answer })
    })
  })
  return { promise }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
