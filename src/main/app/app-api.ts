import { trustWorkspaceServer, workspaceServers } from '../mcp/index'
import { SessionLogError } from '../session/log'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { commandCaptureMode } from '../tools/bash/capture/capture'
import { listFolder, openWorkspace, recentFolders, resolveWorkspace } from './folders'
import {
  createKeyStore,
  keyFileOf,
  mcpSecretsFileOf,
  osKeychainEntry,
  type KeychainAccount,
  type KeychainEntry,
  type SecretBox,
} from './key-store'
import { RefusedError, SessionHost, type ConfirmBaseUrl } from './session-host'
import {
  describeIssues,
  isRequestChannel,
  requestChannels,
  type EventChannel,
  type EventPayload,
  type RequestChannel,
  type RequestInput,
  type RequestOutput,
  type Result,
  type WorkspaceInfo,
} from '../../shared/ipc'

/**
 * The app's API, independent of any transport: Electron's IPC wrapper (ipc.ts) and the browser-mode host
 * (web-host.ts) both call `dispatchRequest`, so validation and error shapes are the same everywhere.
 */

export type Handlers = {
  [C in RequestChannel]: (input: RequestInput<C>) => Promise<Result<RequestOutput<C>>>
}

export type EventListener = <E extends EventChannel>(channel: E, payload: EventPayload<E>) => void

export interface AppApi {
  handlers: Handlers
  subscribe(listener: EventListener): () => void
  /** Stops live runs and waits until their logs are consistent (the app is quitting). */
  shutdown(): Promise<void>
}

export interface AppApiOptions {
  name: string
  version: string
  transport: 'electron' | 'web'
  /** The folder open at start, if any. */
  workspace?: string
  /** Electron's native folder dialog; absent in browser mode. Resolves null when the user cancels. */
  pickFolder?: () => Promise<string | null>
  /** Told when the user opens another folder (Electron remembers it for the next start). */
  onWorkspaceChanged?: (workspace: WorkspaceInfo) => void
  /** Where sessions (and their settings and rules) are kept. */
  sessionsDir: string
  /** Electron's safeStorage where the OS backs it: seals the key file when there is no keychain. */
  secrets?: SecretBox
  /**
   * The keychain entry for the API key; the OS keychain by default, null for none (tests: then the MCP servers'
   * secrets use no keychain either).
   */
  keychain?: KeychainEntry | null
  /** Electron asks in a main-process dialog before a stored key goes to a new base URL. */
  confirmBaseUrl?: ConfirmBaseUrl
}

export function ok<T>(value: T): Result<T> {
  return { ok: true, value }
}

export function err<T = never>(code: Extract<Result<T>, { ok: false }>['code'], error: string): Result<T> {
  return { ok: false, error, code }
}

export { openWorkspace, resolveWorkspace }

/** The OS keychain, unless LANES_NO_KEYCHAIN is set (test runs on a desktop keep out of the user's keychain). */
function defaultKeychain(sessionsDir: string, what: KeychainAccount): KeychainEntry | null {
  return process.env.LANES_NO_KEYCHAIN ? null : osKeychainEntry(sessionsDir, what)
}

export async function createAppApi(opts: AppApiOptions): Promise<AppApi> {
  const listeners = new Set<EventListener>()
  const emit: EventListener = (channel, payload) => {
    for (const listener of listeners) listener(channel, payload)
  }

  const recent = recentFolders(opts.sessionsDir)
  let current: WorkspaceInfo | null = null
  if (opts.workspace !== undefined) {
    // A remembered folder that was deleted since simply leaves no folder open.
    const opened = await openWorkspace(opts.workspace)
    if (opened.ok) current = opened.value
  }

  const sessions = new SessionHost({
    sessionsDir: opts.sessionsDir,
    host: opts.transport === 'web' ? 'web' : 'app',
    keys: createKeyStore({
      file: keyFileOf(opts.sessionsDir),
      keychain:
        opts.keychain !== undefined ? opts.keychain : defaultKeychain(opts.sessionsDir, 'anthropic-api-key'),
      ...(opts.secrets ? { sealer: opts.secrets } : {}),
    }),
    // The MCP servers' secrets are kept the way the key is, in an entry (or a file) of their own.
    mcpSecrets: createKeyStore({
      file: mcpSecretsFileOf(opts.sessionsDir),
      keychain: opts.keychain === null ? null : defaultKeychain(opts.sessionsDir, 'mcp-secrets'),
      ...(opts.secrets ? { sealer: opts.secrets } : {}),
    }),
    ...(opts.confirmBaseUrl ? { confirmBaseUrl: opts.confirmBaseUrl } : {}),
    onEvents: (sessionId, events) => emit('session:events', { sessionId, events }),
    onListChanged: () => emit('session:list-changed', {}),
  })
  const failed = (e: unknown) =>
    e instanceof RefusedError
      ? err<never>(e.code, e.message)
      : err<never>('failed', e instanceof Error ? e.message : String(e))

  const handlers: Handlers = {
    'app:info': async () => {
      const sandbox = sandboxSupport()
      return ok({
        name: opts.name,
        version: opts.version,
        platform: process.platform,
        transport: opts.transport,
        sandbox: sandbox.available ? { available: true } : { available: false, reason: sandbox.reason },
        capture: commandCaptureMode(),
      })
    },

    'workspace:current': async () => ok(current),

    'workspace:open': async (input) => {
      let path = input?.path
      if (path === undefined) {
        if (!opts.pickFolder) return err('invalid-input', 'Type the path of the folder to open.')
        const picked = await opts.pickFolder()
        if (picked === null) return err('cancelled', 'No folder was chosen.')
        path = picked
      }
      const opened = await openWorkspace(path)
      if (!opened.ok) return opened
      current = opened.value
      opts.onWorkspaceChanged?.(current)
      // Remembering it for the folder browser is not worth failing the open over.
      await recent.add(current).catch(() => undefined)
      emit('workspace:changed', current)
      return opened
    },

    'folder:list': async (input) => listFolder(input?.path, await recent.list()),

    'session:list': async () => (current ? ok(await sessions.list(current.path)) : ok([])),

    'session:start': async ({ task, sessionId }) => {
      // A follow-up runs in its session's own folder; only a new session needs an open one.
      if (sessionId === undefined && !current) return err('invalid-input', 'Open a project folder first.')
      return sessions
        .start(current?.path ?? null, task, sessionId)
        .then((id) => ok({ sessionId: id }), failed)
    },

    'session:load': async ({ sessionId, tail }) =>
      sessions
        .load(sessionId, tail)
        .then(ok, (e: unknown) =>
          e instanceof SessionLogError && e.code === 'not-found'
            ? err('not-found', `There is no session ${sessionId}.`)
            : failed(e),
        ),

    'session:continue': async ({ sessionId }) =>
      sessions.continue(sessionId).then((id) => ok({ sessionId: id }), failed),

    'session:stop': async ({ sessionId }) =>
      sessions.stop(sessionId) ? ok(null) : err('not-found', 'That session is not running.'),

    'approval:reply': async ({ sessionId, decisions }) => {
      try {
        const problem = await sessions.reply(sessionId, decisions)
        return problem === null ? ok(null) : err('invalid-input', problem)
      } catch (e) {
        return failed(e)
      }
    },

    'approval:diff': async ({ sessionId, callId, from, count }) =>
      sessions.fullDiff(sessionId, callId, from, count).then(ok, failed),

    'held:files': async ({ sessionId, callId, folder, offset, limit }) =>
      sessions.heldFiles(sessionId, callId, folder, offset, limit).then(ok, failed),

    'held:diff': async ({ sessionId, callId, relPath }) =>
      sessions.heldDiff(sessionId, callId, relPath).then(ok, failed),

    'session:revoke-rule': async ({ sessionId, ruleId }) =>
      sessions.revokeRule(sessionId, ruleId).then(ok, failed),

    'rewind:plan': async (target) => sessions.planRewind(target).then(ok, failed),

    'rewind:apply': async (target) => sessions.applyRewind(target).then(ok, failed),

    'settings:get': async () => ok(await sessions.settings()),

    'settings:set': async (update) => sessions.updateSettings(update).then(ok, failed),

    'mcp:list': async () =>
      current
        ? ok(await workspaceServers(current.path, sessions.mcpTrust))
        : ok({ servers: [], problems: [] }),

    'mcp:save-server': async (input) => sessions.saveMcpServer(input).then(ok, failed),

    'mcp:remove-server': async ({ name }) => sessions.removeMcpServer(name).then(ok, failed),

    'mcp:trust': async ({ trustKey, lanes }) => {
      if (!current) return err('invalid-input', 'Open a project folder first.')
      if (!(await trustWorkspaceServer(current.path, sessions.mcpTrust, trustKey, lanes)))
        return err('invalid-input', 'The server changed since it was shown: look at it again.')
      return ok(await workspaceServers(current.path, sessions.mcpTrust))
    },
  }

  return {
    handlers,
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    shutdown: () => sessions.shutdown(),
  }
}

/**
 * Validates and runs one request. Never throws: an unknown channel, a bad payload or a handler that throws
 * all come back as error values (a handler throwing is a bug, reported without its stack).
 */
export async function dispatchRequest(
  api: AppApi,
  channel: unknown,
  input: unknown,
): Promise<Result<unknown>> {
  if (!isRequestChannel(channel)) {
    return err('unknown-channel', `Unknown channel ${JSON.stringify(String(channel)).slice(0, 200)}.`)
  }
  const parsed = requestChannels[channel].input.safeParse(input)
  if (!parsed.success) {
    return err('invalid-input', `Invalid input for ${channel}: ${describeIssues(parsed.error)}`)
  }
  try {
    const handler = api.handlers[channel] as (input: unknown) => Promise<Result<unknown>>
    return await handler(parsed.data)
  } catch (e) {
    return err('failed', `${channel} failed: ${e instanceof Error ? e.message : String(e)}`)
  }
}
