import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createAppApi, resolveWorkspace } from './app-api'
import { startWebHost } from './web-host'

/**
 * The `lanes` command: the same engine as the app, without a window. Every subcommand returns its exit code;
 * usage errors print a clear message and exit 2.
 */

const HELP = `lanes — watch a coding agent work, review every change, replay any session

Usage:
  lanes web --workspace DIR [--port N] [--sessions-dir DIR]
      Browser mode: serves the app on 127.0.0.1 and prints its URL (with the access token) first.
      --port 0 (the default) picks a free port.

  lanes --help
      Shows this help.
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
      void host.close().then(resolve)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  return 0
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case 'web':
        return await web(rest)
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
