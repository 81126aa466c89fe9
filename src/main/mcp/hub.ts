import type { Tool as McpToolDef } from '@modelcontextprotocol/sdk/types.js'
import type { McpToolInfo, SessionEventDraft } from '../../shared/events'
import type { ToolSource } from '../tools/registry'
import { definitionTokens, overBudget, serverTokens } from '../../shared/mcp-cost'
import { z } from 'zod'
import { defineTool, fail, type Tool } from '../tools/tool'
import { describeProblem, type McpConfigProblem, type McpPermissions, type McpServerConfig } from './config'
import { McpConnection, type ServerStatus } from './connection'
import type { McpOAuthServer, McpOAuthStore } from './oauth'
import { assignToolNames, sanitizePart, toolKey } from './names'
import { toolSearch } from './tool-search'
import { mcpTool } from './tools'

/**
 * A session's MCP servers: started together in the background once the session's first model request is on the
 * wire (`requestSent`), so nothing of their start (preparing the sandbox, spawning, their own start competing for
 * the CPU) comes before it; their tools join the requests of the turns after they are ready. Their tools are
 * offered through the registry as `mcp__<server>__<tool>` (a `ToolSource`), every change of state an `mcp.server`
 * event carrying the server's name, all stopped with the session. A workspace's server nobody trusted is never
 * started.
 */

/** A host that sends no request soon (a resumed session waiting for the user): the servers start anyway after this. */
const START_WITHOUT_REQUEST_MS = 1000

export interface McpHubOptions {
  workspace: string
  servers: readonly McpServerConfig[]
  problems?: readonly McpConfigProblem[]
  /**
   * The permissions a workspace's own server may start with (the user trusted exactly this command, with these
   * permissions), or null: nobody trusted it.
   */
  trust(server: McpServerConfig): Required<McpPermissions> | null
  /** Names taken by Lanes' own tools. */
  reserved: ReadonlySet<string>
  /** The model's context window: definitions over a tenth of it are found through a search tool instead. */
  contextWindowTokens: number
  /** Where remote servers' OAuth tokens are kept (none: no OAuth, a server that needs it fails). */
  oauth?: McpOAuthStore
  /** Servers start after this long when no request went out before (default START_WITHOUT_REQUEST_MS). */
  startWithoutRequestMs?: number
}

type Emit = (draft: SessionEventDraft<'mcp.server'>) => void

export class McpHub implements ToolSource {
  private readonly connections: McpConnection[] = []
  /** Each running server's tool list as it last gave it. */
  private readonly listed = new Map<string, McpToolDef[]>()
  private built: Tool[] = []
  /** Per server: the tools it offers and the problems with the others. */
  private readonly offered = new Map<string, { tools: McpToolInfo[]; problems: string[] }>()
  private changes = 0
  private emit: Emit | null = null
  private readonly early: SessionEventDraft<'mcp.server'>[] = []
  private starts: Promise<void>[] = []
  /** The servers were told to start (`launch`). */
  private launched = false
  private closed = false
  private fallback: NodeJS.Timeout | undefined

  constructor(private readonly opts: McpHubOptions) {}

  /**
   * Reports the problems and the servers nobody trusted, and readies the others, which start when the first
   * request is on the wire (`requestSent`), when something waits for them (a call, `settled`), or after
   * START_WITHOUT_REQUEST_MS; returns at once, having done no work of theirs.
   */
  start(): void {
    for (const p of this.opts.problems ?? []) {
      this.send({ server: p.server ?? p.source, status: 'misconfigured', message: describeProblem(p) })
    }
    for (const listed of this.opts.servers) {
      const permissions = listed.origin === 'workspace' ? this.opts.trust(listed) : listed.permissions
      if (permissions === null) {
        this.send({
          server: listed.name,
          status: 'untrusted',
          origin: listed.origin,
          message: `The workspace's MCP server "${listed.name}" was not started: nobody has trusted it. Trust it in the app, or run lanes with --trust-project-mcp.`,
        })
        continue
      }
      const server = { ...listed, permissions }
      const connection = new McpConnection(
        server,
        this.opts.workspace,
        {
          status: (status, message) => this.onStatus(connection, status, message),
          tools: (tools) => {
            this.listed.set(server.name, tools)
            this.rebuild()
            if (connection.status === 'ready') this.onStatus(connection, 'ready')
          },
        },
        // Sign-ins are the user's: a folder's own server never gets them, whatever name and URL it gives.
        server.origin === 'user' ? this.opts.oauth : undefined,
      )
      this.connections.push(connection)
    }
    if (this.connections.length > 0) {
      const wait = this.opts.startWithoutRequestMs ?? START_WITHOUT_REQUEST_MS
      this.fallback = setTimeout(() => this.launch(), wait)
      this.fallback.unref()
    }
  }

  /** The session's model request is on the wire (or its attempt ended): the servers start now, if not yet. */
  requestSent(): void {
    this.launch()
  }

  private launch(): void {
    if (this.launched || this.closed) return
    this.launched = true
    clearTimeout(this.fallback)
    for (const connection of this.connections) this.starts.push(connection.start())
  }

  /** Events go to the session from now on (those from before it existed first). */
  attach(emit: Emit): void {
    this.emit = emit
    for (const draft of this.early.splice(0)) emit(draft)
  }

  /** Resolves once every server has become ready or failed (tests, benchmarks; runs never wait for it). */
  async settled(): Promise<void> {
    this.launch()
    await Promise.all(this.starts)
  }

  /**
   * The tools the model is told about: all of them, or, when their definitions would take more than a tenth of
   * the context window, the search tool and the tools searches have loaded so far.
   */
  tools(): readonly Tool[] {
    if (!this.deferred) return this.built
    return [this.search, ...this.built.filter((t) => this.loaded.has(t.name))]
  }

  /** The definitions are over budget: tools are found through the search tool. */
  private deferred = false
  private readonly loaded = new Set<string>()
  private readonly search = toolSearch({
    candidates: () =>
      this.built.map((tool) => ({
        tool,
        server: tool.server ?? '',
        original: this.originals.get(tool.name) ?? tool.name,
      })),
    load: (names) => {
      const before = this.loaded.size
      for (const name of names) this.loaded.add(name)
      if (this.loaded.size !== before) this.changes++
    },
    servers: () => this.connections.map((c) => c.config.name),
  })
  private readonly originals = new Map<string, string>()

  version(): number {
    return this.changes
  }

  /**
   * A call to a tool of a server that is still starting, restarting or waiting to start (a call resumed from the
   * log right after a continue, which starts it at once): it waits for the server, then runs as the tool it lists, or fails as unknown. Until the server
   * says what the tool is, it is taken as unsafe and asks.
   */
  pending(name: string): Tool | undefined {
    // A tool not loaded by a search is still the tool it is, should the model call it by name.
    const unloaded = this.built.find((t) => t.name === name)
    if (unloaded) return unloaded
    const connection = this.connections.find(
      (c) =>
        (c.status === 'new' || c.status === 'starting' || c.status === 'restarting') &&
        name.startsWith(`mcp__${sanitizePart(c.config.name)}__`),
    )
    if (!connection) return undefined
    const server = connection.config.name
    return defineTool({
      name,
      description: `A tool of the MCP server "${server}", which is still starting.`,
      input: z.record(z.string(), z.unknown()),
      server,
      concurrencySafe: false,
      title: () => `${server}: ${name.slice(`mcp__${sanitizePart(server)}__`.length)}`,
      // What the user reviews is the tool's own preview, once its server has said what the tool is.
      preview: async (input, ctx, opts) => {
        this.launch()
        await connection.whenSettled()
        const tool = this.built.find((t) => t.name === name)
        if (tool?.preview) return tool.preview(input, ctx, opts)
        const summary = `MCP server "${server}", tool ${name} (not offered by the server), with ${JSON.stringify(input).slice(0, 2000)}`
        return { ok: true, preview: { kind: 'other', summary } }
      },
      execute: async (input, ctx, approved) => {
        this.launch()
        await connection.whenSettled()
        const tool = this.built.find((t) => t.name === name)
        if (!tool) return fail(`Unknown tool "${name}": the MCP server "${server}" does not offer it.`)
        return tool.execute(input, ctx, approved)
      },
    }) as Tool
  }

  /** What one server offers (Settings' token counts). */
  offers(server: string): { tools: McpToolInfo[]; problems: string[] } | undefined {
    return this.offered.get(server)
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.fallback)
    await Promise.all(this.connections.map((c) => c.close()))
  }

  /** The remote servers started (their OAuth tokens are secrets of the session). */
  remoteServers(): McpOAuthServer[] {
    return this.connections.flatMap((c) =>
      c.config.kind === 'http' ? [{ name: c.config.name, url: c.config.url }] : [],
    )
  }

  /** The user signed in to this server: if it was waiting for that, it connects now. */
  signedIn(server: McpOAuthServer): void {
    for (const c of this.connections) {
      if (c.config.kind === 'http' && c.config.name === server.name && c.config.url === server.url)
        c.signedIn()
    }
  }

  private onStatus(connection: McpConnection, status: ServerStatus, message?: string): void {
    const name = connection.config.name
    if (status === 'failed' || status === 'stopped' || status === 'needs-sign-in') {
      if (this.listed.delete(name)) this.rebuild()
    }
    const offered = status === 'ready' ? this.offered.get(name) : undefined
    this.send({
      server: name,
      status,
      origin: connection.config.origin,
      ...(message !== undefined ? { message } : {}),
      ...(connection.sandboxed !== undefined ? { sandboxed: connection.sandboxed } : {}),
      ...(status === 'starting' && connection.sandboxNote ? { message: connection.sandboxNote } : {}),
      ...(offered ? { tools: offered.tools } : {}),
      ...(offered && offered.problems.length > 0 ? { problems: offered.problems } : {}),
    })
  }

  private send(event: Omit<SessionEventDraft<'mcp.server'>, 'type'>): void {
    const draft = { type: 'mcp.server' as const, ...event }
    if (this.emit) this.emit(draft)
    else this.early.push(draft)
  }

  /** The tools of every server, named together: a collision between two servers is settled the same way. */
  private rebuild(): void {
    const entries: { server: string; tool: string; def: McpToolDef; connection: McpConnection }[] = []
    for (const connection of this.connections) {
      for (const def of this.listed.get(connection.config.name) ?? [])
        entries.push({ server: connection.config.name, tool: def.name, def, connection })
    }
    const { names, renamed } = assignToolNames(entries, this.opts.reserved)
    const built: Tool[] = []
    this.offered.clear()
    for (const connection of this.connections)
      this.offered.set(connection.config.name, { tools: [], problems: [] })
    for (const entry of entries) {
      const offered = this.offered.get(entry.server) as { tools: McpToolInfo[]; problems: string[] }
      const name = names.get(toolKey(entry)) as string
      const tool = mcpTool({ name, def: entry.def, connection: entry.connection })
      if ('error' in tool) {
        offered.problems.push(`the tool "${entry.tool}" is left out: ${tool.error}`)
        continue
      }
      built.push(tool)
      const definition = { name, description: tool.description, input_schema: tool.inputJsonSchema }
      offered.tools.push({
        name,
        tool: entry.tool,
        readOnly: tool.concurrencySafe,
        destructive: entry.def.annotations?.destructiveHint === true,
        tokens: definitionTokens(definition),
      })
    }
    for (const r of renamed) this.offered.get(r.server)?.problems.push(r.message)
    this.built = built
    this.originals.clear()
    for (const entry of entries) this.originals.set(names.get(toolKey(entry)) as string, entry.tool)
    const tokens = serverTokens([...this.offered.values()].flatMap((o) => o.tools))
    this.deferred = overBudget(tokens, this.opts.contextWindowTokens)
    this.changes++
  }
}
