import { readFile } from 'node:fs/promises'
import type { McpUserServerInput, McpUserServerView, McpValueView } from '../../shared/ipc'
import {
  defaultPermissions,
  describeProblem,
  parseServerEntry,
  type McpConfigProblem,
  type McpServerConfig,
} from '../mcp/config'
import { isSecretLike } from '../secrets/secret-values'
import { own, setOwn } from '../../shared/own'
import { maskKey, type KeyStore } from './key-store'
import { usesOwnAuthorization, type McpOAuthServer, type McpOAuthStore } from '../mcp/oauth'

/**
 * The user's own MCP servers (Settings), in `.mcp.json`'s shape: their entries are kept in settings.json under
 * `mcpServers`, minus every environment or header value that looks like a key (`isSecretLike`, the redactor's
 * rule): those are kept where the API key is (keychain, else a sealed file, else a 0600 file; key-store.ts), as
 * one JSON value, and never reach the renderer, which sees them masked. They are trusted (the user typed them):
 * they start with every session, with what a terminal would give them unless their `lanes` key says otherwise.
 */

/** Where messages say a user's server comes from. */
export const SETTINGS_SOURCE = 'Settings'

/** What settings.json holds: server name to entry, its secret values left out. */
export type StoredMcpEntries = Record<string, unknown>

type Part = 'env' | 'headers'
/** The secret values per server and part: what the secret store holds. */
type Secrets = Record<string, Partial<Record<Part, Record<string, string>>>>

/** Where the redactor says a hidden OAuth token came from. */
export const SIGN_IN_SECRET = "an MCP server's sign-in"

/**
 * What a session's redactor must know from MCP: the keys typed in Settings (null: not used, `--no-user-mcp`)
 * and the tokens stored for the session's remote servers; each later refresh's comes through `oauth.watch`.
 */
export async function mcpSessionSecrets(
  user: UserMcpServers | null,
  oauth: McpOAuthStore,
  remote: readonly McpOAuthServer[],
): Promise<{ value: string; source: string }[]> {
  const out = ((await user?.secretValues()) ?? []).map((value) => ({
    value,
    source: "an MCP server's key in Settings",
  }))
  for (const server of remote) {
    for (const value of await oauth.secretValues(server)) out.push({ value, source: SIGN_IN_SECRET })
  }
  return out
}

/** The user's servers as settings.json holds them (`lanes run` reads them without the app); none if unreadable. */
export async function storedMcpEntries(settingsFile: string): Promise<StoredMcpEntries> {
  try {
    const parsed = JSON.parse(await readFile(settingsFile, 'utf8')) as { mcpServers?: unknown } | null
    const entries = parsed?.mcpServers
    return typeof entries === 'object' && entries !== null && !Array.isArray(entries)
      ? (entries as StoredMcpEntries)
      : {}
  } catch {
    return {}
  }
}

export class UserMcpServers {
  constructor(
    private readonly store: KeyStore,
    /** Where remote servers' sign-ins are kept (mcp/oauth.ts): Settings shows each one's. */
    private readonly oauth?: McpOAuthStore,
  ) {}

  /** One server as it would start (its secrets in place), or why it cannot. */
  async config(stored: StoredMcpEntries, name: string): Promise<McpServerConfig | null> {
    const { servers } = await this.configs(stored)
    return servers.find((s) => s.name === name) ?? null
  }

  /** The servers as sessions start them: entries with their secrets put back, each checked like `.mcp.json`. */
  async configs(
    stored: StoredMcpEntries,
  ): Promise<{ servers: McpServerConfig[]; problems: McpConfigProblem[] }> {
    // No servers, no look at the keychain (`lanes run` would otherwise ask it on every run).
    if (Object.keys(stored).length === 0) return { servers: [], problems: [] }
    const secrets = await this.readSecrets()
    const servers: McpServerConfig[] = []
    const problems: McpConfigProblem[] = []
    for (const [name, entry] of Object.entries(stored)) {
      const made = parseServerEntry(name, withSecrets(entry, own(secrets, name)), SETTINGS_SOURCE, 'user')
      if ('message' in made) problems.push(made)
      else servers.push(made)
    }
    return { servers, problems }
  }

  /** Every secret value, so a tool's output that shows one has it hidden (the redactor). */
  async secretValues(): Promise<string[]> {
    const secrets = await this.readSecrets()
    return Object.values(secrets).flatMap((parts) => Object.values(parts).flatMap((v) => Object.values(v)))
  }

  /** What Settings shows: secret values masked. */
  async views(stored: StoredMcpEntries): Promise<McpUserServerView[]> {
    const secrets = await this.readSecrets()
    const views = Object.entries(stored).map(([name, entry]): Omit<McpUserServerView, 'auth'> => {
      const mine = own(secrets, name) ?? {}
      const made = parseServerEntry(name, withSecrets(entry, mine), SETTINGS_SOURCE, 'user')
      const raw = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
      const shown = (part: Part): Record<string, McpValueView> => {
        const out: Record<string, McpValueView> = {}
        for (const [k, v] of Object.entries(stringRecord(raw[part]))) setOwn(out, k, { value: v })
        for (const [k, v] of Object.entries(mine[part] ?? {})) setOwn(out, k, { masked: maskKey(v) })
        return out
      }
      if ('message' in made) {
        const isHttp = typeof raw.type === 'string' && raw.type !== 'stdio'
        return {
          name,
          kind: isHttp ? 'http' : 'stdio',
          ...(isHttp
            ? { url: typeof raw.url === 'string' ? raw.url : '', headers: shown('headers') }
            : {
                command: typeof raw.command === 'string' ? raw.command : '',
                args: Array.isArray(raw.args) ? raw.args.filter((a) => typeof a === 'string') : [],
                env: shown('env'),
              }),
          lanes: defaultPermissions('user'),
          problem: describeProblem(made),
        }
      }
      return {
        name,
        kind: made.kind,
        ...(made.kind === 'stdio'
          ? { command: made.command, args: made.args, env: shown('env') }
          : { url: made.url, headers: shown('headers') }),
        lanes: made.permissions,
        problem: null,
      }
    })
    return Promise.all(
      views.map(async (view) => {
        const signs = view.kind === 'http' && view.url && !usesOwnAuthorization(view.headers ?? {})
        const auth =
          signs && this.oauth ? await this.oauth.status({ name: view.name, url: view.url as string }) : null
        return { ...view, auth }
      }),
    )
  }

  /**
   * Adds or replaces one server. The entry is checked as a `.mcp.json` entry would be; the new settings entries
   * come back for the caller to write (after the secrets are stored), or the reason it was refused.
   */
  async save(
    stored: StoredMcpEntries,
    input: McpUserServerInput,
  ): Promise<{ entries: StoredMcpEntries } | { error: string }> {
    const { name, server, lanes } = input
    const previous = input.previousName ?? name
    if (name !== previous && Object.hasOwn(stored, name))
      return { error: `There is already a server named "${name}".` }
    const secrets = await this.readSecrets()
    const before = own(secrets, previous) ?? {}
    const part: Part = server.kind === 'stdio' ? 'env' : 'headers'
    const given = server.kind === 'stdio' ? server.env : server.headers
    const plain: Record<string, string> = {}
    const secret: Record<string, string> = {}
    for (const [key, value] of Object.entries(given)) {
      if (typeof value === 'string') {
        setOwn(isSecretLike(value) ? secret : plain, key, value)
        continue
      }
      const kept = Object.hasOwn(stored, previous) ? own(before[part] ?? {}, key) : undefined
      if (kept === undefined) return { error: `The value of ${key} is not stored: type it again.` }
      setOwn(secret, key, kept)
    }
    const base =
      server.kind === 'stdio'
        ? { command: server.command, args: server.args }
        : { type: 'http', url: server.url }
    const entry = { ...base, [part]: plain, lanes }
    const checked = parseServerEntry(
      name,
      { ...entry, [part]: { ...plain, ...secret } },
      SETTINGS_SOURCE,
      'user',
    )
    if ('message' in checked) return { error: `The server "${name}" was not saved: ${checked.message}.` }
    const next: Secrets = Object.fromEntries(Object.entries(secrets).filter(([key]) => key !== previous))
    if (Object.keys(secret).length > 0) setOwn(next, name, { [part]: secret })
    await this.writeSecrets(next)
    // Kept in place when edited, so the list does not reorder under the user.
    const entries: StoredMcpEntries = {}
    let placed = false
    for (const [key, value] of Object.entries(stored)) {
      if (key === previous) {
        setOwn<unknown>(entries, name, entry)
        placed = true
      } else if (key !== name) setOwn(entries, key, value)
    }
    if (!placed) setOwn<unknown>(entries, name, entry)
    return { entries }
  }

  /** Removes one server and its secrets; the new settings entries come back. */
  async remove(stored: StoredMcpEntries, name: string): Promise<StoredMcpEntries> {
    const entries = Object.fromEntries(Object.entries(stored).filter(([key]) => key !== name))
    const secrets = await this.readSecrets()
    if (Object.hasOwn(secrets, name))
      await this.writeSecrets(Object.fromEntries(Object.entries(secrets).filter(([key]) => key !== name)))
    return entries
  }

  private async readSecrets(): Promise<Secrets> {
    const text = await this.store.get()
    if (text === null) return {}
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return {}
    }
    const out: Secrets = {}
    if (typeof parsed !== 'object' || parsed === null) return out
    for (const [name, parts] of Object.entries(parsed)) {
      if (typeof parts !== 'object' || parts === null) continue
      const p = parts as Record<string, unknown>
      setOwn<Secrets[string]>(out, name, { env: stringRecord(p.env), headers: stringRecord(p.headers) })
    }
    return out
  }

  private async writeSecrets(secrets: Secrets): Promise<void> {
    if (Object.keys(secrets).length === 0) await this.store.clear()
    else await this.store.set(JSON.stringify(secrets))
  }
}

function stringRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {}
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'),
  )
}

/** `a` and then `b`, as own entries whatever their names (`__proto__` included). */
function merged(a: Record<string, string>, b: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of [...Object.entries(a), ...Object.entries(b)]) setOwn(out, k, v)
  return out
}

/** The stored entry with its secret values back in place (they win over a plain value of the same name). */
function withSecrets(entry: unknown, secrets: Secrets[string] | undefined): unknown {
  if (!secrets || typeof entry !== 'object' || entry === null || Array.isArray(entry)) return entry
  const raw = entry as Record<string, unknown>
  const out: Record<string, unknown> = { ...raw }
  for (const part of ['env', 'headers'] as const) {
    const values = secrets[part]
    if (values && Object.keys(values).length > 0) out[part] = merged(stringRecord(raw[part]), values)
  }
  return out
}
