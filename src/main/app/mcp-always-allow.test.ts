import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import type { McpUserServerInput } from '../../shared/ipc'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import type { ScenarioTurn } from '../agent/scenario'
import { useTempDir } from '../test-fixtures/temp-dir'
import { createAppApi, dispatchRequest, type AppApi } from './app-api'

/**
 * "Always allow" for an MCP tool: given with an approval of an unsafe tool, later calls of that tool of that
 * very server run unasked in the folder; a tool that says `destructiveHint: true` asks every time, and a
 * server whose command changed is another server (its rules do not carry over).
 */

const TEST_SERVER = fileURLToPath(new URL('../mcp/test-fixtures/test-server.mjs', import.meta.url))
const LANES = { workspace: 'read-write', network: false, timeoutSec: 60 } as const

describe('always allowing an MCP tool', () => {
  const base = useTempDir('lanes-mcp-always-')
  let api: AppApi | undefined
  let model: ScriptedModel | undefined
  afterEach(async () => {
    await api?.shutdown()
    await model?.close()
    api = model = undefined
  })

  it('lets the tool run unasked after "always allow", never a destructive one, never for another command', async () => {
    const project = join(base(), 'project')
    const sessionsDir = join(base(), 'sessions')
    await mkdir(project)
    const events: SessionEvent[] = []
    const count = (test: (e: SessionEvent) => boolean) => events.filter(test).length
    const until = async (what: string, test: () => boolean) => {
      for (let i = 0; i < 3000 && !test(); i++) await new Promise((r) => setTimeout(r, 20))
      if (!test()) throw new Error(`timed out waiting for ${what}`)
    }
    const ready = (e: SessionEvent) => e.type === 'mcp.server' && e.status === 'ready'
    const write = (id: string, name: string): ScenarioTurn['blocks'][number] => ({
      tool: 'mcp__helper__write',
      id,
      input: { name, text: id },
    })
    const wipe = (id: string): ScenarioTurn['blocks'][number] => ({
      tool: 'mcp__helper__wipe',
      id,
      input: {},
    })
    // Each run starts its servers again: a run's tool turn is played once its server is ready.
    const turns: { readyTimes?: number; turn: ScenarioTurn }[] = [
      { readyTimes: 1, turn: { blocks: [write('w1', 'one.txt'), wipe('x1')], stop: 'tool_use' } },
      { turn: { blocks: [{ text: 'Done.' }] } },
      { readyTimes: 2, turn: { blocks: [write('w2', 'two.txt'), wipe('x2')], stop: 'tool_use' } },
      { turn: { blocks: [{ text: 'Done.' }] } },
      { readyTimes: 3, turn: { blocks: [write('w3', 'three.txt')], stop: 'tool_use' } },
      { turn: { blocks: [{ text: 'Done.' }] } },
    ]
    model = await startScriptedModel({
      scenario: { turns: [] },
      respond: async () => {
        const next = turns.shift()
        if (!next) return { blocks: [{ text: 'No more turns.' }] }
        if (next.readyTimes) await until('the server', () => count(ready) >= (next.readyTimes as number))
        return next.turn
      },
    })
    api = await createAppApi({
      sessionsDir,
      name: 'Lanes',
      version: '1',
      transport: 'web',
      keychain: null,
      workspace: project,
    })
    const a = api
    a.subscribe((channel, payload) => {
      if (channel === 'session:events') events.push(...(payload as { events: SessionEvent[] }).events)
    })
    const server = (env: Record<string, string>): McpUserServerInput => ({
      name: 'helper',
      server: { kind: 'stdio', command: process.execPath, args: [TEST_SERVER], env },
      lanes: LANES,
    })
    expect(await dispatchRequest(a, 'settings:set', { baseUrl: model.baseUrl })).toMatchObject({ ok: true })
    expect(await dispatchRequest(a, 'mcp:save-server', server({}))).toMatchObject({ ok: true })
    const asked = (callId: string) => count((e) => e.type === 'approval.requested' && e.callId === callId) > 0
    const finished = (callId: string) => {
      const e = events.find((e) => e.type === 'tool.finished' && e.callId === callId)
      return e?.type === 'tool.finished' ? e : undefined
    }
    const runsDone = () => count((e) => e.type === 'run.finished')

    // First run: both ask; "always" with both approvals.
    const started = await dispatchRequest(a, 'session:start', { task: 'write' })
    if (!started.ok) throw new Error(started.error)
    const { sessionId } = started.value as { sessionId: string }
    await until('both approvals', () => asked('w1') && asked('x1'))
    const approveAlways = [
      { callId: 'w1', decision: 'approved', always: true },
      { callId: 'x1', decision: 'approved', always: true },
    ] as const
    expect(
      await dispatchRequest(a, 'approval:reply', { sessionId, decisions: [...approveAlways] }),
    ).toMatchObject({
      ok: true,
    })
    await until('the first run', () => runsDone() >= 1)
    expect(await readFile(join(project, 'one.txt'), 'utf8')).toBe('w1')
    const rules = JSON.parse(await readFile(join(sessionsDir, 'always-allow.json'), 'utf8'))
    expect(Object.values(rules)).toEqual([
      [{ tool: 'mcp', server: expect.stringMatching(/^[0-9a-f]{64}$/), name: 'write' }],
    ])

    // A follow-up starts once the run's end is through (its servers stopped after run.finished).
    const followUp = async (task: string) => {
      let r = await dispatchRequest(a, 'session:start', { task, sessionId })
      for (let i = 0; i < 250 && !r.ok && /still running/.test(r.error); i++) {
        await new Promise((done) => setTimeout(done, 20))
        r = await dispatchRequest(a, 'session:start', { task, sessionId })
      }
      expect(r).toMatchObject({ ok: true })
    }

    // Second run: the write runs unasked; the destructive tool asks again.
    await followUp('again')
    await until('the destructive call to ask', () => asked('x2'))
    await until('the write', () => finished('w2') !== undefined)
    expect(asked('w2')).toBe(false)
    expect(finished('w2')?.isError).toBe(false)
    expect(await readFile(join(project, 'two.txt'), 'utf8')).toBe('w2')
    await dispatchRequest(a, 'approval:reply', {
      sessionId,
      decisions: [{ callId: 'x2', decision: 'rejected' }],
    })
    await until('the second run', () => runsDone() >= 2)

    // The same name with another environment is another server: its write asks.
    expect(await dispatchRequest(a, 'mcp:save-server', server({ EXTRA: '1' }))).toMatchObject({ ok: true })
    await followUp('third')
    await until('the write to ask', () => asked('w3'))
    await dispatchRequest(a, 'approval:reply', {
      sessionId,
      decisions: [{ callId: 'w3', decision: 'rejected' }],
    })
    await until('the third run', () => runsDone() >= 3)
  })
})
