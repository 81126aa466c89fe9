import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

// No Electron binary runs here: ipcMain is replaced by a recorder, everything else is the real code.
const handlers = new Map<string, (event: unknown, message: unknown) => Promise<unknown>>()
vi.mock('electron', () => ({
  ipcMain: {
    handle: (channel: string, fn: (event: unknown, message: unknown) => Promise<unknown>) =>
      handlers.set(channel, fn),
    removeHandler: (channel: string) => handlers.delete(channel),
  },
}))

const { registerIpc, INVOKE_CHANNEL } = await import('./ipc')
const { createAppApi } = await import('../app/app-api')

describe('the Electron IPC wrapper', () => {
  let dir: string
  const trusted = { senderFrame: { url: 'file:///app/index.html', parent: null }, trusted: true }
  const foreign = { senderFrame: { url: 'https://evil.example/', parent: null }, trusted: false }
  let invoke: (event: unknown, message: unknown) => Promise<unknown>

  beforeAll(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'lanes-ipc-')))
    const api = await createAppApi({
      sessionsDir: join(dir, 'sessions'),
      name: 'Lanes',
      version: '1.0.0',
      transport: 'electron',
      workspace: dir,
    })
    registerIpc(api, { isTrustedSender: (event) => (event as unknown as typeof trusted).trusted })
    invoke = handlers.get(INVOKE_CHANNEL)!
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('answers a valid request from our window', async () => {
    await expect(invoke(trusted, { channel: 'app:info' })).resolves.toMatchObject({
      ok: true,
      value: { name: 'Lanes', transport: 'electron' },
    })
    await expect(invoke(trusted, { channel: 'workspace:current' })).resolves.toMatchObject({
      ok: true,
      value: { path: dir },
    })
  })

  it('refuses a foreign sender without running the handler', async () => {
    await expect(invoke(foreign, { channel: 'workspace:open', input: { path: '/' } })).resolves.toMatchObject(
      {
        ok: false,
        code: 'forbidden',
      },
    )
    await expect(invoke(trusted, { channel: 'workspace:current' })).resolves.toMatchObject({
      value: { path: dir },
    })
  })

  it('refuses an unknown channel', async () => {
    await expect(invoke(trusted, { channel: 'shell:exec', input: 'rm -rf /' })).resolves.toMatchObject({
      ok: false,
      code: 'unknown-channel',
    })
    await expect(invoke(trusted, { channel: '__proto__' })).resolves.toMatchObject({
      ok: false,
      code: 'unknown-channel',
    })
  })

  it('refuses a wrong payload with a clear error and changes nothing', async () => {
    const result = await invoke(trusted, { channel: 'workspace:open', input: { path: 7 } })
    expect(result).toMatchObject({ ok: false, code: 'invalid-input' })
    expect((result as { error: string }).error).toContain('path')
    await expect(invoke(trusted, 'not an object')).resolves.toMatchObject({
      ok: false,
      code: 'invalid-input',
    })
    await expect(invoke(trusted, null)).resolves.toMatchObject({ ok: false, code: 'invalid-input' })
    await expect(invoke(trusted, { channel: 'workspace:current' })).resolves.toMatchObject({
      value: { path: dir },
    })
  })
})
