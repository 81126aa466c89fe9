import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentSession } from './agent-session'
import type { Scenario } from './scenario'
import type { SchedulerMode } from './scheduler'
import { byType, cleanUpScriptedRuns, recordedRequests, scriptedRun } from './test-fixtures/scripted-run'

afterEach(cleanUpScriptedRuns)

type Block = { type: string; id?: string; tool_use_id?: string; content?: string; is_error?: boolean }
type Request = { messages: { role: string; content: string | Block[] }[] }

const blocksOf = (request: Request, role: string): Block[] =>
  request.messages
    .filter((m) => m.role === role && Array.isArray(m.content))
    .flatMap((m) => m.content as Block[])

describe.each<SchedulerMode>(['streaming', 'batch'])(
  'two calls with the same tool_use id (%s)',
  (scheduler) => {
    it('runs the first once, answers the second with an error under a fresh id, and keeps the API valid', async () => {
      const scenario: Scenario = {
        turns: [
          {
            blocks: [
              { tool: 'write_file', id: 'toolu_same', input: { path: 'a.txt', content: 'first\n' } },
              { tool: 'write_file', id: 'toolu_same', input: { path: 'a.txt', content: 'second\n' } },
              { tool: 'read_file', id: 'toolu_same', input: { path: 'a.txt' } },
            ],
          },
          // A later answer repeating an id of the first: the same rule across turns.
          { blocks: [{ tool: 'bash', id: 'toolu_same', input: { command: 'touch b.txt' } }] },
          { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
        ],
      }
      // strict: the scripted model answers 400 where the API would (ids unique, one tool_result per tool_use).
      const run = await scriptedRun(scenario, {
        approvals: 'all',
        scheduler,
        strict: true,
        prefix: 'lanes-dup-',
      })
      const session = await AgentSession.create(run.options)
      expect(await session.run('write a')).toEqual({ status: 'finished' })
      await session.close()

      const queued = byType(run.events, 'tool.queued')
      const ids = queued.map((e) => e.callId)
      expect(ids[0]).toBe('toolu_same')
      expect(new Set(ids).size).toBe(4)
      // Only the first ran; the file holds what it wrote.
      expect(byType(run.events, 'tool.started').map((e) => e.callId)).toEqual(['toolu_same'])
      expect(await readFile(join(run.workspace, 'a.txt'), 'utf8')).toBe('first\n')
      await expect(readFile(join(run.workspace, 'b.txt'))).rejects.toThrow()
      const finished = byType(run.events, 'tool.finished')
      for (const id of ids.slice(1)) {
        const result = finished.find((e) => e.callId === id)
        expect(result?.isError, id).toBe(true)
        expect(result?.output).toContain('came with the id toolu_same, which an earlier call already has')
      }

      const requests = await recordedRequests<Request>(run.recordFile)
      expect(requests).toHaveLength(3)
      const last = requests.at(-1) as Request
      const uses = blocksOf(last, 'assistant').filter((b) => b.type === 'tool_use')
      const results = blocksOf(last, 'user').filter((b) => b.type === 'tool_result')
      expect(uses.map((b) => b.id)).toEqual(ids)
      expect(results.map((b) => b.tool_use_id)).toEqual(ids)
      expect(results.map((b) => b.is_error === true)).toEqual([false, true, true, true])
    }, 60_000)
  },
)
