import { expect, test } from '@playwright/test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

test('after a reload while paused for approval the review comes back and the run continues once approved', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    {},
    {
      turns: [
        {
          blocks: [
            { text: 'Creating the config.' },
            { tool: 'write_file', input: { path: 'config/app.json', content: '{\n  "port": 8080\n}\n' } },
          ],
          stop: 'tool_use',
        },
        { blocks: [{ text: 'The config is in place.' }], stop: 'end_turn' },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Add a config file')
    await expect(page.getByTestId('approval-panel')).toBeVisible({ timeout: 30_000 })

    await page.reload()
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible()
    await expect(panel.getByTestId('diff-view')).toContainText('"port": 8080')
    await expect(page.getByTestId('session-status-badge')).toHaveAttribute('data-status', 'paused')
    await screenshots(page, 'ui-reload-review')

    // Shift+A approves everything.
    await page.keyboard.press('Shift+A')
    await expect(panel).toBeHidden()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'config/app.json'), 'utf8')).toBe('{\n  "port": 8080\n}\n')
    await expect(page.getByTestId('session-item').first()).toHaveAttribute('data-status', 'finished')
  } finally {
    await stop()
  }
})
