import { parseArgs } from 'node:util'
import { defaultSessionsDir } from '../app/paths'
import { applyRewind, planRewind } from '../session/rewind'
import { withRewindSession } from '../session/rewind-session'
import { UsageError } from './usage'

/**
 * `lanes rewind SESSION_ID --to CALL_ID [--files-only] [--sessions-dir DIR]` (DESIGN 8): every file the
 * session's file tools changed goes back to its content just before CALL_ID; without --files-only the next
 * continue starts from the turn that held CALL_ID. One JSON line per file changed or skipped, then one for the
 * rewind. Exit 0 done, 1 refused (the reason on stderr; nothing changed), 2 usage.
 */
export async function rewindCommand(argv: string[]): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        to: { type: 'string' },
        'files-only': { type: 'boolean' },
        'sessions-dir': { type: 'string' },
      },
      strict: true,
      allowPositionals: true,
    })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const [sessionId, ...extra] = parsed.positionals
  if (sessionId === undefined || parsed.values.to === undefined)
    throw new UsageError('lanes rewind needs SESSION_ID and --to CALL_ID.')
  if (extra.length > 0)
    throw new UsageError(`lanes rewind takes one SESSION_ID, not also "${extra.join(' ')}".`)
  const callId = parsed.values.to
  const sessionsDir = parsed.values['sessions-dir'] ?? defaultSessionsDir()
  const print = (line: object): void => {
    process.stdout.write(JSON.stringify(line) + '\n')
  }

  const outcome = await withRewindSession(
    sessionsDir,
    sessionId,
    async (session) => {
      if (session.recovered) print({ type: 'rewind.recovered', ...session.recovered })
      const plan = await planRewind(session.events, session.store, session.workspace, {
        mode: 'rewind',
        callId,
        conversation: parsed.values['files-only'] !== true,
      })
      if (!plan.ok) return plan
      // The command line cannot ask: a file changed since by someone else is skipped and reported.
      return applyRewind(plan, session.store, session.log, {
        onChange: (change) =>
          print({
            type: 'file.rewound',
            path: change.relPath,
            action: change.to === null ? 'removed' : change.from === null ? 'created' : 'restored',
            from: change.from,
            to: change.to,
          }),
      }).then((applied) => (applied.ok ? { ...applied, turn: plan.turn } : applied))
    },
    { callId },
  )
  if (!outcome.ok) {
    process.stderr.write(`lanes rewind: ${outcome.reason}\n`)
    return 1
  }
  for (const skip of outcome.skipped) print({ type: 'file.skipped', path: skip.relPath, reason: skip.reason })
  print({
    type: 'rewind.done',
    rewindId: outcome.rewindId,
    files: outcome.changes.length,
    skipped: outcome.skipped.length,
    ...(outcome.turn !== undefined ? { conversationFromTurn: outcome.turn } : {}),
  })
  return 0
}
