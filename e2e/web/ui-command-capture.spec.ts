import { expect, test } from '@playwright/test'
import { lstat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contrastViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// An approved command's changes (issue 20) in a real browser: captured on the sandbox's copy-on-write layer,
// shown on the command's card, and taken back by Undo on that card. Linux with bubblewrap only (the capture
// needs an overlay in a user namespace).

const script = [
  "const fs = require('fs')",
  "fs.writeFileSync('a.txt', 'changed by the command\\n')",
  "fs.writeFileSync('new.txt', 'made by the command\\n')",
  "fs.unlinkSync('gone.txt')",
  // A binary file: the card names it by its type and size, as the review of a write does, never as text.
  "fs.writeFileSync('logo.png', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'))",
].join('\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'bash', input: { command: 'node change.js', description: 'Change the files' } }] },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('a command’s changes are shown on its card and undone by Undo', async ({ page }) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'original\n', 'gone.txt': 'to be removed\n', 'change.js': script },
    scenario,
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the files')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('changed by the command\n')

    const card = page.locator('[data-testid=tool-card]', { hasText: 'node change.js' }).last()
    await expect(card.getByTestId('command-changes-summary')).toHaveText('changed 1, added 2, removed 1')
    await expect(card.getByTestId('command-changes')).toContainText('gone.txt')
    const path = (name: string) => card.getByTestId('command-changed-path').filter({ hasText: name })
    await expect(path('logo.png')).toHaveText('added logo.png (binary: PNG image, 16 bytes)')
    await expect(path('a.txt')).toHaveText('changed a.txt (1 line, 23 bytes)')
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      expect(await contrastViolations(page), scheme).toEqual([])
    }
    await screenshots(page, 'command-capture-binary')

    await card.getByTestId('undo-button').click()
    const dialog = page.getByTestId('rewind-dialog')
    await expect(dialog.getByTestId('rewind-file')).toHaveCount(4)
    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-done')).toContainText('4 files were put back')
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('original\n')
    expect(await readFile(join(app.workspace, 'gone.txt'), 'utf8')).toBe('to be removed\n')
    await expect(lstat(join(app.workspace, 'new.txt'))).rejects.toThrow()
    await expect(lstat(join(app.workspace, 'logo.png'))).rejects.toThrow()
  } finally {
    await stop()
  }
})
