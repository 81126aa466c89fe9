import { expect, test } from '@playwright/test'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

// Issue 11 in a real browser: the model's thinking, its narration between calls, a retry shown live, and the
// plain explanation of a run that ended refused or asked to wait.

test('thinking shows collapsed, hidden thinking says so, notes between calls read as narration, a refusal explains itself', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'README.md': '# Demo\n' },
    {
      strict: true,
      turns: [
        {
          blocks: [
            { thinking: '', signature: 'sig-hidden' },
            { tool: 'read_file', input: { path: 'README.md' } },
            { thinking: 'Reading the README before I answer.', signature: 'sig-note' },
          ],
        },
        {
          blocks: [
            { thinking: 'The README is a one-line title.', signature: 'sig-plan' },
            { text: 'Starting on it.' },
          ],
          stop: 'refusal',
          stopDetails: {
            category: 'cyber',
            explanation: 'This request was declined because it could enable cyber harm.',
          },
        },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Summarize the README')
    const end = page.getByTestId('run-end')
    await expect(end).toBeVisible({ timeout: 30_000 })
    await expect(page.getByTestId('narration')).toHaveText('Reading the README before I answer.')
    const thinking = page.getByTestId('thinking')
    await expect(thinking).toHaveCount(2)
    await expect(thinking.first().getByTestId('thinking-hidden')).toBeHidden()
    await thinking.first().locator('summary').click()
    await expect(thinking.first().getByTestId('thinking-hidden')).toHaveText('Hidden by the model.')
    await thinking.nth(1).locator('summary').click()
    await expect(thinking.nth(1)).toContainText('The README is a one-line title.')
    await expect(page.getByTestId('run-end-explanation')).toContainText(
      'This request was declined because it could enable cyber harm.',
    )
    await expect(page.getByTestId('run-end-explanation')).toContainText('Start a new task')
    await screenshots(page, 'model-notes-thinking')
  } finally {
    await stop()
  }
})

test('a retry shows live ("Claude is busy, retrying in N s, 2 of 6"), and a long wait ends with the time to try again', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'alpha\n' },
    {
      turns: [
        {
          blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }],
          http: { status: 529, retryAfter: 3, times: 1 },
        },
        { blocks: [{ text: 'later' }], http: { status: 429, retryAfter: 3600 } },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Read a.txt')
    const notice = page.getByTestId('retry-notice')
    await expect(notice).toBeVisible({ timeout: 30_000 })
    await expect(notice).toContainText(/Claude is busy, retrying in \d s, 2 of 6/)
    await screenshots(page, 'model-notes-retry')
    await expect(notice).toBeHidden({ timeout: 30_000 })
    const end = page.getByTestId('run-end')
    await expect(end).toHaveAttribute('data-status', 'failed', { timeout: 30_000 })
    await expect(page.getByTestId('run-end-explanation')).toContainText(/Try again after \d\d:\d\d/)
  } finally {
    await stop()
  }
})
