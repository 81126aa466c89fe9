import { expect, test } from '@playwright/test'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { changed, original, scenario } from './rewind-scenario'
import { contrastViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// Issue 23, item 10: an undo names the other files its turn touched; with "keep it as it is now" the preview
// shows nothing going away from the user's file; the result says truthfully what it did to each file.

for (const size of [
  { width: 800, height: 600 },
  { width: 1440, height: 900 },
]) {
  test(`rewind wording is truthful (${size.width}x${size.height})`, async ({ page }) => {
    await page.setViewportSize(size)
    const { app, stop } = await startAppWithModel({ 'f.txt': original, 'g.txt': 'bye\n' }, scenario)
    try {
      await page.goto(app.url)
      await sendTask(page, 'Change the lines')
      const panel = page.getByTestId('approval-panel')
      await expect(panel.getByTestId('approval-item')).toHaveCount(2, { timeout: 30_000 })
      await panel.getByTestId('approval-approve-all').click()
      await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', {
        timeout: 30_000,
      })
      const dialog = page.getByTestId('rewind-dialog')

      // Undo the edit of g.txt: the write of f.txt in the same turn stays, and the dialog says to check it.
      const gCard = page.locator('[data-testid=tool-card]', { hasText: 'g.txt' }).last()
      await gCard.scrollIntoViewIfNeeded()
      await gCard.getByTestId('undo-button').click()
      const touches = dialog.getByTestId('rewind-touches')
      await expect(touches).toContainText('Check these afterwards')
      await expect(touches.getByTestId('rewind-touch')).toHaveCount(1)
      await expect(touches.getByTestId('rewind-touch')).toHaveAttribute('data-path', 'f.txt')
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        expect(await contrastViolations(page), scheme).toEqual([])
      }
      await screenshots(page, `ui-undo-touches-${size.width}`)
      await dialog.getByTestId('rewind-cancel').click()

      // The user rewrites f.txt; a rewind to the turn keeps it by default and shows no removal of their line.
      await writeFile(join(app.workspace, 'f.txt'), 'the user rewrote it\n')
      await page.getByTestId('rewind-to-here').last().click()
      const fItem = dialog.locator('[data-testid=rewind-file][data-path="f.txt"]')
      await expect(fItem.getByTestId('conflict-keep')).toBeChecked()
      await expect(fItem.getByTestId('rewind-file-kept')).toHaveText('Nothing changes in this file.')
      await expect(fItem.locator('.diff-line.del')).toHaveCount(0)
      // Choosing the old version shows the diff again; back to keeping it hides it.
      await fItem.getByTestId('conflict-rewind').check()
      await expect(fItem.locator('.diff-line.del').first()).toContainText('the user rewrote it')
      await fItem.getByTestId('conflict-keep').check()
      await expect(fItem.locator('.diff-line')).toHaveCount(0)
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        expect(await contrastViolations(page), scheme).toEqual([])
      }
      await screenshots(page, `ui-rewind-keep-${size.width}`)

      await dialog.getByTestId('rewind-apply').click()
      const done = dialog.getByTestId('rewind-done')
      await expect(done).toContainText('1 file was put back. 1 file was left as it is.')
      await expect(done.getByTestId('rewind-changed')).toHaveAttribute('data-path', 'g.txt')
      await expect(done.getByTestId('rewind-changed')).toContainText('g.txt: put back as it was')
      await expect(done.getByTestId('rewind-skipped')).toHaveAttribute('data-path', 'f.txt')
      await expect(done.getByTestId('rewind-skipped')).toContainText('left as it is')
      expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe('the user rewrote it\n')
      expect(await readFile(join(app.workspace, 'g.txt'), 'utf8')).toBe('bye\n')
      expect(changed).not.toBe(original)
      await screenshots(page, `ui-rewind-done-${size.width}`)
    } finally {
      await stop()
    }
  })
}
