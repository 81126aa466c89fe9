import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect, test } from '../fixtures'
import { contrastViolations, screenshots } from './ui-support'

// An address without its token (a bookmark, a new tab, a link from an earlier start): in a browser that opened
// this start's link, it gets in (issue 23, item 12); elsewhere it gets a page that says how to get in, not a bare
// "Unauthorized". The token stays where only this origin (this port) can read it.

test('a second tab and a bookmark of the running app get in without the terminal', async ({ page, web }) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  await expect(page).toHaveURL(web.origin + '/')
  // A second tab of the same browser, and a bookmark of the bare address opened later.
  const tab = await page.context().newPage()
  await tab.goto(web.origin + '/')
  await expect(tab.getByTestId('workspace-name')).toHaveText('demo-project')
  const bookmark = await page.context().newPage()
  await bookmark.goto(web.origin + '/#session=')
  await expect(bookmark.getByTestId('workspace-name')).toHaveText('demo-project')
  // Nothing of it in a cookie (a browser sends 127.0.0.1 cookies to every local port) or in an address.
  expect(await page.context().cookies()).toEqual([])
  for (const p of [page, tab, bookmark]) expect(p.url()).not.toContain(web.token)
  await tab.close()
  await bookmark.close()
})

test('a page on another local port cannot read the kept token', async ({ page, web }) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  const other = createServer((_req, res) =>
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>other</p>'),
  )
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  try {
    const otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
    const probe = await page.context().newPage()
    await probe.goto(otherOrigin + '/')
    const seen = await probe.evaluate(() => ({
      local: JSON.stringify({ ...localStorage }),
      session: JSON.stringify({ ...sessionStorage }),
      cookie: document.cookie,
    }))
    expect(seen.local).not.toContain(web.token)
    expect(seen.session).not.toContain(web.token)
    expect(seen.cookie).not.toContain(web.token)
    await probe.close()
  } finally {
    await new Promise((resolve) => other.close(resolve))
  }
})

test('another browser (no link opened there) gets the page that says how to get in', async ({
  browser,
  web,
}) => {
  // A new browser context shares nothing with the first, as another browser or profile.
  const other = await browser.newContext()
  const tab = await other.newPage()
  await tab.goto(web.origin + '/')
  await expect(tab).toHaveURL(web.origin + '/access')
  const access = tab.getByTestId('access-page')
  await expect(access.getByRole('heading')).toHaveText('Open Lanes from the link in your terminal')
  await expect(access).toContainText('lanes web')
  await expect(access).toContainText('npm run web')
  await expect(access).toContainText('other tabs and bookmarks of this address then get in')
  for (const scheme of ['light', 'dark'] as const) {
    await tab.emulateMedia({ colorScheme: scheme })
    expect(await contrastViolations(tab)).toEqual([])
  }
  await screenshots(tab, 'web-access')
  await other.close()
})

test('a link from an earlier start says its key no longer works', async ({ page, web }) => {
  const response = await page.goto(web.origin + '/?token=from-last-week')
  expect(response?.status()).toBe(401)
  await expect(page.getByTestId('access-page')).toContainText('from an earlier start of Lanes')
})

test('a kept token that went stale (Lanes restarted on the same port) lands on the access page and is forgotten', async ({
  page,
  web,
}) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  await page.evaluate(() => localStorage.setItem('lanes.token', 'token-of-an-earlier-start'))
  await page.reload()
  await expect(page).toHaveURL(web.origin + '/access')
  await expect(page.getByTestId('access-page')).toBeVisible()
  expect(await page.evaluate(() => localStorage.getItem('lanes.token'))).toBeNull()
  // The current link lets it in again.
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
})
