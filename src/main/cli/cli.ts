import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createAppApi, type AppApi } from '../app/app-api'
import { openWorkspace, recentFolders, recordedWorkspace } from '../app/folders'
import type { RunOutcome } from '../agent/agent-session'
import { runFakeModelCli } from './fake-model'
import {
  DEFAULT_ENGINE_SETTINGS,
  launchSession,
  prepareEngine,
  readSessionStart,
  type LaunchedSession,
  type SessionStart,
} from '../app/engine'
import { defaultSessionsDir, settingsFileOf } from '../app/paths'
import { userMcpStores } from '../app/key-store'
import { mcpSessionSecrets, SIGN_IN_SECRET, storedMcpEntries, UserMcpServers } from '../app/mcp-user-servers'
import { openMcp } from '../mcp/index'
import { DEFAULT_MODEL } from '../agent/model'
import { modelContext } from '../../shared/models'
import { openInBrowser } from './open-browser'
import { rewindCommand } from './rewind-command'
import { startWebHost, type WebHost } from '../app/web-host'

/**
 * The `lanes` command: the same engine as the app, without a window. Every subcommand returns its exit code;
 * usage errors print a clear message and exit 2.
 */

const HELP = `lanes — watch a coding agent work, review every change, replay any session

Usage:
  lanes run --workspace DIR --task TEXT [--base-url URL] [--model M] [--scheduler streaming|batch]
            [--approve all|none] [--sessions-dir DIR] [--max-turns N] [--land-protected]
            [--mcp-config FILE]... [--trust-project-mcp] [--no-user-mcp]
      Runs one task without a window and prints every event as one JSON line on stdout.
      --approve all approves every call that would ask, none rejects them; without --approve the run
      pauses at the first approval, saves the pause and exits with code 3.
      An approved command's changes to protected paths (git's configuration and hooks, .env files, ...)
      are discarded and reported (a command.held line) unless --land-protected is given.
      Exit code: 0 finished, 3 paused, 1 failed or stopped, 2 usage error.
      MCP servers: those you added in the app's Settings start too (yours, so trusted; a remote one you
      signed in to uses its stored sign-in, one that needs a sign-in is reported and left out);
      --no-user-mcp leaves them out. --mcp-config FILE (repeatable) starts the MCP servers of FILE
      ({"mcpServers": {...}}, .mcp.json's shape), trusted because you named them. The workspace's own
      .mcp.json servers start only with --trust-project-mcp. Their tools are offered as
      mcp__<server>__<tool>.

  lanes run --continue SESSION_ID [--approve all|none] [--sessions-dir DIR] [--base-url URL] [--model M]
            [--land-protected] [--mcp-config FILE]... [--trust-project-mcp] [--no-user-mcp]
      Continues a paused or interrupted session from its log.

  lanes fake-model --scenario FILE [--port N] [--record FILE]
      Serves a scripted Anthropic-compatible model on 127.0.0.1 and prints its base URL first.

  lanes web [--workspace DIR] [--port N] [--sessions-dir DIR] [--open]
      Browser mode: serves the app on 127.0.0.1 and prints its URL (with the access token) first.
      Without --workspace it opens the folder used last, or lets you choose one in the browser.
      --open opens the URL in your browser (not under CI or without a display). --port 0 (the default)
      picks a free port.

  lanes rewind SESSION_ID --to CALL_ID [--files-only] [--sessions-dir DIR]
      Puts every file the session's file tools changed back as it was just before CALL_ID (files created
      later are removed) and, without --files-only, the conversation too: the next --continue starts from
      the turn that held CALL_ID. A file changed since by someone else is skipped and reported. Prints
      one JSON line per file. Exit code: 0 done, 1 refused (nothing changed). What approved commands
      changed is rewound too where it was captured (Linux: contents, removals, modes, links, folders).

  lanes --help
      Shows this help.

The API key comes from ANTHROPIC_API_KEY and the base URL from ANTHROPIC_BASE_URL (or --base-url). With
neither, Lanes uses its built-in demo model: an offline, scripted run that explores the folder.
`

class UsageError extends Error {}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string
    }
    return pkg.version ?? '0.0.0'
  } catch {
    return '0.0.0'
  }
}

function parse<T extends Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>>(
  argv: string[],
  options: T,
) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
}

function parsePort(value: string | undefined): number {
  if (value === undefined) return 0
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65535)
    throw new UsageError(`--port must be a number from 0 to 65535, not "${value}".`)
  return port
}

async function web(argv: string[]): Promise<number> {
  const values = parse(argv, {
    workspace: { type: 'string' },
    port: { type: 'string' },
    'sessions-dir': { type: 'string' },
    open: { type: 'boolean' },
  })
  const sessionsDir = values['sessions-dir'] ?? defaultSessionsDir()
  let workspace: string | undefined
  if (values.workspace !== undefined) {
    const opened = await openWorkspace(values.workspace)
    if (!opened.ok) {
      process.stderr.write(`lanes web: ${opened.error}\n`)
      return 1
    }
    workspace = opened.value.path
  } else {
    // The folder the user worked in last; without one the page starts with the folder browser.
    workspace = (await recentFolders(sessionsDir).list())[0]?.path
  }
  const api = await createAppApi({
    name: 'Lanes',
    version: packageVersion(),
    transport: 'web',
    ...(workspace !== undefined ? { workspace } : {}),
    sessionsDir,
  })
  const host = await startWebHost({
    api,
    rendererDir: fileURLToPath(new URL('../renderer', import.meta.url)),
    port: parsePort(values.port),
  })
  const stopped = stopOnExit(api, host)
  process.stdout.write(`${host.url}\n`)
  const serving =
    workspace !== undefined ? `Lanes is serving ${workspace}` : 'Lanes is running: choose a folder'
  const notOpened = values.open ? openInBrowser(host.url) : null
  process.stderr.write(
    values.open && notOpened === null
      ? `${serving} in your browser; the link above gets you in again. Ctrl+C stops Lanes.\n`
      : `${serving}. Open the link above in a browser${notOpened ? ` (${notOpened})` : ''}. Ctrl+C stops Lanes.\n`,
  )
  await stopped
  return 0
}

/**
 * Resolves once browser mode has stopped. Whichever way the host goes down (Ctrl+C, SIGTERM, the terminal
 * closing, or an error nothing caught), live runs are stopped first: their commands' process groups are
 * killed (an approved `sleep` must not outlive the host) and their logs end consistent.
 */
/** How long browser mode may take to end by itself once stopped before it is ended. */
const EXIT_GRACE_MS = 3000

function stopOnExit(api: AppApi, host: WebHost): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping: Promise<void> | null = null
    const stop = (): Promise<void> =>
      (stopping ??= api
        .shutdown()
        .catch(() => undefined)
        .then(() => host.close())
        .then(() => {
          // Everything is stopped and every log is consistent: whatever still holds the process open now (a
          // watcher or a socket something forgot) must not keep Ctrl+C from ending Lanes. It is named, then ended.
          setTimeout(() => {
            process.stderr.write(
              `lanes web: still held open after stopping by ${process.getActiveResourcesInfo().join(', ')}; exiting.\n`,
            )
            process.exit(process.exitCode ?? 0)
          }, EXIT_GRACE_MS).unref()
          resolve()
        }))
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => void stop())
    const crash = (error: unknown): void => {
      process.stderr.write(
        `lanes web: stopping after an unexpected error: ${error instanceof Error ? error.stack : String(error)}\n`,
      )
      process.exitCode = 1
      // Runs get a few seconds to stop their commands; then the process ends regardless.
      setTimeout(() => process.exit(1), 5000).unref()
      void stop().then(() => process.exit(1))
    }
    process.once('uncaughtException', crash)
    process.once('unhandledRejection', crash)
  })
}

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

async function run(argv: string[]): Promise<number> {
  const values = parse(argv, {
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

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case 'web':
        return await web(rest)
      case 'run':
        return await run(rest)
      case 'fake-model':
        return await runFakeModelCli(rest)
      case 'rewind':
        return await rewindCommand(rest, (message) => new UsageError(message))
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        process.stdout.write(HELP)
        return command === undefined ? 2 : 0
      default:
        throw new UsageError(`Unknown command "${command}".`)
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`lanes: ${e.message}\nRun \`lanes --help\` for usage.\n`)
      return 2
    }
    throw e
  }
}
