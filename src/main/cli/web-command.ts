import { createAppApi, type AppApi } from '../app/app-api'
import { openWorkspace, recentFolders } from '../app/folders'
import { defaultSessionsDir } from '../app/paths'
import { startWebHost, type WebHost } from '../app/web-host'
import { openInBrowser } from './open-browser'
import { parseOptions, UsageError } from './usage'

function parsePort(value: string | undefined): number {
  if (value === undefined) return 0
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65535)
    throw new UsageError(`--port must be a number from 0 to 65535, not "${value}".`)
  return port
}

/**
 * `lanes web` (browser mode). `app` is what the entry knows of the built app: its version and where the renderer's
 * files are, found relative to the entry's own file (this module is loaded from a chunk elsewhere).
 */
export async function webCommand(
  argv: string[],
  app: { version: string; rendererDir: string },
): Promise<number> {
  const values = parseOptions(argv, {
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
    version: app.version,
    transport: 'web',
    ...(workspace !== undefined ? { workspace } : {}),
    sessionsDir,
  })
  const host = await startWebHost({
    api,
    rendererDir: app.rendererDir,
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

/** How long browser mode may take to end by itself once stopped before it is ended. */
const EXIT_GRACE_MS = 3000

/**
 * Resolves once browser mode has stopped. Whichever way the host goes down (Ctrl+C, SIGTERM, the terminal
 * closing, or an error nothing caught), live runs are stopped first: their commands' process groups are
 * killed (an approved `sleep` must not outlive the host) and their logs end consistent.
 */
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
