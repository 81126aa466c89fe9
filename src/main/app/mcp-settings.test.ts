import { mkdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import type { McpUserServerInput, SettingsView } from '../../shared/ipc'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { useTempDir } from '../test-fixtures/temp-dir'
import { createAppApi, dispatchRequest, type AppApi } from './app-api'
import { mcpSecretsFileOf } from './key-store'

/**
 * The user's own MCP servers in Settings: kept with the settings in `.mcp.json`'s shape, values that look like
 * keys kept the way the API key is (here: no keychain, so the user-only file), shown masked, and started with
 * every session, trusted, with their secrets given to the server and hidden in what it returns.
 */

const TEST_SERVER = fileURLToPath(new URL('../mcp/test-fixtures/test-server.mjs', import.meta.url))
const TOKEN = 'mcp-tok-9f8e7d6c5b4a3210'
const BEARER = 'Bearer ghp_abcdefghijklmnop123456'
const LANES = { workspace: 'read-write', network: true, timeoutSec: 60 } as const

describe('MCP servers in Settings', () => {
  const base = useTempDir('lanes-mcp-settings-')
  let sessionsDir: string
  let project: string
  let api: AppApi | undefined
  let model: ScriptedModel | undefined
  beforeEach(async () => {
    sessionsDir = join(base(), 'sessions')
    project = join(base(), 'project')
    await mkdir(project)
  })
  afterEach(async () => {
    await api?.shutdown()
    await model?.close()
    api = model = undefined
  })

  const open = async () =>
    (api = await createAppApi({
      sessionsDir,
      name: 'Lanes',
      version: '1',
      transport: 'web',
      keychain: null,
      workspace: project,
    }))
  const save = async (a: AppApi, input: McpUserServerInput) => dispatchRequest(a, 'mcp:save-server', input)
  const settingsOf = (r: Awaited<ReturnType<typeof dispatchRequest>>): SettingsView => {
    if (!r.ok) throw new Error(r.error)
    return r.value as SettingsView
  }

  it('round-trips a stdio and an http server; key-like values stay out of the settings file and the view', async () => {
    const a = await open()
    settingsOf(
      await save(a, {
        name: 'helper',
        server: {
          kind: 'stdio',
          command: 'node',
          args: [TEST_SERVER],
          env: { GIVEN: TOKEN, MODE: 'fast', PORT: '3000' },
        },
        lanes: { workspace: 'read-only', network: false, timeoutSec: 5 },
      }),
    )
    const view = settingsOf(
      await save(a, {
        name: 'remote',
        server: {
          kind: 'http',
          url: 'https://mcp.example.com/mcp',
          headers: { Authorization: BEARER, Accept: 'json' },
        },
        lanes: LANES,
      }),
    )
    expect(view.mcpServers).toEqual([
      {
        name: 'helper',
        kind: 'stdio',
        command: 'node',
        args: [TEST_SERVER],
        env: { MODE: { value: 'fast' }, PORT: { value: '3000' }, GIVEN: { masked: 'mcp-tok…3210' } },
        lanes: { workspace: 'read-only', network: false, timeoutSec: 5 },
        problem: null,
        // A command has nothing to sign in to.
        auth: null,
      },
      {
        name: 'remote',
        kind: 'http',
        url: 'https://mcp.example.com/mcp',
        headers: { Accept: { value: 'json' }, Authorization: { masked: 'Bearer …3456' } },
        lanes: LANES,
        problem: null,
        // Its own Authorization header: no OAuth sign-in.
        auth: null,
      },
    ])
    const settingsFile = await readFile(join(sessionsDir, 'settings.json'), 'utf8')
    expect(settingsFile).not.toContain(TOKEN)
    expect(settingsFile).not.toContain('ghp_')
    // The plain values are there, in `.mcp.json`'s shape.
    expect(JSON.parse(settingsFile).mcpServers.remote).toEqual({
      type: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { Accept: 'json' },
      lanes: LANES,
    })
    const secretsFile = mcpSecretsFileOf(sessionsDir)
    expect((await stat(secretsFile)).mode & 0o777).toBe(0o600)
    expect(await readFile(secretsFile, 'utf8')).toContain(TOKEN)

    // Another start on the same data folder sees the same; an edit that keeps the secret unseen keeps it.
    const again = await createAppApi({
      sessionsDir,
      name: 'Lanes',
      version: '1',
      transport: 'web',
      keychain: null,
    })
    const edited = settingsOf(
      await save(again, {
        name: 'helper2',
        previousName: 'helper',
        server: { kind: 'stdio', command: 'node', args: [TEST_SERVER], env: { GIVEN: { keep: true } } },
        lanes: LANES,
      }),
    )
    expect(edited.mcpServers.map((s) => s.name)).toEqual(['helper2', 'remote'])
    expect(edited.mcpServers[0]?.env).toEqual({ GIVEN: { masked: 'mcp-tok…3210' } })
    expect(JSON.stringify(edited)).not.toContain(TOKEN)
    expect(await readFile(secretsFile, 'utf8')).toContain(TOKEN)

    // Removing a server removes its secrets; with none left the file is gone.
    settingsOf(await dispatchRequest(again, 'mcp:remove-server', { name: 'helper2' }))
    expect(await readFile(secretsFile, 'utf8')).not.toContain(TOKEN)
    const last = settingsOf(await dispatchRequest(again, 'mcp:remove-server', { name: 'remote' }))
    expect(last.mcpServers).toEqual([])
    await expect(stat(secretsFile)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('refuses what a .mcp.json entry could not hold, a name taken, and a kept secret that is not stored', async () => {
    const a = await open()
    const bad = await save(a, {
      name: 'remote',
      server: { kind: 'http', url: 'ftp://example.com', headers: {} },
      lanes: LANES,
    })
    expect(bad).toMatchObject({ ok: false, code: 'invalid-input' })
    expect(!bad.ok && bad.error).toContain('"url"')
    const keep = await save(a, {
      name: 'x',
      server: { kind: 'stdio', command: 'node', args: [], env: { K: { keep: true } } },
      lanes: LANES,
    })
    expect(keep).toMatchObject({ ok: false, error: 'The value of K is not stored: type it again.' })
    settingsOf(
      await save(a, { name: 'a', server: { kind: 'stdio', command: 'a', args: [], env: {} }, lanes: LANES }),
    )
    settingsOf(
      await save(a, { name: 'b', server: { kind: 'stdio', command: 'b', args: [], env: {} }, lanes: LANES }),
    )
    expect(
      await save(a, {
        name: 'b',
        previousName: 'a',
        server: { kind: 'stdio', command: 'a', args: [], env: {} },
        lanes: LANES,
      }),
    ).toMatchObject({ ok: false, error: 'There is already a server named "b".' })
    expect(await dispatchRequest(a, 'mcp:remove-server', { name: 'zzz' })).toMatchObject({ ok: false })
  })

  it('starts the server with each session, trusted, with its secret; what it echoes of the secret is hidden', async () => {
    const events: SessionEvent[] = []
    const ready = () => events.some((e) => e.type === 'mcp.server' && e.status === 'ready')
    let played = 0
    model = await startScriptedModel({
      scenario: { turns: [] },
      respond: async () => {
        if (played++ > 0) return { blocks: [{ text: 'Done.' }] }
        for (let i = 0; i < 1500 && !ready(); i++) await new Promise((r) => setTimeout(r, 20))
        return { blocks: [{ tool: 'mcp__helper__env', id: 'e1', input: {} }], stop: 'tool_use' }
      },
    })
    const a = await open()
    a.subscribe((channel, payload) => {
      if (channel === 'session:events') events.push(...(payload as { events: SessionEvent[] }).events)
    })
    settingsOf(await dispatchRequest(a, 'settings:set', { baseUrl: model.baseUrl }))
    settingsOf(
      await save(a, {
        name: 'helper',
        server: { kind: 'stdio', command: 'node', args: [TEST_SERVER], env: { GIVEN: TOKEN } },
        lanes: LANES,
      }),
    )
    expect(await dispatchRequest(a, 'session:start', { task: 'ask the helper' })).toMatchObject({ ok: true })
    for (let i = 0; i < 1500 && !events.some((e) => e.type === 'run.finished'); i++)
      await new Promise((r) => setTimeout(r, 20))
    const started = events.find((e) => e.type === 'mcp.server' && e.status === 'ready')
    expect(started).toMatchObject({ server: 'helper', origin: 'user' })
    const done = events.find((e) => e.type === 'tool.finished' && e.callId === 'e1')
    if (done?.type !== 'tool.finished') throw new Error('the call did not finish')
    expect(done.isError).toBe(false)
    // The server had the secret (it said so), and the model and the log see it hidden.
    expect(done.output).toContain("[secret from an MCP server's key in Settings hidden]")
    expect(JSON.stringify(events)).not.toContain(TOKEN)
    expect(JSON.stringify(model.requests)).not.toContain(TOKEN)
  })
})
