import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { parseScenario } from '../agent/scenario'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'

/** `lanes fake-model` (DESIGN 8): the scripted model of DESIGN 9 served from a scenario file. */

const FAKE_MODEL_HELP = `Usage: lanes fake-model --scenario FILE [--port N] [--record FILE] [--strict]

Serves the scripted Anthropic-compatible model on 127.0.0.1 and prints its base URL on the first line.
  --scenario FILE   the scenario (JSON, see DESIGN section 9)
  --port N          port to listen on (default 0: a free port)
  --record FILE     append every request body received to FILE, one JSON line each
  --strict          answer HTTP 400, as the API does, when thinking blocks are not sent back unchanged, the
                    conversation ends with an assistant message, or a text block is only whitespace
Ctrl+C (SIGINT) or SIGTERM stops it.
`

/**
 * `lanes fake-model`: returns the exit code. 0 after a clean stop by signal, 1 when it cannot start (missing or
 * invalid scenario, port in use), 2 for a usage error, as the rest of the `lanes` command does.
 */
export async function runFakeModelCli(argv: string[]): Promise<number> {
  const fail = (message: string, code = 1): number => {
    process.stderr.write(`lanes fake-model: ${message}\n`)
    return code
  }
  let values: { scenario?: string; port?: string; record?: string; strict?: boolean; help?: boolean }
  try {
    values = parseArgs({
      args: argv,
      options: {
        scenario: { type: 'string' },
        port: { type: 'string' },
        record: { type: 'string' },
        strict: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (e) {
    return fail(`${(e as Error).message}\n${FAKE_MODEL_HELP}`, 2)
  }
  if (values.help) {
    process.stdout.write(FAKE_MODEL_HELP)
    return 0
  }
  if (values.scenario === undefined) return fail(`--scenario FILE is required.\n${FAKE_MODEL_HELP}`, 2)
  let port = 0
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535) {
      return fail(`--port must be a number from 0 to 65535, not "${values.port}".`, 2)
    }
    port = Number(values.port)
  }

  let text: string
  try {
    text = await readFile(values.scenario, 'utf8')
  } catch (e) {
    const err = e as NodeJS.ErrnoException
    const why =
      err.code === 'ENOENT'
        ? 'no such file'
        : err.code === 'EISDIR'
          ? 'it is a folder'
          : err.code === 'EACCES'
            ? 'permission denied'
            : err.message
    return fail(`cannot read the scenario file ${values.scenario}: ${why}.`)
  }
  const parsed = parseScenario(text, `The scenario file ${values.scenario}`)
  if (!parsed.ok) return fail(parsed.error)
  for (const warning of parsed.warnings) process.stderr.write(`lanes fake-model: warning: ${warning}\n`)

  let model: ScriptedModel
  try {
    model = await startScriptedModel({
      scenario: parsed.scenario,
      port,
      strict: values.strict === true,
      ...(values.record !== undefined ? { recordFile: values.record } : {}),
      onRequest: (info) => {
        const turn = info.turn === null ? 'rejected' : `turn ${info.turn}/${parsed.scenario.turns.length}`
        process.stderr.write(`lanes fake-model: ${turn}: HTTP ${info.status}, ${info.note}\n`)
      },
    })
  } catch (e) {
    return fail((e as Error).message)
  }
  process.stdout.write(`${model.baseUrl}\n`)
  process.stderr.write(
    `lanes fake-model: serving ${parsed.scenario.turns.length} scripted turn(s) from ${values.scenario}; Ctrl+C stops it.\n`,
  )
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  await model.close()
  return 0
}
