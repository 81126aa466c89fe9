import { mkdtemp, readFile, realpath, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { isSecretPath } from '../tools/sensitive-paths'
import { createAppApi, dispatchRequest, type AppApiOptions } from './app-api'
import { keyFileOf } from './key-store'

/**
 * The key entered in Settings, as every host stores and guards it: kept in main (the view shows it masked),
 * stored where the OS allows (here: no keychain, so the user-only file), and never sent to a new base URL
 * on the renderer's word alone.
 */

const KEY = 'sk-ant-api03-SETTINGS-TEST-abcdefghijklmnop'

describe('the API key in Settings', () => {
  let dir: string
  let sessionsDir: string
  const savedEnv = { key: process.env.ANTHROPIC_API_KEY, url: process.env.ANTHROPIC_BASE_URL }

  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'lanes-settings-key-')))
    sessionsDir = join(dir, 'sessions')
    delete process.env.ANTHROPIC_API_KEY
    delete process.env.ANTHROPIC_BASE_URL
  })
  afterEach(async () => {
    for (const [name, value] of [
      ['ANTHROPIC_API_KEY', savedEnv.key],
      ['ANTHROPIC_BASE_URL', savedEnv.url],
    ] as const) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    await rm(dir, { recursive: true, force: true })
  })

  const app = (extra: Partial<AppApiOptions> = {}) =>
    createAppApi({ sessionsDir, name: 'Lanes', version: '1', transport: 'web', keychain: null, ...extra })

  it('stores a key in browser mode, shows it masked with where it is kept, and never returns it', async () => {
    const api = await app()
    const before = await dispatchRequest(api, 'settings:get', undefined)
    expect(before).toMatchObject({
      ok: true,
      value: { demo: true, apiKey: { source: 'none', storage: 'file' } },
    })
    const after = await dispatchRequest(api, 'settings:set', { apiKey: KEY })
    expect(after).toMatchObject({
      ok: true,
      value: {
        demo: false,
        apiKey: {
          source: 'stored',
          masked: 'sk-ant-…mnop',
          storage: 'file',
          file: keyFileOf(sessionsDir),
        },
      },
    })
    expect(JSON.stringify(after)).not.toContain(KEY)
    expect((await stat(keyFileOf(sessionsDir))).mode & 0o777).toBe(0o600)
    // The settings file, which other tools may read, holds no key.
    expect(await readFile(join(sessionsDir, 'settings.json'), 'utf8')).not.toContain(KEY)
    // A later start (another host on the same data folder) finds it.
    expect(await dispatchRequest(await app(), 'settings:get', undefined)).toMatchObject({
      value: { apiKey: { source: 'stored' } },
    })
    expect(await dispatchRequest(api, 'settings:set', { apiKey: null })).toMatchObject({
      value: { apiKey: { source: 'none', masked: null } },
    })
    await expect(stat(keyFileOf(sessionsDir))).rejects.toThrow()
  })

  it('keeps the key file a secret by name for every tool, should its folder be opened as a workspace', () => {
    expect(isSecretPath(`.local/share/lanes/sessions/${basename(keyFileOf(sessionsDir))}`)).toBe(true)
  })

  it('in browser mode, refuses to point a stored key at a new base URL unless the key is typed with it', async () => {
    const api = await app()
    await dispatchRequest(api, 'settings:set', { apiKey: KEY })
    const refused = await dispatchRequest(api, 'settings:set', { baseUrl: 'https://collector.example/' })
    expect(refused).toMatchObject({ ok: false, code: 'forbidden' })
    expect((refused as { error: string }).error).toContain('type the key again')
    expect(await dispatchRequest(api, 'settings:get', undefined)).toMatchObject({ value: { baseUrl: null } })

    const withKey = await dispatchRequest(api, 'settings:set', {
      baseUrl: 'https://proxy.example/',
      apiKey: KEY,
    })
    expect(withKey).toMatchObject({ ok: true, value: { baseUrl: 'https://proxy.example/' } })
    // Other settings, and the same address again, need nothing.
    expect(
      await dispatchRequest(api, 'settings:set', { model: 'claude-x', baseUrl: 'https://proxy.example/' }),
    ).toMatchObject({
      ok: true,
    })
  })

  it('guards a key from the environment the same way', async () => {
    process.env.ANTHROPIC_API_KEY = KEY
    const api = await app()
    expect(
      await dispatchRequest(api, 'settings:set', { baseUrl: 'https://collector.example/' }),
    ).toMatchObject({
      ok: false,
      code: 'forbidden',
    })
  })

  it('lets the base URL change freely when no key would be sent', async () => {
    const api = await app()
    expect(await dispatchRequest(api, 'settings:set', { baseUrl: 'http://127.0.0.1:9/' })).toMatchObject({
      ok: true,
      value: { baseUrl: 'http://127.0.0.1:9/', demo: false },
    })
  })

  it("in the app, asks main's dialog: a refusal changes nothing, consent applies the change", async () => {
    const asked: unknown[] = []
    let answer = false
    const api = await app({
      transport: 'electron',
      confirmBaseUrl: async (change) => {
        asked.push(change)
        return answer
      },
    })
    await dispatchRequest(api, 'settings:set', { apiKey: KEY })
    expect(asked).toEqual([])
    const refused = await dispatchRequest(api, 'settings:set', { baseUrl: 'https://collector.example/' })
    expect(refused).toMatchObject({ ok: false, code: 'cancelled' })
    expect(asked).toEqual([{ from: null, to: 'https://collector.example/' }])
    expect(await dispatchRequest(api, 'settings:get', undefined)).toMatchObject({ value: { baseUrl: null } })
    answer = true
    expect(await dispatchRequest(api, 'settings:set', { baseUrl: 'https://proxy.example/' })).toMatchObject({
      ok: true,
      value: { baseUrl: 'https://proxy.example/' },
    })
    // Back to the default address is a change of destination too.
    answer = false
    expect(await dispatchRequest(api, 'settings:set', { baseUrl: null })).toMatchObject({ code: 'cancelled' })
    expect(asked).toHaveLength(3)
  })
})
