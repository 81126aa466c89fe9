import { expect, test, type Page } from '@playwright/test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contrastViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// Issue 23, item 1: typing a note must never approve anything. Keyboard only, in a real browser against the app
// in browser mode and the scripted model: move between the parts of a change, edit one, Esc, go to the approval
// note and type. Focus never moves by itself, and the review's letters never act while a field has the focus.

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`)
const original = lines(30).join('\n') + '\n'
const changed = original
  .replace('line 2\n', 'CHANGED 2\n')
  .replace('line 15\n', 'CHANGED 15\n')
  .replace('line 29\n', 'CHANGED 29\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }], stop: 'tool_use' },
    { blocks: [{ tool: 'write_file', input: { path: 'f.txt', content: changed } }], stop: 'tool_use' },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

/** Tab forward (keyboard only) until `testId` inside the review has the focus. */
async function tabTo(page: Page, testId: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    if (await page.evaluate((id) => document.activeElement?.getAttribute('data-testid') === id, testId))
      return
    await page.keyboard.press('Tab')
  }
  throw new Error(`Tab never reached ${testId}`)
}

const focusedTestId = (page: Page) =>
  page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName)

for (const size of [
  { width: 800, height: 600 },
  { width: 1440, height: 900 },
]) {
  test(`typing a note after editing a part never approves, and focus stays in the note (${size.width}x${size.height})`, async ({
    page,
  }) => {
    await page.setViewportSize(size)
    const { app, model, stop } = await startAppWithModel({ 'f.txt': original }, scenario)
    try {
      await page.goto(app.url)
      await sendTask(page, 'Change the lines')
      const panel = page.getByTestId('approval-panel')
      await expect(panel).toBeVisible({ timeout: 30_000 })
      // The review opened while the composer had the focus: it stays there (nothing moves by itself) and a
      // letter typed there is text, not a review key.
      await expect(page.getByTestId('composer-input')).toBeFocused()
      await page.keyboard.type('a')
      await expect(page.getByTestId('composer-input')).toHaveValue('a')
      await expect(panel.getByTestId('approval-item')).not.toHaveClass(/staged/)
      await page.keyboard.press('Backspace')
      // Esc leaves the field for the review.
      await page.keyboard.press('Escape')
      await expect(panel).toBeFocused()

      const parts = panel.getByTestId('hunk-item')
      const box = (i: number) => parts.nth(i).getByTestId('hunk-apply')
      await page.keyboard.press('h')
      await expect(box(0)).toBeFocused()
      await page.keyboard.press('j')
      await page.keyboard.press('j')
      await expect(box(2)).toBeFocused()
      await page.keyboard.press('e')
      const text = parts.nth(2).getByTestId('hunk-text')
      await expect(text).toBeFocused()
      await page.keyboard.press('Control+End')
      await page.keyboard.type(' (mine)')
      await page.keyboard.press('Escape')
      await expect(box(2)).toBeFocused()

      // To the note by Tab alone, then type: every letter lands in the note, focus never leaves it.
      await tabTo(page, 'approval-note')
      const note = panel.getByTestId('approval-note')
      for (const ch of 'Take care with the last part, and keep line 30 as it is') {
        await page.keyboard.type(ch)
        expect(await focusedTestId(page)).toBe('approval-note')
      }
      await expect(note).toHaveValue('Take care with the last part, and keep line 30 as it is')
      await expect(panel.getByTestId('approval-item')).not.toHaveClass(/staged/)
      // Review keys with Shift or Alt in the note are text or nothing too.
      await page.keyboard.press('Shift+A')
      await page.keyboard.press('Alt+a')
      await page.keyboard.press('Shift+R')
      await expect(panel).toBeVisible()
      await expect(panel.getByTestId('approval-item')).not.toHaveClass(/staged/)
      expect(await focusedTestId(page)).toBe('approval-note')
      // Shift+A and Shift+R were capitals typed into the note, as in any text field.
      await expect(note).toHaveValue('Take care with the last part, and keep line 30 as it isAR')
      await page.keyboard.press('Backspace')
      await page.keyboard.press('Backspace')

      // Leaving the note with Esc and pressing A asks first: the note may not be finished.
      await page.keyboard.press('Escape')
      await expect(panel).toBeFocused()
      await page.keyboard.press('a')
      const confirm = panel.getByTestId('approval-confirm')
      await expect(confirm).toBeVisible()
      await expect(confirm).toContainText('Take care with the last part')
      await screenshots(page, `ui-typing-confirm-${size.width}x${size.height}`)
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        expect(await contrastViolations(page)).toEqual([])
      }
      // A second A does not get past it; Esc goes back to the note, with what was typed.
      await page.keyboard.press('a')
      await expect(confirm).toBeVisible()
      await page.keyboard.press('Escape')
      await expect(confirm).toBeHidden()
      await expect(note).toBeFocused()
      await page.keyboard.type('.')
      await page.keyboard.press('Escape')
      await page.keyboard.press('a')
      await expect(confirm).toBeVisible()
      // Enter on the confirmation approves, with the whole note.
      await page.keyboard.press('Enter')
      await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', {
        timeout: 30_000,
      })
      const written = await readFile(join(app.workspace, 'f.txt'), 'utf8')
      expect(written).toContain('CHANGED 29\nline 30 (mine)\n')
      const last = JSON.stringify((await model.requests()).at(-1))
      expect(last).toContain('keep line 30 as it is.')
    } finally {
      await stop()
    }
  })
}

test('no review key acts from any editable element: a select, a contenteditable, the composer', async ({
  page,
}) => {
  await page.setViewportSize({ width: 800, height: 600 })
  const { app, stop } = await startAppWithModel({ 'f.txt': original }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the lines')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    // Editable elements the app may grow anywhere: none lets A, R or H through.
    await page.evaluate(() => {
      const select = document.createElement('select')
      select.dataset.testid = 'probe-select'
      select.innerHTML = '<option>alpha</option><option>raw</option>'
      const editable = document.createElement('div')
      editable.contentEditable = 'true'
      editable.dataset.testid = 'probe-editable'
      editable.textContent = 'x'
      document.body.append(select, editable)
    })
    for (const id of ['probe-select', 'probe-editable', 'composer-input']) {
      await page.getByTestId(id).focus()
      for (const key of ['a', 'r', 'h', 'Shift+A', 'Shift+R', 'Alt+a', 'j']) await page.keyboard.press(key)
      await expect(panel).toBeVisible()
      await expect(panel.getByTestId('approval-item')).not.toHaveClass(/staged/)
      expect(await focusedTestId(page)).toBe(id)
    }
  } finally {
    await stop()
  }
})
