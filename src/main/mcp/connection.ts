import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { CallToolResult, Tool as McpToolDef } from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation'
import type { McpServerConfig } from './config'
import { serverLaunch, type ServerLaunch } from './launch'
import { LanesOAuthProvider, usesOwnAuthorization, type McpOAuthStore } from './oauth'

/**
 * One MCP server, through the SDK's client: started in the background, restarted after a crash, stopped with
 * the session. The protocol is the SDK's; what is ours is the lifecycle around it: a start that never answers
 * times out, a call in flight when the server dies gets an error (and the server is started again), a flood of
 * stderr or notifications stays within fixed bounds.
 */

export type ServerStatus = 'starting' | 'ready' | 'failed' | 'restarting' | 'stopped' | 'needs-sign-in'

export interface ConnectionEvents {
  status(status: ServerStatus, message?: string): void
  /** The server's tool list, at start and whenever it says it changed. */
  tools(tools: McpToolDef[]): void
}

/** A crash restarts the server at most this often within RESTART_WINDOW_MS; then it stays failed. */
const MAX_RESTARTS = 3
const RESTART_WINDOW_MS = 60_000
/** What is kept of a server's stderr, for the message when it fails. */
const STDERR_TAIL = 4096
/** A single message above this closes the connection (the SDK's read buffer), so memory stays bounded. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024
/** The SDK's error for a message over MAX_MESSAGE_BYTES. */
const TOO_LARGE = /exceeded maximum size/

/**
 * Ends a server at once: a sandboxed one with SIGKILL (bubblewrap's namespace dies with it), one run without a
 * sandbox with SIGTERM, which a launcher such as npx passes on to the server it started.
 */
function killServer(transport: StdioClientTransport, sandboxed: boolean): void {
  const pid = transport.pid
  if (pid === null) return
  try {
    process.kill(pid, sandboxed ? 'SIGKILL' : 'SIGTERM')
  } catch {
    // Already gone.
  }
}

export class McpConnection {
  private client: Client | null = null
  private state: ServerStatus | 'new' = 'new'
  private ready: Promise<void> = Promise.resolve()
  private stderr = ''
  private restarts: number[] = []
  private closing = false
  private lastError: string | undefined
  /** How a stdio server starts (its sandbox prepared), worked out at its first start: never on the way of a request. */
  private launch: ServerLaunch | null | undefined
  /** An HTTP server's OAuth (stored tokens, refreshed by the SDK); none where its entry sets Authorization. */
  private oauthProvider: LanesOAuthProvider | null = null

  constructor(
    readonly config: McpServerConfig,
    private readonly workspace: string,
    private readonly events: ConnectionEvents,
    private readonly oauth?: McpOAuthStore,
  ) {}

  get status(): ServerStatus | 'new' {
    return this.state
  }

  /** Whether it runs in the OS sandbox (HTTP servers run elsewhere: nothing to confine here). */
  get sandboxed(): boolean | undefined {
    return this.launch?.sandboxed
  }

  get sandboxNote(): string | undefined {
    return this.launch?.note
  }

  get timeoutMs(): number {
    return this.config.permissions.timeoutSec * 1000
  }

  /** Resolves once the current start (or restart) is over, ready or failed. */
  whenSettled(): Promise<void> {
    return this.ready
  }

  /** After the user signed in: a server that was waiting for it connects again. */
  signedIn(): void {
    if (this.state === 'needs-sign-in' && !this.closing) void this.start()
  }

  /** Starts the server; resolves when it is ready or has failed (never rejects). */
  start(): Promise<void> {
    this.ready = this.connect('starting')
    return this.ready
  }

  private prepare(): void {
    if (this.launch !== undefined) return
    const launch = this.config.kind === 'stdio' ? serverLaunch(this.config, this.workspace) : null
    this.launch = launch && !('error' in launch) ? launch : null
    if (launch && 'error' in launch) this.lastError = launch.error
  }

  private async connect(status: 'starting' | 'restarting'): Promise<void> {
    if (this.closing) return
    this.prepare()
    if (this.state !== status) this.setStatus(status)
    if (this.config.kind === 'stdio' && !this.launch) {
      this.setStatus('failed', this.lastError)
      return
    }
    const client = new Client(
      { name: 'lanes', version: '0.1.0' },
      {
        capabilities: {},
        jsonSchemaValidator: this.outputValidator,
        listChanged: {
          tools: {
            debounceMs: 100,
            onChanged: (error, tools) => {
              if (client === this.client && !error && tools) this.events.tools(tools)
            },
          },
        },
      },
    )
    const transport = this.transport()
    let ended!: () => void
    this.ended.set(client, new Promise<void>((resolve) => (ended = resolve)))
    client.onclose = () => {
      ended()
      this.onClosed(client)
    }
    client.onerror = (error) => {
      this.lastError = error.message
      // An answer over the limit: the SDK drops what it read and closes, but a close waits seconds for the
      // server to end while the rest of its answer keeps being read (and copied). The server is killed now.
      if (TOO_LARGE.test(error.message) && transport instanceof StdioClientTransport)
        killServer(transport, this.launch?.sandboxed === true)
    }
    this.client = client
    try {
      await client.connect(transport, { timeout: this.timeoutMs })
      if (this.closing) return
      const tools = await this.listTools(client)
      if (client !== this.client || this.closing) return
      this.events.tools(tools)
      this.setStatus('ready')
    } catch (e) {
      if (client !== this.client || this.closing) return
      this.client = null
      if (this.oauthProvider?.needsSignIn) {
        this.setStatus('needs-sign-in', (e as Error).message)
        this.retire(client)
        return
      }
      const timedOut = /timed out|timeout/i.test((e as Error).message)
      const why = timedOut
        ? `it did not answer within ${this.config.permissions.timeoutSec} s`
        : (this.lastError ?? (e as Error).message)
      this.setStatus('failed', `${why}${this.stderrNote()}`)
      this.retire(client)
    }
  }

  private transport(): Transport {
    if (this.config.kind === 'http') {
      const server = { name: this.config.name, url: this.config.url }
      const own = usesOwnAuthorization(this.config.headers)
      this.oauthProvider = this.oauth && !own ? new LanesOAuthProvider(this.oauth, server, null) : null
      return new StreamableHTTPClientTransport(new URL(this.config.url), {
        requestInit: { headers: this.config.headers },
        ...(this.oauthProvider && this.oauth
          ? { authProvider: this.oauthProvider, fetch: this.oauth.fetch }
          : {}),
      })
    }
    const launch = this.launch as ServerLaunch
    const transport = new StdioClientTransport({
      command: launch.command,
      args: launch.args,
      env: launch.env,
      cwd: launch.cwd,
      stderr: 'pipe',
      maxBufferSize: MAX_MESSAGE_BYTES,
    })
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL)
    })
    return transport
  }

  private async listTools(client: Client): Promise<McpToolDef[]> {
    const tools: McpToolDef[] = []
    let cursor: string | undefined
    // A server that pages forever is cut off: a hundred pages is more tools than any model can use.
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : {}, { timeout: this.timeoutMs })
      tools.push(...result.tools)
      cursor = result.nextCursor
      if (!cursor) break
    }
    return tools
  }

  private onClosed(client: Client): void {
    if (client !== this.client || this.closing) return
    // A start that fails is settled where it fails (the SDK closes an HTTP client before `connect` rejects).
    if (this.state !== 'ready') return
    this.client = null
    const now = Date.now()
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS)
    if (this.restarts.length >= MAX_RESTARTS) {
      this.setStatus(
        'failed',
        `it stopped ${MAX_RESTARTS + 1} times within a minute, so it is not started again${this.stderrNote()}`,
      )
      return
    }
    this.restarts.push(now)
    const delay = 200 * 2 ** (this.restarts.length - 1)
    let resolveReady!: () => void
    this.ready = new Promise<void>((resolve) => (resolveReady = resolve))
    this.setStatus('restarting', `it stopped unexpectedly${this.stderrNote()}`)
    setTimeout(() => {
      if (this.closing) return resolveReady()
      this.stderr = ''
      void this.connect('restarting').then(resolveReady)
    }, delay).unref()
  }

  /**
   * Calls a tool. A server still starting (or restarting) is waited for; one that failed is an error. The
   * SDK sends `notifications/cancelled` when `signal` aborts and raises a timeout error when the call runs past
   * the server's timeout.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: { signal: AbortSignal; onProgress: (text: string) => void },
  ): Promise<CallToolResult> {
    if (this.state !== 'ready') await untilReadyOrAborted(this.ready, opts.signal)
    opts.signal.throwIfAborted()
    const client = this.client
    if (!client || this.state !== 'ready') {
      throw new ServerUnavailable(
        `The MCP server "${this.config.name}" is not running (${this.state}${this.lastStatusMessage ? `: ${this.lastStatusMessage}` : ''}).`,
      )
    }
    try {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal: opts.signal,
        timeout: this.timeoutMs,
        resetTimeoutOnProgress: false,
        onprogress: (p) => {
          const of = p.total !== undefined ? `/${p.total}` : ''
          opts.onProgress(`${p.message ? `${p.message} ` : ''}(${p.progress}${of})\n`)
        },
      })) as CallToolResult
    } catch (e) {
      if (opts.signal.aborted) throw e
      if (this.oauthProvider?.needsSignIn && client === this.client) {
        // Its tokens ran out and could not be refreshed: the user signs in again, the run goes on.
        this.client = null
        this.setStatus('needs-sign-in', (e as Error).message)
        this.retire(client)
        throw new ServerUnavailable((e as Error).message)
      }
      const message = (e as Error).message
      if (/Connection closed/i.test(message) || client !== this.client) {
        throw new ServerUnavailable(
          `The MCP server "${this.config.name}" stopped while this call was running, so whether it completed is unknown; Lanes is starting it again.${this.lastError && TOO_LARGE.test(this.lastError) ? ` Its answer was larger than ${MAX_MESSAGE_BYTES / 1024 / 1024} MiB, which Lanes does not take.` : ''}`,
        )
      }
      if (/timed out|timeout/i.test(message)) {
        throw new ServerUnavailable(
          `The MCP server "${this.config.name}" did not answer within ${this.config.permissions.timeoutSec} s; the call was cancelled.`,
        )
      }
      throw new ServerUnavailable(`The MCP server "${this.config.name}" answered with an error: ${message}`)
    }
  }

  private lastStatusMessage: string | undefined

  /**
   * The SDK checks tools' results against their output schemas with it. Made at the first such check, not with
   * every client (an Ajv instance costs milliseconds while the first request streams); one per server, so a
   * schema's `$id` never reaches another server's.
   */
  private readonly outputValidator: jsonSchemaValidator = (() => {
    let ajv: AjvJsonSchemaValidator | undefined
    return { getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema) }
  })()

  private setStatus(status: ServerStatus, message?: string): void {
    this.state = status
    this.lastStatusMessage = message
    this.events.status(status, message)
  }

  private stderrNote(): string {
    const tail = this.stderr.trim().split('\n').slice(-3).join(' ').slice(-500)
    return tail ? `. It printed: ${tail}` : ''
  }

  /** Stops the server (its process, and with bubblewrap everything it started). */
  async close(): Promise<void> {
    if (this.closing) return
    this.closing = true
    const client = this.client
    this.client = null
    if (client) this.retire(client)
    await Promise.all(this.retiring)
    // One that never started has nothing to report.
    if (this.state === 'new') this.state = 'stopped'
    else this.setStatus('stopped')
  }

  /** Closing a client ends its process (stdin closed, then SIGTERM, then SIGKILL); `close()` waits for all. */
  private readonly retiring = new Set<Promise<void>>()

  /**
   * Resolves when a client's connection has closed: for stdio, when its process has exited. The SDK may already
   * be closing it (a start that timed out), in which case `close()` returns at once while the process still
   * runs; waiting for this is what makes "stopped" mean gone.
   */
  private readonly ended = new WeakMap<Client, Promise<void>>()

  private retire(client: Client): void {
    const gone = this.ended.get(client) ?? Promise.resolve()
    // The SDK's close ends stdin, then SIGTERM after 2 s, then SIGKILL after 2 s more.
    const limit = new Promise<void>((resolve) => setTimeout(resolve, 6000).unref())
    const done: Promise<void> = client
      .close()
      .catch(() => undefined)
      .then(() => Promise.race([gone, limit]))
      .then(() => void this.retiring.delete(done))
    this.retiring.add(done)
  }
}

/** A call that could not reach the server: an error result for the model, never a crash of the run. */
export class ServerUnavailable extends Error {}

/** Waits for a start, or for the call's stop: the listener goes with it, so a long run collects none. */
function untilReadyOrAborted(ready: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
    void ready.then(done)
  })
}
