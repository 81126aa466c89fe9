import { expect, test } from '../fixtures'
import { screenshots } from './ui-support'

// An address without its token (a bookmark, a new tab, a link from an earlier start) gets a page that says
// how to get in, not a bare "Unauthorized".

test('a bookmarked address without its token explains how to get in', async ({ page, web }) => {
  await page.goto(web.origin + '/')
  await expect(page).toHaveURL(web.origin + '/access')
  const access = page.getByTestId('access-page')
  await expect(access.getByRole('heading')).toHaveText('Open Lanes from the link in your terminal')
  await expect(access).toContainText('lanes web')
  await expect(access).toContainText('npm run web')
  await screenshots(page, 'web-access')
})

test('a link from an earlier start says its key no longer works', async ({ page, web }) => {
  const response = await page.goto(web.origin + '/?token=from-last-week')
  expect(response?.status()).toBe(401)
  await expect(page.getByTestId('access-page')).toContainText('from an earlier start of Lanes')
})

test('the app in one tab does not let a new tab in without the link', async ({ page, browser, web }) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  // A new browser context has none of the first tab's session storage, as a bookmark opened later.
  const other = await browser.newContext()
  const tab = await other.newPage()
  await tab.goto(web.origin + '/')
  await expect(tab.getByTestId('access-page')).toBeVisible()
  await other.close()
})

test('a tab whose token went stale (Lanes restarted on the same port) lands on the same page', async ({
  page,
  web,
}) => {
  await page.goto(web.url)
  await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  await page.evaluate(() => sessionStorage.setItem('lanes.token', 'token-of-an-earlier-start'))
  await page.reload()
  await expect(page).toHaveURL(web.origin + '/access')
  await expect(page.getByTestId('access-page')).toBeVisible()
})
