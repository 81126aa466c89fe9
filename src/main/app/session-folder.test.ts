import { mkdir, readFile, rename, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { createAppApi, dispatchRequest, type AppApi } from './app-api'
import { AgentSession, agentOptions, connectModel, DEFAULT_ENGINE_SETTINGS, prepareEngine } from './engine'
import { useTempDir } from '../test-fixtures/temp-dir'

/**
 * A session paused in one folder is approved or continued while the app has another folder open (after a
 * restart, say): the work must land in the session's own folder, or be refused when that folder is gone.
 */

describe('a paused session continues in its own folder', () => {
  const base = useTempDir('lanes-session-folder-')
  let projectA: string
  let projectB: string
  let sessionsDir: string
  let model: ScriptedModel
  let api: AppApi

  beforeEach(async () => {
    projectA = join(base(), 'project-a')
    projectB = join(base(), 'project-b')
    sessionsDir = join(base(), 'sessions')
    await mkdir(projectA)
    await mkdir(projectB)
    model = await startScriptedModel({
      scenario: {
        turns: [
          {
            blocks: [{ tool: 'write_file', input: { path: 'out.txt', content: 'written by the session\n' } }],
          },
          { blocks: [{ text: 'Done.' }] },
        ],
      },
    })
  })
  afterEach(async () => {
    await api?.shutdown()
    await model.close()
  })

  /** A session in project A that paused for approval of its write, as `lanes run` leaves one. */
  async function pausedSessionInA(): Promise<{ sessionId: string; callId: string }> {
    const { registry } = await prepareEngine()
    const connected = await connectModel({ baseUrl: model.baseUrl, apiKey: 'test' }, projectA)
    const session = await AgentSession.create(
      agentOptions(
        { workspace: projectA, registry, model: connected, approvals: 'pause' },
        { ...DEFAULT_ENGINE_SETTINGS, sessionsDir },
      ),
      'write out.txt',
    )
    expect(await session.run('write out.txt')).toMatchObject({ status: 'paused' })
    await session.close()
    const loaded = await dispatchRequest(api, 'session:load', { sessionId: session.sessionId })
    const queued = (loaded as { value: { events: SessionEvent[] } }).value.events.find(
      (e) => e.type === 'tool.queued',
    )
    return { sessionId: session.sessionId, callId: (queued as { callId: string }).callId }
  }

  async function openAppOnB(): Promise<SessionEvent[]> {
    api = await createAppApi({
      sessionsDir,
      name: 'Lanes',
      version: '1',
      transport: 'web',
      workspace: projectB,
    })
    await dispatchRequest(api, 'settings:set', { baseUrl: model.baseUrl })
    const seen: SessionEvent[] = []
    api.subscribe((channel, payload) => {
      if (channel === 'session:events') seen.push(...(payload as { events: SessionEvent[] }).events)
    })
    return seen
  }

  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 20))
    expect(check()).toBe(true)
  }

  it('approval:reply writes into the folder the session recorded, not the open one', async () => {
    const seen = await openAppOnB()
    const { sessionId, callId } = await pausedSessionInA()
    const reply = await dispatchRequest(api, 'approval:reply', {
      sessionId,
      decisions: [{ callId, decision: 'approved' }],
    })
    expect(reply).toEqual({ ok: true, value: null })
    await until(() => seen.some((e) => e.type === 'run.finished'))
    expect(await readFile(join(projectA, 'out.txt'), 'utf8')).toBe('written by the session\n')
    await expect(stat(join(projectB, 'out.txt'))).rejects.toThrow()
  })

  it('session:continue runs in the recorded folder too', async () => {
    const seen = await openAppOnB()
    const { sessionId, callId } = await pausedSessionInA()
    expect(await dispatchRequest(api, 'session:continue', { sessionId })).toEqual({
      ok: true,
      value: { sessionId },
    })
    // The continued run waits for the decision it paused for, live in this app now.
    await until(() => seen.some((e) => e.type === 'run.resumed'))
    expect(
      await dispatchRequest(api, 'approval:reply', {
        sessionId,
        decisions: [{ callId, decision: 'approved' }],
      }),
    ).toEqual({ ok: true, value: null })
    await until(() => seen.some((e) => e.type === 'run.finished'))
    expect(await readFile(join(projectA, 'out.txt'), 'utf8')).toBe('written by the session\n')
    await expect(stat(join(projectB, 'out.txt'))).rejects.toThrow()
  })

  it('refuses clearly, and writes nothing anywhere, when the recorded folder is gone', async () => {
    await openAppOnB()
    const { sessionId, callId } = await pausedSessionInA()
    await rename(projectA, join(base(), 'moved-away'))
    for (const [channel, input] of [
      ['approval:reply', { sessionId, decisions: [{ callId, decision: 'approved' }] }],
      ['session:continue', { sessionId }],
      ['session:start', { sessionId, task: 'and a follow-up' }],
    ] as const) {
      const result = await dispatchRequest(api, channel, input)
      expect(result, channel).toMatchObject({ ok: false, code: 'not-found' })
      expect((result as { error: string }).error).toContain(`${projectA}, which is gone`)
    }
    await expect(stat(join(projectB, 'out.txt'))).rejects.toThrow()
    await expect(stat(join(base(), 'moved-away', 'out.txt'))).rejects.toThrow()
  })

  it('refuses a session that does not exist', async () => {
    await openAppOnB()
    const result = await dispatchRequest(api, 'session:continue', {
      sessionId: '2026-11-30T19-40-12-123Z-a1b2c3',
    })
    expect(result).toMatchObject({ ok: false, code: 'not-found' })
  })
})
