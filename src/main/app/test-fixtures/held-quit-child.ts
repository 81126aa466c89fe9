// The app's API in a process of its own (as the desktop app or `lanes web` runs it): starts a task, approves the
// command, and once the command's held changes wait for review, quits the way the app does (shutdown, then
// exit). Prints `session <id>` and `call <id>`, then `quit` once the shutdown is done.
import type { SessionEvent } from '../../../shared/events'
import { startScriptedModel } from '../../agent/scripted-model'
import { createAppApi, dispatchRequest } from '../app-api'

const [workspace, sessionsDir] = process.argv.slice(2) as [string, string]
const model = await startScriptedModel({
  scenario: { turns: [{ blocks: [{ tool: 'bash', input: { command: 'node change.js' } }] }] },
})
const api = await createAppApi({ sessionsDir, name: 'Lanes', version: '1', transport: 'web', workspace })
await dispatchRequest(api, 'settings:set', { baseUrl: model.baseUrl })
let held = false
api.subscribe((channel, payload) => {
  if (channel !== 'session:events') return
  const { sessionId, events } = payload as { sessionId: string; events: SessionEvent[] }
  for (const e of events) {
    if (e.type === 'approval.requested')
      void dispatchRequest(api, 'approval:reply', {
        sessionId,
        decisions: [{ callId: e.callId, decision: 'approved' }],
      })
    if (e.type === 'command.held') {
      held = true
      process.stdout.write(`session ${sessionId}\ncall ${e.callId}\n`)
    }
    // The run pauses on the review once it is in the log: the user quits the app then.
    if (e.type === 'run.paused' && held)
      void api.shutdown().then(async () => {
        await model.close()
        process.stdout.write('quit\n')
        process.exit(0)
      })
  }
})
const started = await dispatchRequest(api, 'session:start', { task: 'go' })
if (!started.ok) throw new Error(JSON.stringify(started))
