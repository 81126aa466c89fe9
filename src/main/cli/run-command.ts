import { resolve } from 'node:path'
import type { RunOutcome } from '../agent/agent-session'
import { DEFAULT_MODEL } from '../agent/model'
import {
  DEFAULT_ENGINE_SETTINGS,
  launchSession,
  prepareEngine,
  readSessionStart,
  type LaunchedSession,
  type SessionStart,
} from '../app/engine'
import { openWorkspace, recordedWorkspace } from '../app/folders'
import { userMcpStores } from '../app/key-store'
import { mcpSessionSecrets, SIGN_IN_SECRET, storedMcpEntries, UserMcpServers } from '../app/mcp-user-servers'
import { defaultSessionsDir, settingsFileOf } from '../app/paths'
import { openMcp } from '../mcp/index'
import { modelContext } from '../../shared/models'
import { parseOptions, UsageError } from './usage'

function parsePositiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(`${name} must be a whole number of at least 1, not "${value}".`)
  return Number(value)
}

function oneOf<T extends string>(
  name: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${name} must be one of ${allowed.join(', ')}, not "${value}".`)
  }
  return value as T
}

/** MCP states a person running `lanes run` is told about on stderr too. */
const MCP_TOLD = new Set(['misconfigured', 'untrusted', 'failed', 'restarting', 'needs-sign-in'])

const EXIT_CODES: Record<RunOutcome['status'], number> = { finished: 0, paused: 3, failed: 1, stopped: 1 }

/** `lanes run`: one task, or a paused session continued, without a window; every event a JSON line on stdout. */
export async function runCommand(argv: string[]): Promise<number> {
  const values = parseOptions(argv, {
    workspace: { type: 'string' },
    task: { type: 'string' },
    continue: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    scheduler: { type: 'string' },
    approve: { type: 'string' },
    'sessions-dir': { type: 'string' },
    'max-turns': { type: 'string' },
    'land-protected': { type: 'boolean' },
    'mcp-config': { type: 'string', multiple: true },
    'trust-project-mcp': { type: 'boolean' },
    'no-user-mcp': { type: 'boolean' },
  })
  const approve = oneOf('--approve', values.approve, ['all', 'none'] as const)
  const scheduler = oneOf('--scheduler', values.scheduler, ['streaming', 'batch'] as const)
  const maxTurns = parsePositiveInt('--max-turns', values['max-turns'], DEFAULT_ENGINE_SETTINGS.maxTurns)
  const sessionsDir = values['sessions-dir'] ?? defaultSessionsDir()
  const continuing = values.continue
  if (continuing === undefined && (values.workspace === undefined || values.task === undefined)) {
    throw new UsageError('lanes run needs --workspace DIR and --task TEXT (or --continue SESSION_ID).')
  }
  if (continuing !== undefined && values.task !== undefined) {
    throw new UsageError('--continue takes no --task: the session continues the task it had.')
  }
  if (values.task !== undefined && values.task.trim() === '')
    throw new UsageError('--task must not be empty.')

  // What the session was started with, when continuing: its folder, scheduler and model.
  let resume: SessionStart | undefined
  if (continuing !== undefined) {
    resume = await readSessionStart(sessionsDir, continuing).catch(() => undefined)
    if (!resume) {
      process.stderr.write(`lanes run: no session "${continuing}" in ${sessionsDir}.\n`)
      return 1
    }
  }
  const saved = resume?.created.settings
  // A continued session goes on in its own folder, or not at all.
  const opened = resume
    ? await recordedWorkspace(resume.created.workspace)
    : await openWorkspace(values.workspace as string)
  if (!opened.ok) {
    process.stderr.write(`lanes run: ${opened.error}\n`)
    return 1
  }

  const { registry: shared } = await prepareEngine()
  // MCP servers start now, in the background: the session and its first model request do not wait for them.
  const trustProject = values['trust-project-mcp'] === true
  // The user's own servers of Settings are theirs, as in the app (their keys and sign-ins from the same stores).
  const stores = userMcpStores(sessionsDir, { keychain: !process.env.LANES_NO_KEYCHAIN })
  const userMcp = new UserMcpServers(stores.mcpSecrets)
  const user =
    values['no-user-mcp'] === true
      ? { servers: [], problems: [] }
      : await userMcp.configs(await storedMcpEntries(settingsFileOf(sessionsDir)))
  const mcp = await openMcp({
    workspace: opened.value.path,
    registry: shared,
    userServers: user.servers,
    userProblems: user.problems,
    oauth: stores.mcpOAuth,
    userFiles: (values['mcp-config'] ?? []).map((file) => resolve(file)),
    trust: (server) => (trustProject ? server.permissions : null),
    contextWindowTokens: modelContext(
      values.model ?? (saved?.demo ? undefined : saved?.model) ?? DEFAULT_MODEL,
    ).window,
  })
  const registry = mcp?.registry ?? shared
  const secrets = await mcpSessionSecrets(
    user.servers.length > 0 ? userMcp : null,
    stores.mcpOAuth,
    mcp?.hub.remoteServers() ?? [],
  )
  let launched: LaunchedSession
  try {
    launched = await launchSession({
      workspace: opened.value.path,
      registry,
      model: {
        host: 'cli',
        baseUrl: values['base-url'] ?? saved?.baseUrl,
        model: values.model ?? (saved?.demo ? undefined : saved?.model),
      },
      settings: {
        ...DEFAULT_ENGINE_SETTINGS,
        sessionsDir,
        maxTurns,
        scheduler: scheduler ?? saved?.scheduler ?? DEFAULT_ENGINE_SETTINGS.scheduler,
        siblingSkip: saved?.siblingSkip ?? DEFAULT_ENGINE_SETTINGS.siblingSkip,
      },
      approvals: approve ?? 'pause',
      secrets,
      ...(values['land-protected'] ? { landProtected: true } : {}),
      onEvent: (event) => {
        process.stdout.write(JSON.stringify(event) + '\n')
        const told = event.type === 'mcp.server' && (MCP_TOLD.has(event.status) || event.sandboxed === false)
        if (event.type === 'mcp.server' && event.message !== undefined && told)
          process.stderr.write(`lanes: MCP server "${event.server}" ${event.status}: ${event.message}\n`)
      },
      from: resume ? { resume } : { task: values.task as string },
    })
  } catch (e) {
    await mcp?.hub.close()
    process.stderr.write(`lanes run: ${(e as Error).message}\n`)
    return 1
  }
  const { session, model } = launched
  mcp?.hub.attach((draft) => void session.emit(draft).catch(() => undefined))
  stores.mcpOAuth.watch((value) => session.secrets.addAppSecret(value, SIGN_IN_SECRET))
  if (model.demo) {
    process.stderr.write(
      'lanes: no ANTHROPIC_API_KEY or base URL set, so the built-in demo model is answering (offline, scripted).\n',
    )
  }
  for (const warning of launched.warnings) process.stderr.write(`lanes: ${warning}\n`)

  const stop = (): void => session.stop()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    const outcome =
      continuing !== undefined ? await session.continue() : await session.run(values.task as string)
    if (outcome.status === 'paused') {
      process.stderr.write(
        `lanes: paused for approval. Continue with: lanes run --continue ${session.sessionId} --approve all|none${values['sessions-dir'] ? ` --sessions-dir ${sessionsDir}` : ''}\n`,
      )
    } else if (outcome.status === 'failed') {
      process.stderr.write(`lanes: the run failed: ${outcome.error}\n`)
    }
    return EXIT_CODES[outcome.status]
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
    // Every server's process is gone before the command returns (no orphans), its stop in the log.
    await mcp?.hub.close()
    await session.close()
    await model.close()
  }
}
