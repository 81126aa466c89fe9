import { createRequire } from 'node:module'
import { mkdir, readFile, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { writeJsonAtomic } from '../fs/atomic-write'
import { McpOAuthStore } from '../mcp/oauth'

/**
 * Where the Claude API key the user enters in Settings is kept, in every host (the app, `lanes web`, `lanes
 * run`): the OS keychain where there is one (macOS Keychain, Windows Credential Manager, the Secret Service
 * on Linux), through @napi-rs/keyring (prebuilt binaries shipped as npm packages); otherwise, in the app,
 * a file sealed with Electron's safeStorage; otherwise a file only the user can read (mode 0600, written
 * atomically). Settings says which. The key stays in main: the UI sees a masked form, and child processes
 * never get it (their environment is built from an allowlist).
 */

export type KeyStorageKind = 'keychain' | 'encrypted-file' | 'file'

export interface KeyStorage {
  kind: KeyStorageKind
  /** The file, for the two file kinds; null for the keychain. */
  file: string | null
}

/** One keychain entry. Calls throw when the platform store cannot be used (no Secret Service, locked, ...). */
export interface KeychainEntry {
  get(): string | null
  set(secret: string): void
  delete(): void
}

/** Electron's safeStorage, where the OS offers real encryption for it. */
export interface SecretBox {
  encrypt(plain: string): string
  decrypt(sealed: string): string
}

export interface KeyStore {
  get(): Promise<string | null>
  /** Stores the key and says where it went. */
  set(key: string): Promise<KeyStorage>
  clear(): Promise<void>
  /** Where the stored key is, or where a key stored now would go. */
  storage(): Promise<KeyStorage>
}

const KEYCHAIN_SERVICE = 'Lanes'

/**
 * The key file of one data folder. Its `.key` extension makes it a secret by name for every tool
 * (tools/sensitive-paths.ts), should someone open a folder that contains Lanes' data as a workspace.
 */
export function keyFileOf(dataDir: string): string {
  return join(dataDir, 'anthropic-api.key')
}

/**
 * What a keychain entry holds: the Claude API key, the secret values of the user's MCP servers (one JSON), or
 * one remote MCP server's OAuth client and tokens (`mcp-oauth:<id>`, mcp/oauth.ts).
 */
export type KeychainAccount = 'anthropic-api-key' | 'mcp-secrets' | `mcp-oauth:${string}`

/** The file of the user's MCP servers' secret values, where no keychain works (a secret by name too). */
export function mcpSecretsFileOf(dataDir: string): string {
  return join(dataDir, 'mcp-secrets.key')
}

/** One remote MCP server's OAuth record, where no keychain works (`<id>.key`: a secret by name as well). */
export function mcpOAuthFileOf(dataDir: string, id: string): string {
  return join(dataDir, 'mcp-oauth', `${id}.key`)
}

/**
 * Where the user's MCP servers' secrets are, for the app and `lanes run` alike: their keys and tokens typed in
 * Settings (one entry) and each remote server's sign-in (an entry each), kept like the API key.
 */
export function userMcpStores(
  dataDir: string,
  opts: { keychain: boolean; sealer?: SecretBox },
): { mcpSecrets: KeyStore; mcpOAuth: McpOAuthStore } {
  return {
    mcpSecrets: createKeyStore({
      file: mcpSecretsFileOf(dataDir),
      keychain: opts.keychain ? osKeychainEntry(dataDir, 'mcp-secrets') : null,
      ...(opts.sealer ? { sealer: opts.sealer } : {}),
    }),
    mcpOAuth: mcpOAuthStoreOf(dataDir, opts),
  }
}

/**
 * The OAuth records of remote MCP servers, each kept like the API key: its own keychain entry, else a sealed
 * file, else a 0600 file (`keychain: false`: never the keychain, as for tests).
 */
export function mcpOAuthStoreOf(
  dataDir: string,
  opts: { keychain: boolean; sealer?: SecretBox },
): McpOAuthStore {
  return new McpOAuthStore((id) =>
    createKeyStore({
      file: mcpOAuthFileOf(dataDir, id),
      keychain: opts.keychain ? osKeychainEntry(dataDir, `mcp-oauth:${id}`) : null,
      ...(opts.sealer ? { sealer: opts.sealer } : {}),
    }),
  )
}

/**
 * The OS keychain entry for the key of one Lanes data folder (so a test's or a second install's data folder
 * never reads or overwrites the user's key). Null when the native module does not load on this platform.
 */
export function osKeychainEntry(
  dataDir: string,
  what: KeychainAccount = 'anthropic-api-key',
): KeychainEntry | null {
  let Entry: new (
    service: string,
    account: string,
  ) => {
    getPassword(): string | null | undefined
    setPassword(secret: string): void
    deletePassword(): boolean | void
  }
  try {
    // Loaded on first use: a platform without a prebuilt binary simply has no keychain.
    ;({ Entry } = createRequire(import.meta.url)('@napi-rs/keyring') as { Entry: typeof Entry })
  } catch {
    return null
  }
  const entry = new Entry(KEYCHAIN_SERVICE, `${what}:${dataDir}`)
  return {
    get: () => entry.getPassword() ?? null,
    set: (secret) => entry.setPassword(secret),
    delete: () => void entry.deletePassword(),
  }
}

/** "sk-ant-…f3Qa": enough to recognise a key, never enough to use it. */
export function maskKey(key: string): string {
  if (key.length <= 12) return '…' + key.slice(-2)
  return `${key.slice(0, 7)}…${key.slice(-4)}`
}

type KeyFile = { plain: string } | { sealed: string }

export function createKeyStore(opts: {
  /** The file used where no keychain works. */
  file: string
  keychain: KeychainEntry | null
  sealer?: SecretBox
}): KeyStore {
  const { file, keychain, sealer } = opts
  const fileStorage: KeyStorage = { kind: sealer ? 'encrypted-file' : 'file', file }
  const keychainStorage: KeyStorage = { kind: 'keychain', file: null }
  let keychainWorks: boolean | null = null

  const fromKeychain = (): string | null => {
    try {
      return keychain?.get() ?? null
    } catch {
      return null
    }
  }

  const readFileKey = async (): Promise<string | null> => {
    let saved: Partial<{ plain: unknown; sealed: unknown }>
    try {
      saved = JSON.parse(await readFile(file, 'utf8')) as typeof saved
    } catch {
      return null
    }
    if (typeof saved.plain === 'string') return saved.plain
    if (typeof saved.sealed === 'string' && sealer) {
      try {
        return sealer.decrypt(saved.sealed)
      } catch {
        return null
      }
    }
    return null
  }

  /** A keychain counts only if a value written can be read back: some stores accept writes and drop them. */
  const storeInKeychain = (key: string): boolean => {
    if (!keychain) return false
    try {
      keychain.set(key)
      return keychain.get() === key
    } catch {
      return false
    }
  }

  return {
    async get() {
      return fromKeychain() ?? (await readFileKey())
    },

    async set(key) {
      if (storeInKeychain(key)) {
        keychainWorks = true
        // A copy left in a file from before would outlive a later "Forget".
        await rm(file, { force: true })
        return keychainStorage
      }
      keychainWorks = false
      // The folder too is the user's alone: the file's name is no secret, its neighbours may be.
      await mkdir(dirname(file), { recursive: true, mode: 0o700 })
      const content: KeyFile = sealer ? { sealed: sealer.encrypt(key) } : { plain: key }
      // A new file is created with mode 0600 (never a moment readable by others) and replaces the old one
      // whole; a file someone opened up to others is removed first, since a replaced file keeps its mode.
      const old = await stat(file).catch(() => null)
      if (old && (old.mode & 0o077) !== 0) await rm(file, { force: true })
      await writeJsonAtomic(file, content, { mode: 0o600 })
      return fileStorage
    },

    async clear() {
      try {
        keychain?.delete()
      } catch {
        // Nothing stored there, or no keychain: either way nothing is left in it.
      }
      await rm(file, { force: true })
    },

    async storage() {
      if (fromKeychain() !== null) return keychainStorage
      if ((await readFileKey()) !== null) return fileStorage
      if (keychainWorks === null) keychainWorks = probeKeychain(keychain)
      return keychainWorks ? keychainStorage : fileStorage
    },
  }
}

/** Whether the keychain takes a value, tried with a throwaway one on the same entry (no key is stored). */
function probeKeychain(keychain: KeychainEntry | null): boolean {
  if (!keychain) return false
  const probe = `lanes-probe-${process.pid}`
  try {
    keychain.set(probe)
    const works = keychain.get() === probe
    keychain.delete()
    return works
  } catch {
    return false
  }
}
