import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { UsageError } from './usage'

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

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      // Each command's modules are loaded when it runs: the engine, the MCP SDK or the web host are not what
      // `lanes --help` or `lanes rewind` should wait for.
      case 'web': {
        const { webCommand } = await import('./web-command')
        return await webCommand(rest, {
          version: packageVersion(),
          rendererDir: fileURLToPath(new URL('../renderer', import.meta.url)),
        })
      }
      case 'run':
        return await (await import('./run-command')).runCommand(rest)
      case 'fake-model':
        return await (await import('./fake-model')).runFakeModelCli(rest)
      case 'rewind':
        return await (await import('./rewind-command')).rewindCommand(rest)
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
