import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createAppApi, resolveWorkspace } from '../app/app-api'
import type { RunOutcome } from '../agent/loop'
import { runFakeModelCli } from '../agent/scripted-model'
import {
  AgentSession,
  agentOptions,
  connectModel,
  DEFAULT_ENGINE_SETTINGS,
  prepareEngine,
  type EngineSettings,
} from '../app/engine'
import { defaultSessionsDir } from '../app/paths'
import { readSession } from '../session/log'
import { startWebHost } from '../app/web-host'

/**
 * The `lanes` command: the same engine as the app, without a window. Every subcommand returns its exit code;
 * usage errors print a clear message and exit 2.
 */

const HELP = `lanes — watch a coding agent work, review every change, replay any session

Usage:
  lanes run --workspace DIR --task TEXT [--base-url URL] [--model M] [--scheduler streaming|batch]
            [--approve all|none] [--sessions-dir DIR] [--max-turns N]
      Runs one task without a window and prints every event as one JSON line on stdout.
      --approve all approves every call that would ask, none rejects them; without --approve the run
      pauses at the first approval, saves the pause and exits with code 3.
      Exit code: 0 finished, 3 paused, 1 failed or stopped, 2 usage error.

  lanes run --continue SESSION_ID [--approve all|none] [--sessions-dir DIR] [--base-url URL] [--model M]
      Continues a paused or interrupted session from its log.

  lanes fake-model --scenario FILE [--port N] [--record FILE]
      Serves a scripted Anthropic-compatible model on 127.0.0.1 and prints its base URL first.

  lanes web --workspace DIR [--port N] [--sessions-dir DIR]
      Browser mode: serves the app on 127.0.0.1 and prints its URL (with the access token) first.
      --port 0 (the default) picks a free port.

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

function parse<T extends Record<string, { type: 'string' | 'boolean' }>>(argv: string[], options: T) {
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
  })
  if (values.workspace === undefined) throw new UsageError('lanes web needs --workspace DIR.')
  const opened = await resolveWorkspace(values.workspace)
  if (!opened.ok) {
    process.stderr.write(`lanes web: ${opened.error}\n`)
    return 1
  }
  const api = await createAppApi({
    name: 'Lanes',
    version: packageVersion(),
    transport: 'web',
    workspace: opened.value.path,
    sessionsDir: values['sessions-dir'] ?? defaultSessionsDir(),
  })
  const host = await startWebHost({
    api,
    rendererDir: fileURLToPath(new URL('../renderer', import.meta.url)),
    port: parsePort(values.port),
  })
  process.stdout.write(`${host.url}\n`)
  process.stderr.write(
    `Lanes is serving ${opened.value.path}. Open the URL above in a browser; Ctrl+C stops it.\n`,
  )
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      void api
        .shutdown()
        .then(() => host.close())
        .then(resolve)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  return 0
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
  let workspacePath = values.workspace
  let saved: {
    scheduler?: 'streaming' | 'batch'
    siblingSkip?: boolean
    model?: string
    baseUrl?: string
    turns: number
  } = { turns: 0 }
  if (continuing !== undefined) {
    const { events } = await readSession(join(sessionsDir, `${continuing}.jsonl`)).catch(() => ({
      events: [],
    }))
    const created = events.find((e) => e.type === 'session.created')
    if (!created || created.type !== 'session.created') {
      process.stderr.write(`lanes run: no session "${continuing}" in ${sessionsDir}.\n`)
      return 1
    }
    workspacePath = created.workspace
    saved = {
      scheduler: created.settings.scheduler,
      siblingSkip: created.settings.siblingSkip,
      model: created.settings.demo ? undefined : created.settings.model,
      baseUrl: created.settings.baseUrl,
      turns: events.filter((e) => e.type === 'assistant.message').length,
    }
  }
  const opened = await resolveWorkspace(workspacePath as string)
  if (!opened.ok) {
    process.stderr.write(`lanes run: ${opened.error}\n`)
    return 1
  }
  const workspace = opened.value.path

  const { registry } = await prepareEngine()
  const model = await connectModel(
    { baseUrl: values['base-url'] ?? saved.baseUrl, model: values.model ?? saved.model },
    workspace,
    { turnsDone: saved.turns },
  )
  if (model.demo) {
    process.stderr.write(
      'lanes: no ANTHROPIC_API_KEY or base URL set, so the built-in demo model is answering (offline, scripted).\n',
    )
  }
  const settings: EngineSettings = {
    ...DEFAULT_ENGINE_SETTINGS,
    sessionsDir,
    maxTurns,
    scheduler: scheduler ?? saved.scheduler ?? DEFAULT_ENGINE_SETTINGS.scheduler,
    siblingSkip: saved.siblingSkip ?? DEFAULT_ENGINE_SETTINGS.siblingSkip,
  }
  const options = agentOptions(
    { workspace, registry, model, approvals: approve ?? 'pause' },
    settings,
    (event) => {
      process.stdout.write(JSON.stringify(event) + '\n')
    },
  )

  let session: AgentSession
  try {
    if (continuing !== undefined) {
      const result = await AgentSession.open(continuing, options)
      for (const warning of result.warnings) process.stderr.write(`lanes: ${warning}\n`)
      session = result.session
    } else {
      session = await AgentSession.create(options, (values.task as string).split('\n')[0]?.slice(0, 120))
    }
  } catch (e) {
    await model.close()
    process.stderr.write(`lanes run: ${(e as Error).message}\n`)
    return 1
  }

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
