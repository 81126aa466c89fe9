import { expect, test } from '@playwright/test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

// Two edits in one turn, the second streamed slowly: the review opens on the first while the model still writes
// the second.
const readFirst = {
  blocks: [{ tool: 'read_file', input: { path: 'notes.txt' } }],
  stop: 'tool_use',
}

const scenario = {
  turns: [
    readFirst,
    {
      blocks: [
        { text: 'Changing the greeting, then the farewell.' },
        { tool: 'edit_file', input: { path: 'notes.txt', old_string: 'hello', new_string: 'hello, world' } },
        {
          tool: 'edit_file',
          input: {
            path: 'notes.txt',
            old_string: 'bye',
            new_string: `goodbye ${'and thank you for all the fish '.repeat(6)}`.trim(),
          },
        },
      ],
      stop: 'tool_use',
      tokensPerSecond: 25,
    },
    { blocks: [{ text: 'Both changes are decided.' }], stop: 'end_turn' },
  ],
}

test('the review keeps a note typed while calls stream in and across a reload, leaves the focus where the user is, warns of skips', async ({
  page,
}) => {
  const { app, model, stop } = await startAppWithModel({ 'notes.txt': 'hello\nbye\n' }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Tidy the greeting and the farewell')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    const items = panel.getByTestId('approval-item')
    // Opened on the first call while the second is still being written.
    await expect(items).toHaveCount(1)
    await expect(page.getByTestId('review-announcer')).toContainText('Review needed')
    // The review does not take the focus from the composer the task was typed in (a letter typed on must stay
    // text); it takes it only from nothing, as after a reload.
    await expect(page.getByTestId('composer-input')).toBeFocused()

    const note = items.nth(0).getByTestId('approval-note')
    await note.fill('keep the comma')
    // The second call arrives: same review, the note is still there.
    await expect(items).toHaveCount(2, { timeout: 30_000 })
    await expect(items.nth(0).getByTestId('approval-note')).toHaveValue('keep the comma')
    // Approving the first may skip the second if it fails: the review says so.
    await expect(items.nth(0).getByTestId('sibling-skip-note')).toContainText("'Edit notes.txt'")

    // A staged decision and a note survive a reload.
    await items.nth(0).getByTestId('approval-approve').click()
    await items.nth(1).getByTestId('approval-note').fill('shorter please')
    await page.reload()
    await expect(items).toHaveCount(2)
    await expect(panel).toBeFocused()
    await expect(items.nth(0)).toHaveClass(/staged approved/)
    await expect(items.nth(0)).toContainText('keep the comma')
    await expect(items.nth(1).getByTestId('approval-note')).toHaveValue('shorter please')
    await screenshots(page, 'ui-review-kept')

    // Esc leaves the note field; R then rejects the second call from the keyboard, which sends both.
    await items.nth(1).getByTestId('approval-note').focus()
    await page.keyboard.press('Escape')
    await expect(items.nth(1).getByTestId('approval-note')).not.toBeFocused()
    await page.keyboard.press('r')
    await expect(panel).toBeHidden()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'notes.txt'), 'utf8')).toBe('hello, world\nbye\n')
    // The rejection went to the model with the note typed before the reload.
    const sent = JSON.stringify(await model.requests())
    expect(sent.includes('shorter please')).toBe(true)
  } finally {
    await stop()
  }
})

test('A never acts from the composer, even empty; after Esc it approves; and the Settings dialog keeps the focus inside', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'notes.txt': 'hello\n' },
    {
      turns: [
        readFirst,
        {
          blocks: [
            { tool: 'edit_file', input: { path: 'notes.txt', old_string: 'hello', new_string: 'hi' } },
          ],
          stop: 'tool_use',
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Shorten the greeting')
    await expect(page.getByTestId('approval-panel')).toBeVisible({ timeout: 30_000 })
    // In the composer, even empty, a letter is text: it never approves. Esc leaves it; then A approves.
    await page.getByTestId('composer-input').focus()
    await page.keyboard.press('a')
    await expect(page.getByTestId('composer-input')).toHaveValue('a')
    await expect(page.getByTestId('approval-item')).not.toHaveClass(/staged/)
    await page.keyboard.press('Backspace')
    await page.keyboard.press('Escape')
    await page.keyboard.press('a')
    await expect(page.getByTestId('approval-panel')).toBeHidden()
    await expect(page.getByTestId('composer-input')).toHaveValue('')
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'notes.txt'), 'utf8')).toBe('hi\n')

    await page.getByTestId('settings-open').click()
    const dialog = page.getByTestId('settings-dialog')
    await expect(dialog).toBeVisible()
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press(i % 3 === 0 ? 'Shift+Tab' : 'Tab')
      expect(await dialog.evaluate((d) => d.contains(document.activeElement))).toBe(true)
    }
    await page.keyboard.press('Escape')
    await expect(dialog).toBeHidden()
  } finally {
    await stop()
  }
})
