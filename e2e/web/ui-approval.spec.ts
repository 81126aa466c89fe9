import { expect, test } from '@playwright/test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

const scenario = {
  turns: [
    {
      blocks: [{ text: 'Reading the notes first.' }, { tool: 'read_file', input: { path: 'notes.txt' } }],
      stop: 'tool_use',
    },
    {
      blocks: [
        { text: 'Updating the notes and adding a changelog.' },
        { tool: 'edit_file', input: { path: 'notes.txt', old_string: 'hello', new_string: 'hello, world' } },
        {
          tool: 'write_file',
          input: { path: 'CHANGELOG.md', content: '# Changelog\n\n- Greet the world.\n' },
        },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

const files = { 'notes.txt': 'hello\nsecond line\n', 'src/app.ts': 'export const app = 1\n' }

test('approving in the review screen shows the diffs first, then changes the files on disk', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(files, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Greet the world in the notes')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await expect(page.getByTestId('session-item').first()).toHaveAttribute('data-status', 'paused')

    // One review for the turn: the edit and the new file, each with its diff.
    const items = panel.getByTestId('approval-item')
    await expect(items).toHaveCount(2)
    const editDiff = items.nth(0).getByTestId('diff-view')
    await expect(editDiff).toContainText('notes.txt')
    await expect(editDiff.locator('.diff-line.del')).toContainText('hello')
    await expect(editDiff.locator('.diff-line.add')).toContainText('hello, world')
    await expect(items.nth(1).getByTestId('diff-view')).toContainText('Greet the world.')
    await expect(items.nth(1)).toContainText('New file')
    // Side by side puts the old line left and the new one right.
    await editDiff.getByTestId('diff-split').click()
    await expect(editDiff).toHaveAttribute('data-layout', 'split')
    await expect(editDiff.locator('td.code.del')).toContainText('hello')
    await expect(editDiff.locator('td.code.add')).toContainText('hello, world')
    await screenshots(page, 'ui-approval-review')

    // Nothing changed yet.
    expect(await readFile(join(app.workspace, 'notes.txt'), 'utf8')).toBe('hello\nsecond line\n')

    // Keyboard: "a" approves the focused call; the button approves the other; then the run goes on.
    await page.keyboard.press('a')
    await expect(items.nth(0)).toContainText('Will approve')
    await items.nth(1).getByTestId('approval-approve').click()
    await expect(panel).toBeHidden()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })

    expect(await readFile(join(app.workspace, 'notes.txt'), 'utf8')).toBe('hello, world\nsecond line\n')
    expect(await readFile(join(app.workspace, 'CHANGELOG.md'), 'utf8')).toBe(
      '# Changelog\n\n- Greet the world.\n',
    )
    await expect(page.locator('[data-testid=tool-bar][data-status=ok]')).toHaveCount(3)
  } finally {
    await stop()
  }
})

test('rejecting leaves the files untouched and the model receives the note', async ({ page }) => {
  const { app, model, stop } = await startAppWithModel(files, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Greet the world in the notes')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    const items = panel.getByTestId('approval-item')
    await items.nth(0).getByTestId('approval-note').fill('Keep the greeting short, just hello.')
    await items.nth(0).getByTestId('approval-reject').click()
    await items.nth(1).getByTestId('approval-note').fill('No changelog in this project.')
    await items.nth(1).getByTestId('approval-reject').click()
    await expect(panel).toBeHidden()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })

    expect(await readFile(join(app.workspace, 'notes.txt'), 'utf8')).toBe('hello\nsecond line\n')
    await expect(readFile(join(app.workspace, 'CHANGELOG.md'), 'utf8')).rejects.toThrow()
    await expect(page.locator('[data-testid=tool-card][data-status=rejected]')).toHaveCount(2)
    await expect(page.locator('[data-testid=tool-bar][data-status=rejected]')).toHaveCount(2)

    // The request after the decision carries both rejections, each with its note, as error results.
    const requests = await model.requests()
    const sent = JSON.stringify(requests[requests.length - 1])
    expect(sent).toContain('Keep the greeting short, just hello.')
    expect(sent).toContain('No changelog in this project.')
    await screenshots(page, 'ui-approval-rejected')
  } finally {
    await stop()
  }
})

test('a command approved to run outside the sandbox says so in the review, the log and on its bar', async ({
  page,
}) => {
  const commandScenario = {
    turns: [
      {
        blocks: [
          { tool: 'bash', input: { command: 'touch inside.txt' } },
          { tool: 'bash', input: { command: 'touch outside.txt' } },
        ],
        stop: 'tool_use',
      },
      { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
    ],
  }
  const { app, stop } = await startAppWithModel(files, commandScenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Touch two files')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    const items = panel.getByTestId('approval-item')
    await expect(items).toHaveCount(2)
    // Both switches start off; turning one on shows its one-line warning.
    const outside = items.nth(1).getByTestId('approval-outside-sandbox')
    await expect(outside).not.toBeChecked()
    await expect(items.nth(0).getByTestId('approval-network')).not.toBeChecked()
    await outside.check()
    await expect(items.nth(1)).toContainText('It runs with all your rights')
    await items.nth(0).getByTestId('approval-approve').click()
    await items.nth(1).getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'inside.txt'), 'utf8')).toBe('')
    expect(await readFile(join(app.workspace, 'outside.txt'), 'utf8')).toBe('')
    await expect(page.locator('[data-testid=tool-bar][data-sandbox-flag="outside the sandbox"]')).toHaveCount(
      1,
    )
    await expect(page.locator('[data-testid=tool-bar]:not([data-sandbox-flag])')).toHaveCount(1)
  } finally {
    await stop()
  }
})
