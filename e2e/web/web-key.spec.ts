import { expect, test } from '@playwright/test'
import { stat } from 'node:fs/promises'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startWebApp } from '../fixtures'
import { screenshots, sendTask, startScriptedModel } from './ui-support'

// Browser mode is a complete app: a key typed in Settings is stored (here: no keychain, so the user-only
// file) and is what the model receives on the wire; the page never holds it.

const KEY = 'sk-ant-api03-E2E-browser-mode-key-0123456789'

/** A pass-through in front of the scripted model that notes the key every request carries. */
async function recordingProxy(target: string): Promise<{ url: string; keys: string[]; server: Server }> {
  const keys: string[] = []
  const upstream = new URL(target)
  const server = createServer((req, res) => {
    // The SDK sends the key as x-api-key or as a bearer token, depending on its version.
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    keys.push(String(req.headers['x-api-key'] ?? bearer ?? ''))
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      },
    )
    forward.on('error', () => res.destroy())
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys, server }
}

test('a key set in Settings in browser mode is stored for the user only and reaches the model', async ({
  page,
}) => {
  const model = await startScriptedModel({ turns: [{ blocks: [{ text: 'Hello from Claude.' }] }] })
  const proxy = await recordingProxy(model.baseUrl)
  const { app, stop } = await startWebApp(
    { 'README.md': '# Demo\n' },
    { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' },
  )
  try {
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const dialog = page.getByTestId('settings-dialog')
    await expect(dialog.getByTestId('settings-key-status')).toContainText('No key set')
    await expect(dialog.getByTestId('settings-key-storage')).toContainText('a file only you can read')
    // The file is in Lanes' data folder (here the test's sessions folder).
    await expect(dialog.getByTestId('settings-key-storage')).toContainText(app.sessionsDir + '/')
    await dialog.getByTestId('settings-api-key').fill(KEY)
    await dialog.getByTestId('settings-base-url').fill(proxy.url)
    await dialog.getByTestId('settings-save').click()
    await expect(dialog.getByRole('status')).toHaveText('Saved')
    await expect(dialog.getByTestId('settings-key-status')).toContainText('Stored by Lanes')
    await expect(dialog.getByTestId('settings-key-status')).toContainText('sk-ant-…6789')
    await screenshots(page, 'web-key-settings')
    await page.keyboard.press('Escape')

    await sendTask(page, 'Say hello')
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(proxy.keys.length).toBeGreaterThan(0)
    expect(proxy.keys).toEqual(proxy.keys.map(() => KEY))

    // The key lives in main only: not in the page, its storage or its cookies.
    expect(await page.content()).not.toContain(KEY)
    const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))
    expect(stored).not.toContain(KEY)
    expect(await page.context().cookies()).toEqual([])
    const view = await page.evaluate(() => window.api.invoke('settings:get'))
    const keyFile = (view as { value: { apiKey: { file: string } } }).value.apiKey.file
    expect(keyFile.startsWith(app.sessionsDir)).toBe(true)
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600)

    // Pointing the stored key somewhere else from the page alone is refused.
    await page.getByTestId('settings-open').click()
    await dialog.getByTestId('settings-base-url').fill('https://collector.example/')
    await dialog.getByTestId('settings-save').click()
    await expect(page.getByTestId('settings-problem')).toContainText('type the key again')
    const settings = await page.evaluate(() => window.api.invoke('settings:get'))
    expect(settings).toMatchObject({ ok: true, value: { baseUrl: proxy.url } })
  } finally {
    await stop()
    await new Promise((r) => proxy.server.close(r))
    await model.stop()
  }
})
