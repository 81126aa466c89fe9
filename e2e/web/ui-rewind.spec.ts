import { expect, test } from '@playwright/test'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { changed, farewell, lines, original, scenario } from './rewind-scenario'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

// Per-hunk review and undo (issue 14), in a real browser against the app in browser mode and the scripted
// model, checking the files on disk. What an undo or rewind leaves in view afterwards: ui-rewind-history.

test('per-hunk review: choices outlive a streamed call and a reload; only the ticked hunks (and the edited one) are written', async ({
  page,
}) => {
  const { app, model, stop } = await startAppWithModel({ 'f.txt': original, 'g.txt': 'bye\n' }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the lines')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    const items = panel.getByTestId('approval-item')
    // Opened on the write while the edit after it is still being written.
    await expect(items).toHaveCount(1)
    const review = items.nth(0).getByTestId('hunk-review')
    const hunks = review.getByTestId('hunk-item')
    await expect(hunks).toHaveCount(3)
    await expect(review).toContainText('3 of 3 will be applied')

    // Leave hunk 2 out, by keyboard: focus its checkbox and press Space; then say why.
    await hunks.nth(1).getByTestId('hunk-apply').focus()
    await page.keyboard.press('Space')
    await expect(hunks.nth(1).getByTestId('hunk-apply')).not.toBeChecked()
    await hunks.nth(1).getByTestId('hunk-note').fill('line 15 stays')
    await expect(review).toContainText('2 of 3 will be applied')
    // The second call arrives: the hunk left out and its note are still there.
    await expect(items).toHaveCount(2, { timeout: 30_000 })
    await expect(hunks.nth(1).getByTestId('hunk-apply')).not.toBeChecked()
    await expect(hunks.nth(1).getByTestId('hunk-note')).toHaveValue('line 15 stays')

    // Correct hunk 3 by hand.
    await hunks.nth(2).getByTestId('hunk-edit').click()
    const text = hunks.nth(2).getByTestId('hunk-text')
    await text.fill((await text.inputValue()).replace('CHANGED 29', 'fixed 29'))

    // Every choice survives a reload.
    await page.reload()
    await expect(items).toHaveCount(2)
    await expect(review).toContainText('2 of 3 will be applied')
    await expect(hunks.nth(1).getByTestId('hunk-note')).toHaveValue('line 15 stays')
    await expect(hunks.nth(2).getByTestId('hunk-text')).toHaveValue(/fixed 29/)
    await screenshots(page, 'ui-hunk-review')

    await panel.getByTestId('approval-approve-all').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })

    const expected = lines(30)
    expected[1] = 'CHANGED 2'
    expected[28] = 'fixed 29'
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(expected.join('\n') + '\n')
    expect(await readFile(join(app.workspace, 'g.txt'), 'utf8')).toBe(`${farewell}\n`)
    const last = JSON.stringify((await model.requests()).at(-1))
    expect(last).toContain('2 of 3 hunks were applied')
    expect(last).toContain('line 15 stays')
  } finally {
    await stop()
  }
})

test('undo: a finished write goes back after its diff is shown and confirmed, and is struck through', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel({ 'f.txt': original }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the lines')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(changed)

    const card = page.locator('[data-testid=tool-card]', { hasText: 'f.txt' }).last()
    await card.getByTestId('undo-button').click()
    const dialog = page.getByTestId('rewind-dialog')
    await expect(dialog).toBeVisible()
    // The diff goes from the file now (CHANGED) back to what it was.
    await expect(dialog.getByTestId('rewind-file')).toHaveCount(1)
    await expect(dialog.locator('.diff-line.del').first()).toContainText('CHANGED 2')
    await expect(dialog.locator('.diff-line.add').first()).toContainText('line 2')
    await expect(dialog).toContainText('where it was captured')
    // Nothing happens before the confirmation.
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(changed)
    await screenshots(page, 'ui-undo-dialog')

    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-done')).toContainText('1 file was put back')
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(original)
    await dialog.getByTestId('rewind-cancel').click()

    const writeCard = page.locator('[data-testid=tool-card][data-rewound]')
    await expect(writeCard).toHaveCount(1)
    await expect(writeCard.getByTestId('rewound-note')).toBeVisible()
    await expect(writeCard.getByTestId('undo-button')).toHaveCount(0)
    await expect(page.locator('[data-testid=tool-bar].rewound')).toHaveCount(1)
  } finally {
    await stop()
  }
})

test('a file changed since is shown in three versions and kept unless chosen', async ({ page }) => {
  const { app, stop } = await startAppWithModel({ 'f.txt': original }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the lines')
    await page.getByTestId('approval-panel').getByTestId('approval-approve').click({ timeout: 30_000 })
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    await writeFile(join(app.workspace, 'f.txt'), 'the user rewrote it\n')

    await page.getByTestId('rewind-to-here').last().click()
    const dialog = page.getByTestId('rewind-dialog')
    await expect(dialog.getByTestId('rewind-conflict')).toBeVisible()
    await expect(dialog.getByTestId('rewind-versions')).toContainText('the user rewrote it')
    await expect(dialog.getByTestId('conflict-keep')).toBeChecked()
    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-skipped')).toContainText('f.txt')
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe('the user rewrote it\n')
  } finally {
    await stop()
  }
})
