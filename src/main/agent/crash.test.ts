import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { loadBashGrammar } from '../tools/bash/validate'
import { AgentSession } from './agent-session'
import { startScriptedModel } from './scripted-model'
import { scriptedAgentOptions } from './test-fixtures/agent-options'

// A real process killed (SIGKILL) while the model is still writing the answer whose call already ran or was
// queued: between tool.queued and assistant.message. The first --continue must work, against a model that
// answers 400 wherever the API would (a tool_use without its tool_result, thinking dropped or changed).

const child = fileURLToPath(new URL('./test-fixtures/crash-child.ts', import.meta.url))
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
beforeAll(async () => {
  await loadBashGrammar()
})

const THINK = { thinking: 'Read a.txt, then say what it holds.', signature: 'sig-crash' }

for (const killAfter of ['tool.queued', 'tool.finished'] as const) {
  describe(`a crash after ${killAfter}, before assistant.message`, () => {
    it('the first continue finishes the call and the run, and the API takes every request', async () => {
      const base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-crash-')))
      const workspace = join(base, 'ws')
      const sessionsDir = join(base, 'sessions')
      await mkdir(workspace)
      await writeFile(join(workspace, 'a.txt'), 'alpha\n')
      const first = await startScriptedModel({
        strict: true,
        scenario: {
          turns: [
            {
              // The text after the call streams slowly: the process dies while it does.
              blocks: [THINK, { tool: 'read_file', input: { path: 'a.txt' } }, { text: 'x'.repeat(2000) }],
              tokensPerSecond: 40,
            },
          ],
        },
      })
      cleanups.push(async () => {
        await first.close()
        await rm(base, { recursive: true, force: true })
      })

      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', child, workspace, sessionsDir, first.baseUrl],
        {
          cwd: fileURLToPath(new URL('../../../', import.meta.url)),
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      let sessionId = ''
      const seen: string[] = []
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: proc.stdout! }).on('line', (line) => {
          if (line.startsWith('session ')) sessionId = line.slice('session '.length)
          if (line.startsWith('event ')) seen.push(line.slice('event '.length))
          if (line === `event ${killAfter}`) resolve()
        })
        proc.once('exit', (code) => reject(new Error(`the run ended (${code}) before ${killAfter}`)))
      })
      proc.kill('SIGKILL')
      await exited
      expect(seen).not.toContain('assistant.message')

      const second = await startScriptedModel({
        strict: true,
        scenario: { turns: [{ blocks: [{ text: 'a.txt holds alpha.' }] }] },
        recordFile: join(base, 'second.jsonl'),
      })
      cleanups.push(() => second.close())
      const events: SessionEvent[] = []
      const { session } = await AgentSession.open(
        sessionId,
        scriptedAgentOptions({
          workspace,
          sessionsDir,
          baseUrl: second.baseUrl,
          model: 'claude-sonnet-5-5',
          onEvent: (e) => events.push(e),
        }),
      )
      const outcome = await session.continue()
      await session.close()
      expect(outcome).toEqual({ status: 'finished' })

      // Every call has exactly one outcome, and the request carried the thinking, the call and its result.
      const request = JSON.parse(
        (await readFile(join(base, 'second.jsonl'), 'utf8')).trim().split('\n')[0]!,
      ) as {
        messages: { role: string; content: { type: string; tool_use_id?: string }[] }[]
      }
      const [, assistant, results] = request.messages
      expect(assistant!.content[0]).toEqual({ type: 'thinking', ...THINK })
      expect(assistant!.content.map((b) => b.type)).toContain('tool_use')
      expect(results!.content.filter((b) => b.type === 'tool_result')).toHaveLength(1)
    })
  })
}
