import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'

/**
 * MCP server configuration in the shape users already have (`.mcp.json`, Claude Code's and Cursor's):
 * `{"mcpServers": {"NAME": {command, args, env} | {type: "http", url, headers}}}`, plus Lanes' own `"lanes"`
 * key for the server's permissions. A file that is not JSON is one problem naming its line; an entry that is
 * wrong is one problem naming the server, and every other entry still starts.
 */

export const WORKSPACE_MCP_FILE = '.mcp.json'
const MAX_CONFIG_BYTES = 1024 * 1024

/** What a server may reach (issue 22): the workspace, the network, how long a call may take. */
export const McpPermissions = z.strictObject({
  workspace: z.enum(['none', 'read-only', 'read-write']).optional(),
  network: z.boolean().optional(),
  timeoutSec: z.number().int().min(1).max(3600).optional(),
})
export type McpPermissions = z.infer<typeof McpPermissions>

const StdioEntry = z.object({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  lanes: McpPermissions.optional(),
})

const HttpEntry = z.object({
  type: z.enum(['http', 'streamable-http']),
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).default({}),
  lanes: McpPermissions.optional(),
})

/** Where a server's entry came from: the workspace's own file needs the user's trust before it runs. */
export type McpOrigin = 'workspace' | 'user'

export type McpServerConfig = {
  name: string
  origin: McpOrigin
  /** The file it was read from (or "Settings"), for messages. */
  source: string
  /** The permissions it runs with: its `lanes` key over the defaults of its origin. */
  permissions: Required<McpPermissions>
} &
  /** A server runs in the workspace (or, given none, in its empty home folder). */
  (
    | { kind: 'stdio'; command: string; args: string[]; env: Record<string, string> }
    | { kind: 'http'; url: string; headers: Record<string, string> }
  )

/** A problem with one file or one entry; the rest of the configuration is used. */
export interface McpConfigProblem {
  source: string
  server?: string
  message: string
}

export const DEFAULT_TIMEOUT_SEC = 60

/**
 * A workspace's own servers come with the folder (a clone, a download): they see it read-only and no network
 * unless their entry asks for more, which the trust prompt shows. Servers the user configured get what a
 * terminal would give them.
 */
export function defaultPermissions(origin: McpOrigin): Required<McpPermissions> {
  return origin === 'workspace'
    ? { workspace: 'read-only', network: false, timeoutSec: DEFAULT_TIMEOUT_SEC }
    : { workspace: 'read-write', network: true, timeoutSec: DEFAULT_TIMEOUT_SEC }
}

/** Parses one configuration file's text. Never throws: what cannot be used is a problem. */
export function parseMcpConfig(
  text: string,
  source: string,
  origin: McpOrigin,
): { servers: McpServerConfig[]; problems: McpConfigProblem[] } {
  const problems: McpConfigProblem[] = []
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return { servers: [], problems: [{ source, message: jsonErrorWithLine(text, e) }] }
  }
  const root = typeof json === 'object' && json !== null && !Array.isArray(json) ? json : null
  const entries = root ? (root as { mcpServers?: unknown }).mcpServers : undefined
  if (entries === undefined || typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
    const message = 'it has no "mcpServers" object (expected {"mcpServers": {"NAME": {"command": ...}}})'
    return { servers: [], problems: [{ source, message }] }
  }
  const servers: McpServerConfig[] = []
  for (const [name, entry] of Object.entries(entries)) {
    const made = parseServerEntry(name, entry, source, origin)
    if ('message' in made) problems.push(made)
    else servers.push(made)
  }
  return { servers, problems }
}

/** One server's entry (a `.mcp.json` entry, or one the user typed in Settings) checked and given its defaults. */
export function parseServerEntry(
  name: string,
  entry: unknown,
  source: string,
  origin: McpOrigin,
): McpServerConfig | McpConfigProblem {
  if (name.trim() === '') return { source, server: name, message: 'a server needs a non-empty name' }
  const isHttp = typeof entry === 'object' && entry !== null && 'type' in entry && entry.type !== 'stdio'
  const parsed = (isHttp ? HttpEntry : StdioEntry).safeParse(entry)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const at = issue && issue.path.length > 0 ? `"${issue.path.join('.')}": ` : ''
    return { source, server: name, message: `${at}${issue?.message ?? 'not a valid server entry'}` }
  }
  const permissions = { ...defaultPermissions(origin), ...parsed.data.lanes }
  const base = { name, origin, source, permissions }
  const data = parsed.data
  if ('url' in data) return { ...base, kind: 'http', url: data.url, headers: data.headers }
  return {
    ...base,
    kind: 'stdio',
    command: data.command,
    args: data.args,
    env: data.env,
  }
}

/** "line 4, column 3: Expected ',' or '}'": V8 gives a position (or a line) in its message; we give both. */
export function jsonErrorWithLine(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const position = /position (\d+)/.exec(message)
  const lineCol = /line (\d+) column (\d+)/.exec(message)
  let line: number
  let column: number
  if (lineCol) {
    line = Number(lineCol[1])
    column = Number(lineCol[2])
  } else if (position) {
    const before = text.slice(0, Number(position[1]))
    line = before.split('\n').length
    column = before.length - before.lastIndexOf('\n')
  } else {
    const lines = text.split('\n')
    line = lines.length
    column = (lines.at(-1)?.length ?? 0) + 1
  }
  const reason = message.replace(/\s*\(line \d+ column \d+\)/, '').replace(/ in JSON at position \d+.*$/, '')
  return `it is not valid JSON at line ${line}, column ${column}: ${reason}`
}

/**
 * The servers of one run: the user's (files named with `--mcp-config`, Settings) and the workspace's
 * `.mcp.json`. A name used twice keeps the user's entry (the user's choice wins over a folder's) and says so.
 */
export async function loadMcpConfigs(opts: {
  workspace: string
  userFiles: readonly string[]
  userServers?: readonly McpServerConfig[]
}): Promise<{ servers: McpServerConfig[]; problems: McpConfigProblem[] }> {
  const servers: McpServerConfig[] = [...(opts.userServers ?? [])]
  const problems: McpConfigProblem[] = []
  /** A file's text, or null when there is none to read (its problem noted). */
  const load = async (file: string, optional: boolean): Promise<string | McpConfigProblem | null> => {
    try {
      // A configuration is a few hundred bytes: a huge file (or a device) is refused, not read into memory.
      const size = (await stat(file)).size
      if (size > MAX_CONFIG_BYTES)
        return { source: file, message: `it is ${size} bytes; a configuration may be at most 1 MiB` }
      return await readFile(file, 'utf8')
    } catch (e) {
      if (optional && (e as NodeJS.ErrnoException).code === 'ENOENT') return null
      return { source: file, message: `it could not be read: ${(e as Error).message}` }
    }
  }
  const files = [
    ...opts.userFiles.map((file) => ({ file, origin: 'user' as const, optional: false })),
    { file: join(opts.workspace, WORKSPACE_MCP_FILE), origin: 'workspace' as const, optional: true },
  ]
  // Read side by side, taken in order: the first file to name a server keeps it.
  const texts = await Promise.all(files.map((f) => load(f.file, f.optional)))
  files.forEach(({ file, origin }, i) => {
    const text = texts[i]
    if (text === null || text === undefined) return
    if (typeof text !== 'string') return void problems.push(text)
    const parsed = parseMcpConfig(text, file, origin)
    problems.push(...parsed.problems)
    for (const server of parsed.servers) {
      const taken = servers.find((s) => s.name === server.name)
      if (taken) {
        problems.push({
          source: file,
          server: server.name,
          message: `the name is already used by the server from ${taken.source}, which is kept`,
        })
      } else servers.push(server)
    }
  })
  return { servers, problems }
}

export function describeProblem(p: McpConfigProblem): string {
  return `MCP configuration ${p.source}${p.server !== undefined ? `, server "${p.server}"` : ''}: ${p.message}.`
}
