import { expect, test } from '@playwright/test'
import { dirname } from 'node:path'
import { startWebApp } from '../fixtures'
import { contrastViolations, screenshots } from './ui-support'

// Issue 23, item 9: the folder picker. `~` works, an error goes once the user browses on, home and the root are
// never opened (a plain warning says why; the default button is not the primary action there), the path field is whole.

for (const size of [
  { width: 800, height: 600 },
  { width: 1440, height: 900 },
]) {
  test(`the folder picker: ~, errors that clear, home and / refused with a plain warning (${size.width}x${size.height})`, async ({
    page,
  }) => {
    await page.setViewportSize(size)
    const { app, stop } = await startWebApp(
      { 'README.md': '# Demo\n' },
      {},
      { openWorkspace: false, homeIsBase: true },
    )
    const home = dirname(app.workspace)
    try {
      await page.goto(app.url)
      const browser = page.getByTestId('folder-browser')
      await expect(browser.getByTestId('folder-current')).toHaveAttribute('data-path', home)
      // At home the default button is not the primary action, and it does not open home without asking.
      await expect(browser.getByTestId('folder-pick-hint')).toBeVisible()
      await expect(browser.getByTestId('folder-open-current')).not.toHaveClass(/primary/)
      await browser.getByTestId('folder-open-current').click()
      const broad = browser.getByTestId('folder-broad')
      await expect(broad).toContainText('your whole home folder')
      await expect(page.getByText('No folder open')).toBeVisible()
      await screenshots(page, `ui-folder-home-warning-${size.width}x${size.height}`)
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        expect(await contrastViolations(page)).toEqual([])
      }
      await browser.getByTestId('folder-broad-back').click()
      await expect(broad).toBeHidden()

      // The path field is whole: nothing covers its top or bottom edge.
      const field = browser.getByTestId('workspace-path-input')
      await field.scrollIntoViewIfNeeded()
      expect(
        await field.evaluate((el) => {
          const r = el.getBoundingClientRect()
          return [
            [r.left + 8, r.top + 1],
            [r.left + 8, r.bottom - 1],
          ].every(([x, y]) => document.elementFromPoint(x!, y!) === el)
        }),
      ).toBe(true)

      // A path that does not exist says so; browsing on clears it.
      await field.fill('/no/such/folder/here')
      await field.press('Enter')
      const problem = browser.getByTestId('folder-problem')
      await expect(problem).toContainText('does not exist')
      await browser.getByTestId('folder-entry').filter({ hasText: 'demo-project' }).click()
      await expect(problem).toBeHidden()

      // ~ is home (typed, it asks as home does); ~/demo-project opens the project.
      await field.fill('~')
      await field.press('Enter')
      await expect(broad).toContainText('your whole home folder')
      await expect(browser.getByTestId('folder-current')).toHaveAttribute('data-path', home)
      await browser.getByTestId('folder-broad-back').click()
      // The root asks too, saying it is the whole computer.
      await field.fill('/')
      await field.press('Enter')
      await expect(broad).toContainText('the whole computer')
      await browser.getByTestId('folder-broad-back').click()
      await field.fill('~/demo-project')
      await field.press('Enter')
      await expect(browser).toBeHidden()
      await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')

      // Home is never opened as a project: the warning offers no way to, and the app refuses it anyway.
      await page.getByTestId('workspace-open').click()
      await browser.getByTestId('folder-home').click()
      await browser.getByTestId('folder-open-current').click()
      await expect(broad).toBeVisible()
      await expect(broad.getByRole('button')).toHaveText(['Choose a folder inside'])
      await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
    } finally {
      await stop()
    }
  })
}
