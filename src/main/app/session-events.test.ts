import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { useTempDir } from '../test-fixtures/temp-dir'
import { createAppApi, dispatchRequest, type AppApi } from './app-api'

describe('the events of a new session', () => {
  const base = useTempDir('lanes-session-events-')
  let model: ScriptedModel | undefined
  let api: AppApi | undefined
  afterEach(async () => {
    await api?.shutdown()
    await model?.close()
  })

  it('reach the UI under the session id from the first one (session.created) on', async () => {
    const project = join(base(), 'project')
    await mkdir(project)
    model = await startScriptedModel({ scenario: { turns: [{ blocks: [{ text: 'Hello.' }] }] } })
    api = await createAppApi({
      sessionsDir: join(base(), 'sessions'),
      name: 'Lanes',
      version: '1',
      transport: 'web',
      workspace: project,
    })
    await dispatchRequest(api, 'settings:set', { baseUrl: model.baseUrl })
    const batches: { sessionId: unknown; events: SessionEvent[] }[] = []
    api.subscribe((channel, payload) => {
      if (channel === 'session:events')
        batches.push(payload as { sessionId: unknown; events: SessionEvent[] })
    })
    const started = await dispatchRequest(api, 'session:start', { task: 'say hello' })
    expect(started).toMatchObject({ ok: true })
    const sessionId = (started as { value: { sessionId: string } }).value.sessionId
    for (let i = 0; i < 500 && !batches.some((b) => b.events.some((e) => e.type === 'run.finished')); i++)
      await new Promise((r) => setTimeout(r, 20))
    const events = batches.flatMap((b) => b.events)
    expect(events[0]).toMatchObject({ type: 'session.created', sessionId })
    expect(events.some((e) => e.type === 'run.finished')).toBe(true)
    expect(batches.map((b) => b.sessionId)).toEqual(batches.map(() => sessionId))
  })
})
