import { expect, test } from '@playwright/test'
import { startWebApp } from '../fixtures'
import { loadEvents, screenshots, sendTask } from './ui-support'

// No key and no base URL: the built-in demo model answers (empty values count as unset).
const noModel = { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' }

test('the demo model is announced plainly and a demo run goes through review to the end', async ({
  page,
}) => {
  const { app, stop } = await startWebApp(
    { 'README.md': '# Demo\n', 'src/index.ts': 'export const x = 1\n' },
    noModel,
  )
  try {
    await page.goto(app.url)
    const banner = page.getByTestId('demo-banner')
    await expect(banner).toContainText('demo model')
    await expect(banner).toContainText('ANTHROPIC_API_KEY')
    await sendTask(page, 'Show me around this project')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await screenshots(page, 'ui-demo-review')
    await panel.getByTestId('approval-approve-all').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    await expect(page.getByTestId('session-item').first()).toHaveAttribute('data-status', 'finished')
    // It answered the task it was given, and says how to switch to Claude here (browser mode).
    expect(JSON.stringify(await loadEvents(page))).toContain('You asked: “Show me around this project”')
    await expect(page.getByTestId('assistant-text').filter({ hasText: 'lanes web' })).toHaveCount(1)
    await screenshots(page, 'ui-demo-finished')

    // A follow-up gets its own demo run, not "no more turns".
    await sendTask(page, 'Now look at the index')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-approve-all').click()
    // (The transcript is virtualized: the run's end is checked through the session status.)
    await expect(page.getByTestId('session-item').first()).toHaveAttribute('data-status', 'finished', {
      timeout: 30_000,
    })
    const events = JSON.stringify(await loadEvents(page))
    expect(events).toContain('You asked: “Now look at the index”')
    expect(events).not.toContain('no more turns')
  } finally {
    await stop()
  }
})

test('settings show the key status and save the model and agent options', async ({ page }) => {
  const { app, stop } = await startWebApp({}, noModel)
  try {
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const dialog = page.getByTestId('settings-dialog')
    await expect(dialog).toBeVisible()
    await expect(dialog.getByTestId('settings-key-status')).toContainText('No key set')
    // Browser mode stores a key too, and says where (no keychain here: a file only the user can read).
    await expect(dialog.getByTestId('settings-key-storage')).toContainText('a file only you can read')
    await expect(dialog.getByTestId('settings-api-key')).toHaveCount(1)
    await screenshots(page, 'ui-settings')

    await dialog.getByTestId('settings-model').fill('claude-opus-4-1')
    await dialog.getByTestId('settings-scheduler-batch').check()
    await dialog.getByTestId('settings-keep-going').check()
    await dialog.getByTestId('settings-auto-approve-edits').check()
    await dialog.getByTestId('settings-bash-timeout').fill('60')
    await dialog.getByTestId('settings-save').click()
    await expect(dialog.getByRole('status')).toHaveText('Saved')

    const saved = await page.evaluate(() => window.api.invoke('settings:get'))
    expect(saved).toMatchObject({
      ok: true,
      value: {
        model: 'claude-opus-4-1',
        scheduler: 'batch',
        siblingSkip: false,
        autoApproveEdits: true,
        bashTimeoutSec: 60,
      },
    })

    // A bad value is explained, not sent.
    await dialog.getByTestId('settings-bash-timeout').fill('9000')
    await dialog.getByTestId('settings-save').click()
    await expect(dialog.getByTestId('settings-problem')).toContainText('1 to 600')

    // Closing with the refused value asks first; closing without saving keeps what was saved before.
    await page.keyboard.press('Escape')
    await expect(dialog.getByTestId('settings-leave-unsaved')).toContainText('the command timeout')
    await dialog.getByTestId('settings-discard').click()
    await expect(dialog).toBeHidden()
    await page.getByTestId('settings-open').click()
    await expect(page.getByTestId('settings-model')).toHaveValue('claude-opus-4-1')
    await expect(page.getByTestId('settings-keep-going')).toBeChecked()
  } finally {
    await stop()
  }
})
