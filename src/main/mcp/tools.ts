import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import type { Tool as McpToolDef } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { rulesAllowTool } from '../../shared/events'
import { defineTool, fail, type AlwaysAllowRule, type Tool } from '../tools/tool'
import { serverIdentity } from './trust'
import { ServerUnavailable, type McpConnection } from './connection'
import { toToolResult } from './results'

/**
 * An MCP server's tool as a Lanes tool, built when the server lists it. It owns its scheduling and approval as
 * every tool does (tool.ts): `readOnlyHint: true` makes it concurrency-safe and, from a server the user
 * trusted (every running server is), it runs without asking; every other tool is unsafe and asks (unless the
 * user always allowed this tool of this server in the folder); `destructiveHint: true` always asks (and a tool claiming both is taken at its worse word). Its arguments are
 * checked against the server's own JSON Schema, the one the model is told.
 */

const validators = new AjvJsonSchemaValidator()

/** A description longer than this is cut: it is sent with every request. */
const MAX_DESCRIPTION = 4000

export interface McpToolSpec {
  /** The name offered to the model (names.ts). */
  name: string
  def: McpToolDef
  connection: McpConnection
}

export function mcpTool(spec: McpToolSpec): Tool | { error: string } {
  const { def, connection, name } = spec
  const server = connection.config.name
  const schema = def.inputSchema as Record<string, unknown>
  if (schema?.type !== 'object') return { error: `its input schema is not a JSON Schema of type "object"` }
  let validate: ReturnType<typeof validators.getValidator>
  try {
    validate = validators.getValidator(schema as never)
  } catch (e) {
    return { error: `its input schema is not valid JSON Schema: ${(e as Error).message}` }
  }
  const input = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const checked = validate(value)
    if (!checked.valid) ctx.addIssue({ code: 'custom', message: checked.errorMessage })
  })
  const hints = def.annotations ?? {}
  const destructive = hints.destructiveHint === true
  const readOnly = hints.readOnlyHint === true && !destructive
  const label = def.title ?? def.annotations?.title ?? def.name
  // The server by what it runs, hashed when a rule is first made or checked.
  let identity: string | undefined
  const serverId = (): string => (identity ??= serverIdentity(connection.config))
  const allowedByRule = (rules: readonly AlwaysAllowRule[]): boolean =>
    rules.some((r) => r.tool === 'mcp' && r.name === def.name && r.server === serverId())
  const description = (def.description ?? `${label}.`).slice(0, MAX_DESCRIPTION)
  const { $schema: _ignored, ...inputJsonSchema } = schema
  return defineTool({
    name,
    description: `${description}\n\n(Tool "${def.name}" of the MCP server "${server}".)`,
    input,
    inputJsonSchema: { ...inputJsonSchema, type: 'object' },
    server,
    concurrencySafe: readOnly,
    title: () => `${server}: ${label}`,
    // An unsafe tool runs unasked when the user allowed it for the rest of the session, or always in this
    // folder (that tool of this very server); one that says it may destroy asks every time.
    policy: (_args, opts) => {
      if (readOnly) return { kind: 'allow' }
      if (destructive) return { kind: 'ask', protected: false }
      if (allowedByRule(opts.alwaysAllow)) return { kind: 'allow', byRule: true }
      if (rulesAllowTool(opts.sessionRules ?? [], name)) return { kind: 'allow' }
      return { kind: 'ask', protected: false }
    },
    sessionRule: () => (destructive ? undefined : { kind: 'tool', tool: name }),
    ...(destructive
      ? {}
      : { alwaysAllowRule: (): AlwaysAllowRule => ({ tool: 'mcp', server: serverId(), name: def.name }) }),
    preview: (args) =>
      Promise.resolve({
        ok: true,
        preview: {
          kind: 'other',
          summary: `MCP server "${server}", tool "${def.name}"${destructive ? ' (it says it may delete or overwrite)' : ''}, with ${JSON.stringify(args).slice(0, 2000)}`,
          ...(destructive ? {} : { alwaysAllow: `every call of ${server}: ${label} in this folder` }),
        },
      }),
    async execute(args, ctx) {
      try {
        const result = await connection.callTool(def.name, args, {
          signal: ctx.signal,
          onProgress: ctx.onProgress,
        })
        return await toToolResult(result, ctx, server)
      } catch (e) {
        if (e instanceof ServerUnavailable) return fail(e.message, { metadata: { server } })
        // A stop: the scheduler reports the call as cancelled.
        if (ctx.signal.aborted) throw e
        return fail(`The MCP server "${server}" failed: ${(e as Error).message}`, { metadata: { server } })
      }
    },
  }) as Tool
}
