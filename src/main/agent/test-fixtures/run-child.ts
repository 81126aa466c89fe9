// Runs agent sessions back to back until killed, for the durability test. After every synced turn it prints
// `synced <sessionId> <seq>`: every event up to that seq must survive a SIGKILL.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadBashGrammar } from '../../tools/bash/validate'
import { AgentSession } from '../agent-session'
import { startScriptedModel } from '../scripted-model'
import { scriptedAgentOptions } from './agent-options'

const [workspace, sessionsDir] = process.argv.slice(2) as [string, string]
await loadBashGrammar()
await mkdir(workspace, { recursive: true })
for (let i = 0; i < 4; i++) await writeFile(join(workspace, `f${i}.txt`), `file ${i}\n`.repeat(200))
const turn = (i: number) => ({
  blocks: [
    { text: `Turn ${i}: reading and writing.` },
    { tool: 'read_file', input: { path: `f${i % 4}.txt` } },
    { tool: 'grep', input: { pattern: 'file' } },
    { tool: 'write_file', input: { path: `out/${i}.txt`, content: `written in turn ${i}\n`.repeat(50) } },
    { tool: 'bash', input: { command: 'echo done' } },
  ],
})
process.stdout.write('ready\n')
for (;;) {
  const model = await startScriptedModel({
    scenario: { turns: [turn(1), turn(2), turn(3), turn(4), { blocks: [{ text: 'done' }] }] },
  })
  let sessionId = ''
  const session = await AgentSession.create(
    scriptedAgentOptions({
      workspace,
      sessionsDir,
      baseUrl: model.baseUrl,
      onEvent: (e) => {
        // The loop syncs at the end of every turn, before the next turn starts or the run ends.
        if (e.type === 'turn.started' || e.type === 'run.finished')
          process.stdout.write(`synced ${sessionId} ${e.seq - 1}\n`)
      },
    }),
  )
  sessionId = session.sessionId
  process.stdout.write(`synced ${sessionId} 0\n`)
  await session.run('work')
  await session.close()
  await model.close()
}
