// A Lanes session in a process of its own, as the app runs it (interactive): prints `session <id>`, then
// `event <type>` for every event once it is in the log, approves every call that asks, and waits in the review
// of a command's held changes until the test kills it.
import { loadBashGrammar } from '../../tools/bash/validate'
import { AgentSession } from '../agent-session'
import { scriptedAgentOptions } from './agent-options'

const [workspace, sessionsDir, baseUrl] = process.argv.slice(2) as [string, string, string]
await loadBashGrammar()
// Events come while the session is being made: the approval is given once it exists.
const made: { session?: AgentSession } = {}
const session = await AgentSession.create(
  scriptedAgentOptions({
    workspace,
    sessionsDir,
    baseUrl,
    approvals: 'interactive',
    onEvent: (e) => {
      process.stdout.write(`event ${e.type}\n`)
      if (e.type === 'approval.requested') void made.session?.decide(e.callId, { decision: 'approved' })
    },
  }),
)
made.session = session
process.stdout.write(`session ${session.sessionId}\n`)
await session.run('go')
