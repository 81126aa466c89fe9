import WebSocket from 'ws'
import { expect, test } from '../fixtures'

test('browser mode shows the open workspace and answers app:info through window.api', async ({
  page,
  web,
}) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  await expect(page.getByTestId('workspace-path')).toHaveText(web.workspace)

  const info = await page.evaluate(() => window.api.invoke('app:info'))
  expect(info).toMatchObject({ ok: true, value: { name: 'Lanes', transport: 'web' } })

  // Bad input is an error value, not an exception, and changes nothing.
  const missing = await page.evaluate(() =>
    window.api.invoke('workspace:open', { path: '/definitely/not/here' }),
  )
  expect(missing).toMatchObject({ ok: false, code: 'not-found' })
  const wrong = await page.evaluate(() =>
    (window.api.invoke as (c: string, i: unknown) => Promise<unknown>)('workspace:open', { path: 42 }),
  )
  expect(wrong).toMatchObject({ ok: false, code: 'invalid-input' })
  const unknown = await page.evaluate(() =>
    (window.api.invoke as (c: string) => Promise<unknown>)('fs:delete-everything'),
  )
  expect(unknown).toMatchObject({ ok: false, code: 'unknown-channel' })
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')

  await page.screenshot({ path: 'e2e/output/screenshots/foundation-workspace.png' })
})

test('the token leaves the address bar, rides no cookie, and a reload keeps working', async ({
  page,
  context,
  web,
}) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  expect(page.url()).toBe(web.origin + '/')
  // A 127.0.0.1 cookie would go to every other local port as well.
  expect(await context.cookies()).toEqual([])
  await page.reload()
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  expect(page.url()).toBe(web.origin + '/')
})

test('opening another folder by path in browser mode updates the workspace', async ({ page, web }) => {
  await page.goto(web.url)
  await page.getByTestId('workspace-open').click()
  await page.getByTestId('workspace-path-input').fill(web.workspace + '/src')
  await page.getByRole('button', { name: 'Open', exact: true }).click()
  await expect(page.getByTestId('workspace-name')).toHaveText('src')
  await page.getByTestId('workspace-open').click()
  await page.getByTestId('workspace-path-input').fill('/no/such/folder')
  await page.getByRole('button', { name: 'Open', exact: true }).click()
  await expect(page.getByRole('alert')).toContainText('does not exist')
  await expect(page.getByTestId('workspace-name')).toHaveText('src')
})

test('the API refuses a socket without the token (HTTP 401) or from another origin (403)', async ({
  request,
  web,
}) => {
  const wrongToken = await request.get(web.origin + '/?token=nope', { failOnStatusCode: false })
  expect(wrongToken.status()).toBe(401)
  expect(await wrongToken.text()).toContain('Open Lanes from the link in your terminal')

  const wsUrl = web.origin.replace('http', 'ws') + '/api'
  const outcome = await new Promise<{ opened: boolean; status?: number }>((resolve) => {
    const ws = new WebSocket(wsUrl, { headers: { Origin: web.origin } })
    ws.on('open', () => {
      ws.close()
      resolve({ opened: true })
    })
    ws.on('unexpected-response', (_req, res) => resolve({ opened: false, status: res.statusCode }))
    ws.on('error', () => resolve({ opened: false }))
  })
  expect(outcome).toEqual({ opened: false, status: 401 })

  // With the token but from a foreign origin (another web site in the same browser): refused too.
  const foreign = await new Promise<{ opened: boolean; status?: number }>((resolve) => {
    const ws = new WebSocket(wsUrl, ['lanes', `lanes.token.${web.token}`], {
      headers: { Origin: 'http://evil.example' },
    })
    ws.on('open', () => resolve({ opened: true }))
    ws.on('unexpected-response', (_req, res) => resolve({ opened: false, status: res.statusCode }))
    ws.on('error', () => resolve({ opened: false }))
  })
  expect(foreign).toEqual({ opened: false, status: 403 })
})
