import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAppApi, dispatchRequest } from './app-api'

describe('the app API', () => {
  let base: string
  /** An app API on this test's data folder; `opts` gives the transport and what differs. */
  const appApi = (opts: Omit<Parameters<typeof createAppApi>[0], 'sessionsDir' | 'name' | 'version'>) =>
    createAppApi({ sessionsDir: join(base, 'sessions'), name: 'Lanes', version: '1', ...opts })
  beforeAll(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-api-')))
    await mkdir(join(base, 'project'))
    await writeFile(join(base, 'file.txt'), 'x')
    await symlink(join(base, 'project'), join(base, 'link-to-project'))
  })
  afterAll(async () => {
    await rm(base, { recursive: true, force: true })
  })

  it('opens a folder by path and announces it', async () => {
    const api = await appApi({ transport: 'web' })
    const seen: unknown[] = []
    api.subscribe((channel, payload) => seen.push({ channel, payload }))
    const result = await dispatchRequest(api, 'workspace:open', { path: join(base, 'link-to-project') })
    // The real path is what the engine confines tools to.
    expect(result).toEqual({ ok: true, value: { path: join(base, 'project'), name: 'project' } })
    expect(seen).toEqual([
      { channel: 'workspace:changed', payload: { path: join(base, 'project'), name: 'project' } },
    ])
  })

  it('returns an error value for a missing folder or a file, and keeps the current one', async () => {
    const api = await appApi({ transport: 'web', workspace: join(base, 'project') })
    await expect(dispatchRequest(api, 'workspace:open', { path: join(base, 'nope') })).resolves.toMatchObject(
      {
        ok: false,
        code: 'not-found',
      },
    )
    await expect(
      dispatchRequest(api, 'workspace:open', { path: join(base, 'file.txt') }),
    ).resolves.toMatchObject({
      ok: false,
      code: 'invalid-input',
    })
    await expect(dispatchRequest(api, 'workspace:current', undefined)).resolves.toMatchObject({
      value: { name: 'project' },
    })
  })

  it('asks for a path in browser mode and reports a cancelled dialog in the app', async () => {
    const web = await appApi({ transport: 'web' })
    await expect(dispatchRequest(web, 'workspace:open', undefined)).resolves.toMatchObject({
      ok: false,
      code: 'invalid-input',
    })
    const desktop = await appApi({ transport: 'electron', pickFolder: async () => null })
    await expect(dispatchRequest(desktop, 'workspace:open', {})).resolves.toMatchObject({
      ok: false,
      code: 'cancelled',
    })
    const picked = await appApi({ transport: 'electron', pickFolder: async () => join(base, 'project') })
    await expect(dispatchRequest(picked, 'workspace:open', undefined)).resolves.toMatchObject({ ok: true })
  })

  it('starts with no folder when the remembered one is gone', async () => {
    const api = await appApi({ transport: 'electron', workspace: join(base, 'gone') })
    await expect(dispatchRequest(api, 'workspace:current', undefined)).resolves.toEqual({
      ok: true,
      value: null,
    })
  })

  it('turns a throwing handler into an error value', async () => {
    const api = await appApi({ transport: 'web' })
    api.handlers['app:info'] = async () => {
      throw new Error('boom')
    }
    await expect(dispatchRequest(api, 'app:info', undefined)).resolves.toEqual({
      ok: false,
      code: 'failed',
      error: 'app:info failed: boom',
    })
  })
})
