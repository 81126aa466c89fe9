import { expect, test } from '@playwright/test'
import { execFileSync } from 'node:child_process'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

// A duration no other process on the machine uses, so the check below finds only ours.
const SLEEP = '47.318'

function sleepRunning(): boolean {
  const ps = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
  return ps.split('\n').some((line) => line.trim() === `sleep ${SLEEP}`)
}

test('stop during a long command ends it and the session shows the run stopped', async ({ page }) => {
  const { app, stop } = await startAppWithModel(
    {},
    {
      turns: [
        {
          blocks: [
            { text: 'Waiting for the server.' },
            {
              tool: 'bash',
              input: { command: `sleep ${SLEEP}`, description: 'Wait for the server to start' },
            },
          ],
          stop: 'tool_use',
          // A model slow to answer: the working row counts the wait.
          firstTokenMs: 4500,
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Start the server and wait')
    await expect(page.getByTestId('wait-notice')).toHaveText(/^Waiting for Claude… [34] s$/, {
      timeout: 15_000,
    })
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await expect(panel.getByTestId('bash-preview')).toContainText(`sleep ${SLEEP}`)
    await expect(panel.getByTestId('bash-preview')).toContainText('Wait for the server to start')
    await expect(panel.getByTestId('bash-preview')).toContainText(app.workspace)
    await panel.getByTestId('approval-approve').click()

    const bar = page.locator('[data-testid=tool-bar][data-status=running]')
    await expect(bar).toHaveCount(1, { timeout: 15_000 })
    await expect.poll(sleepRunning, { timeout: 10_000 }).toBe(true)
    // A long command: the working row names it and counts up the seconds since it started.
    const notice = page.getByTestId('wait-notice')
    await expect(notice).toHaveText(/^Running .+… 3 s$/, { timeout: 10_000 })
    await expect(notice).toHaveText(/^Running .+… 4 s$/)
    // The running bar grows with the clock (at a fixed zoom: "fit" rescales as the run gets longer).
    await page.getByRole('button', { name: 'Zoom in' }).click()
    await page.waitForTimeout(100)
    const w1 = (await bar.boundingBox())!.width
    await page.waitForTimeout(600)
    expect((await bar.boundingBox())!.width).toBeGreaterThan(w1)
    await screenshots(page, 'ui-stop-running')

    await page.getByTestId('run-stop').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'stopped', { timeout: 15_000 })
    await expect(page.locator('[data-testid=tool-bar][data-status=cancelled]')).toHaveCount(1)
    await expect.poll(sleepRunning, { timeout: 10_000 }).toBe(false)
    await expect(page.getByTestId('session-item').first()).toHaveAttribute('data-status', 'paused')
    await expect(page.getByTestId('session-continue')).toBeVisible()
    await expect(page.getByTestId('composer-send')).toBeVisible()
    await screenshots(page, 'ui-stop-stopped')
  } finally {
    await stop()
  }
})
