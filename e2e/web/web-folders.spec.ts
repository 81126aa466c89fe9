import { expect, test } from '@playwright/test'
import { mkdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { startWebApp } from '../fixtures'
import { screenshots } from './ui-support'

// Opening a folder in browser mode needs no typed path: started without a folder, the page shows the
// folder browser (home, recent folders, breadcrumbs) and the user clicks their way to the project.

test('the folder browser opens a project without a typed path, and remembers it', async ({ page }) => {
  const { app, stop } = await startWebApp(
    { 'README.md': '# Demo\n', 'src/index.ts': 'export const x = 1\n' },
    {},
    // Home is the test's temporary folder, so the walk below does not depend on this machine.
    { openWorkspace: false, homeIsBase: true },
  )
  const home = dirname(app.workspace)
  await mkdir(join(home, 'another-project', 'lib'), { recursive: true })
  try {
    await page.goto(app.url)
    const browser = page.getByTestId('folder-browser')
    await expect(browser).toBeVisible()
    await expect(page.getByText('No folder open')).toBeVisible()
    await browser.getByTestId('folder-home').click()
    await expect(browser.getByTestId('folder-current')).toHaveAttribute('data-path', home)
    await screenshots(page, 'web-folder-browser')

    // Home itself is refused as a project, saying why; the browser stays open to pick one inside it.
    await browser.getByTestId('folder-open-current').click()
    await expect(page.getByRole('alert')).toContainText('search and read everything in it')
    await expect(browser).toBeVisible()
    await expect(page.getByText('No folder open')).toBeVisible()

    await browser.getByTestId('folder-entry').filter({ hasText: 'demo-project' }).click()
    await expect(browser.getByTestId('folder-current')).toHaveAttribute('data-path', app.workspace)
    await expect(browser.getByTestId('folder-entry')).toHaveText(['src'])
    await expect(browser.getByTestId('folder-crumb').last()).toHaveText('demo-project')
    await browser.getByTestId('folder-open-current').click()
    await expect(browser).toBeHidden()
    await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')

    // Another folder: the browser starts beside the open one; breadcrumbs lead back up.
    await page.getByTestId('workspace-open').click()
    await expect(browser.getByTestId('folder-current')).toHaveAttribute('data-path', home)
    await expect(browser.getByTestId('folder-recent')).toHaveText(['demo-project'])
    await browser.getByTestId('folder-entry').filter({ hasText: 'another-project' }).click()
    await browser.getByTestId('folder-entry').filter({ hasText: 'lib' }).click()
    await browser.getByTestId('folder-crumb').filter({ hasText: 'another-project' }).click()
    await expect(browser.getByTestId('folder-current')).toHaveAttribute(
      'data-path',
      join(home, 'another-project'),
    )
    await browser.getByTestId('folder-open-current').click()
    await expect(page.getByTestId('workspace-name')).toHaveText('another-project')

    // Recent folders, newest first, take the user straight back.
    await page.getByTestId('workspace-open').click()
    await expect(browser.getByTestId('folder-recent')).toHaveText(['another-project', 'demo-project'])
    await browser.getByTestId('folder-recent').filter({ hasText: 'demo-project' }).click()
    await browser.getByTestId('folder-open-current').click()
    await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')

    // Escape leaves the browser without changing the folder.
    await page.getByTestId('workspace-open').click()
    await page.keyboard.press('Escape')
    await expect(browser).toBeHidden()
    await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
  } finally {
    await stop()
  }
})
