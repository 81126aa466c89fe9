import { expect, test } from '@playwright/test'
import { screenshots, sendTask, setSettings, startAppWithModel } from './ui-support'

// Issue 21 in a real browser: a compaction is a marker between turns whose summary opens in a dialog, the
// session header's meter says how full the window is, and Settings lists the project instructions in use.

test('a server-side compaction shows as a marker with its summary; the meter and the instruction files show', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'alpha\n', 'AGENTS.md': 'Use tabs for indentation.\n' },
    {
      strict: true,
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }], usage: { input_tokens: 150_000 } },
        {
          blocks: [
            { compaction: 'Summary: the user asked to read a.txt; it says alpha.' },
            { text: 'a.txt says alpha.' },
          ],
          usage: { input_tokens: 30_000 },
        },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Read a.txt')
    await expect(page.getByTestId('run-end')).toBeVisible({ timeout: 30_000 })
    const marker = page.getByTestId('compaction-row')
    await expect(marker).toHaveCount(1)
    await expect(marker).toHaveAttribute('data-mode', 'server')
    await expect(marker.getByTestId('compaction-headline')).toContainText(
      'The API compacted the conversation',
    )
    await expect(marker.getByTestId('compaction-tokens')).toContainText('150')
    await marker.getByTestId('compaction-open-summary').click()
    await expect(page.getByTestId('compaction-summary-text')).toHaveText(
      'Summary: the user asked to read a.txt; it says alpha.',
    )
    await expect(page.getByTestId('compaction-summary')).toContainText('a.txt')
    await page.getByTestId('compaction-summary').getByRole('button', { name: 'Close' }).click()
    await expect(page.getByTestId('timeline-compaction-mark')).toHaveCount(1)
    const meter = page.getByTestId('context-meter')
    await expect(meter).toBeVisible()
    // The default model (Sonnet 5.5) has a 1M-token window (shared/models.ts).
    await expect(meter).toHaveAttribute('data-window', '1000000')
    expect(Number(await meter.getAttribute('data-used'))).toBeLessThan(40_000)
    await screenshots(page, 'compaction-marker')

    await page.getByTestId('settings-open').click()
    const files = page.getByTestId('settings-instruction-file')
    await expect(files).toHaveCount(1)
    await expect(files.first()).toHaveAttribute('data-path', 'AGENTS.md')
    await expect(files.first()).toContainText('tokens')
  } finally {
    await stop()
  }
})

test('Lanes compacts itself for a model without server-side compaction, and the marker opens its summary', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'alpha\n'.repeat(500) },
    {
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }], usage: { input_tokens: 170_000 } },
        { blocks: [{ text: 'Lanes summary: a.txt was read; it repeats alpha.' }] },
        { blocks: [{ text: 'Done: a.txt repeats alpha.' }] },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await setSettings(page, { model: 'claude-haiku-4-5' })
    await sendTask(page, 'Read a.txt')
    await expect(page.getByTestId('run-end')).toBeVisible({ timeout: 30_000 })
    const marker = page.getByTestId('compaction-row')
    await expect(marker).toHaveAttribute('data-mode', 'client')
    await expect(marker.getByTestId('compaction-headline')).toContainText('Lanes compacted the conversation')
    // Haiku 4.5's window is 200k: the meter measures against it.
    await expect(page.getByTestId('context-meter')).toHaveAttribute('data-window', '200000')
    await marker.getByTestId('compaction-open-summary').click()
    await expect(page.getByTestId('compaction-summary-text')).toHaveText(
      'Lanes summary: a.txt was read; it repeats alpha.',
    )
  } finally {
    await stop()
  }
})
