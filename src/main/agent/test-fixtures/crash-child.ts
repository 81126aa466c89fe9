// A Lanes run in a process of its own, for the crash tests: prints `session <id>`, then `event <type>` for every
// event once it is in the log, and runs until the test kills it.
import { loadBashGrammar } from '../../tools/bash/validate'
import { AgentSession } from '../agent-session'
import { scriptedAgentOptions } from './agent-options'

const [workspace, sessionsDir, baseUrl] = process.argv.slice(2) as [string, string, string]
await loadBashGrammar()
const session = await AgentSession.create(
  scriptedAgentOptions({
    workspace,
    sessionsDir,
    baseUrl,
    model: 'claude-sonnet-5-5',
    onEvent: (e) => process.stdout.write(`event ${e.type}\n`),
  }),
)
process.stdout.write(`session ${session.sessionId}\n`)
await session.run('go')
await session.close()
