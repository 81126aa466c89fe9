// A Lanes run in a process of its own, for the crash tests: prints `session <id>`, then `event <type>` for every
// event once it is in the log, and runs until the test kills it.
import { loadBashGrammar } from '../../tools/bash/validate'
import { createToolRegistry } from '../../tools/index'
import { AgentSession } from '../loop'
import { createModelClient } from '../model'

const [workspace, sessionsDir, baseUrl] = process.argv.slice(2) as [string, string, string]
await loadBashGrammar()
const session = await AgentSession.create({
  workspace,
  sessionsDir,
  registry: createToolRegistry(),
  model: createModelClient({ baseUrl, apiKey: 'test', model: 'claude-sonnet-5-5', maxRetries: 0 }),
  modelName: 'claude-sonnet-5-5',
  demo: false,
  scheduler: 'streaming',
  siblingSkip: true,
  maxTurns: 10,
  autoApproveEdits: false,
  approvals: 'all',
  onEvent: (e) => process.stdout.write(`event ${e.type}\n`),
})
process.stdout.write(`session ${session.sessionId}\n`)
await session.run('go')
await session.close()
