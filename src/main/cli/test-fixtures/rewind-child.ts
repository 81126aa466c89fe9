import { main } from '../cli'
import { applyRewind, planRewind } from '../../session/rewind'
import { withRewindSession } from '../../session/rewind-session'

/**
 * A separate process for the rewind tests. `cli ARGS...` runs the `lanes` command line; `crash SESSIONS_DIR
 * SESSION_ID CALL_ID [N]` starts a rewind to CALL_ID and kills itself (SIGKILL, as a crash would) right after
 * the first (or Nth) file is changed; `apply SESSIONS_DIR SESSION_ID CALL_ID` rewinds to CALL_ID, printing "applying"
 * once it is planned (the parent kills it at a moment of its choosing from then on) and "done" at the end;
 * `recover SESSIONS_DIR SESSION_ID` opens the session (which finishes a rewind a crash cut short), printing
 * "opening" first and the outcome at the end.
 */
const [mode, ...args] = process.argv.slice(2)
if (mode === 'cli') {
  process.exitCode = await main(args)
} else if (mode === 'crash') {
  const [sessionsDir, sessionId, callId, after = '1'] = args as [string, string, string, string?]
  let changed = 0
  await withRewindSession(sessionsDir, sessionId, async (session) => {
    const plan = await planRewind(session.events, session.store, session.workspace, {
      mode: 'rewind',
      callId,
    })
    if (!plan.ok) throw new Error(plan.reason)
    return applyRewind(plan, session.store, session.log, {
      onChange: () => {
        if (++changed >= Number(after)) process.kill(process.pid, 'SIGKILL')
      },
    })
  })
  process.exitCode = 3
} else if (mode === 'apply') {
  const [sessionsDir, sessionId, callId] = args as [string, string, string]
  const outcome = await withRewindSession(sessionsDir, sessionId, async (session) => {
    const plan = await planRewind(session.events, session.store, session.workspace, {
      mode: 'rewind',
      callId,
    })
    if (!plan.ok) return plan
    process.stdout.write('applying\n')
    return applyRewind(plan, session.store, session.log)
  })
  process.stdout.write(outcome.ok ? 'done\n' : `refused: ${outcome.reason}\n`)
} else if (mode === 'recover') {
  const [sessionsDir, sessionId] = args as [string, string]
  process.stdout.write('opening\n')
  const recovered = await withRewindSession(sessionsDir, sessionId, async (session) => session.recovered)
  process.stdout.write(`${JSON.stringify(recovered ?? null)}\n`)
}
