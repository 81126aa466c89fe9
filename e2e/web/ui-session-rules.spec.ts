import { expect, test } from '@playwright/test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadEvents, screenshots, sendTask, startAppWithModel } from './ui-support'

/** Three writes in the first run (the first asks, the second is covered by the rule), one after the revocation. */
const scenario = {
  turns: [
    { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'a\n' } }], stop: 'tool_use' },
    { blocks: [{ tool: 'write_file', input: { path: 'b.txt', content: 'b\n' } }], stop: 'tool_use' },
    { blocks: [{ text: 'Both written.' }], stop: 'end_turn' },
    { blocks: [{ tool: 'write_file', input: { path: 'c.txt', content: 'c\n' } }], stop: 'tool_use' },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('"allow for the rest of this session": granted in the review, listed in the session settings, revoked there, then asked again', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel({ 'readme.md': '# hi\n' }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Write a and b')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    const item = panel.getByTestId('approval-item')
    await expect(item).toHaveCount(1)
    const forSession = item.getByTestId('approval-for-session')
    await expect(item).toContainText(
      'Allow for the rest of this session: Edits to files (except protected ones)',
    )
    await forSession.check()
    await screenshots(page, 'ui-session-rules-review')
    await item.getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    // The second write ran without a review.
    expect(await readFile(join(app.workspace, 'b.txt'), 'utf8')).toBe('b\n')
    const firstRun = await loadEvents(page)
    expect(firstRun.filter((e) => e.type === 'approval.requested')).toHaveLength(1)
    expect(firstRun.filter((e) => e.type === 'rule.granted')).toHaveLength(1)

    // The session's settings list the rule.
    await page.getByTestId('session-settings-open').click()
    const settings = page.getByTestId('session-settings')
    await expect(settings.getByTestId('session-rule')).toHaveCount(1)
    await expect(settings.getByTestId('session-rule')).toContainText('Edits to files (except protected ones)')
    await screenshots(page, 'ui-session-rules-settings')

    // Revoked there: the list empties and the log records it.
    await settings.getByTestId('session-rule-revoke').click()
    await expect(settings.getByTestId('session-rule')).toHaveCount(0)
    await expect(settings.getByTestId('session-rules-empty')).toBeVisible()
    expect((await loadEvents(page)).filter((e) => e.type === 'rule.revoked')).toHaveLength(1)

    // The next write asks again.
    await page.getByTestId('session-settings-open').click()
    await sendTask(page, 'Now write c')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await expect(panel.getByTestId('approval-item')).toContainText('c.txt')
    await panel.getByTestId('approval-item').getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end').last()).toHaveAttribute('data-status', 'finished', {
      timeout: 30_000,
    })
    expect(await readFile(join(app.workspace, 'c.txt'), 'utf8')).toBe('c\n')
    expect((await loadEvents(page)).filter((e) => e.type === 'approval.requested')).toHaveLength(2)
  } finally {
    await stop()
  }
})
