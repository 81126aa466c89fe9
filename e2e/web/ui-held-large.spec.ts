import { expect, test } from '@playwright/test'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contrastViolations, loadEvents, screenshots, sendTask, startAppWithModel } from './ui-support'

// A command's large held change set (issue 20) in a real browser: 3,000 new files under three folders, held for
// review ("Show me its changes before they land"), are shown folder by folder with their counts; a folder's
// files are paged in when it is opened and a file's diff loaded when it is shown; one folder is rejected whole,
// the others accepted, and only the accepted files land. Linux with bubblewrap only (the capture needs an
// overlay in a user namespace).

const FOLDERS = ['docs', 'src', 'vendor']

const gen = [
  "const fs = require('fs')",
  `for (const folder of ${JSON.stringify(FOLDERS)})`,
  "  for (let i = 0; i < 1000; i++) fs.writeFileSync(folder + '/f' + i + '.txt', folder + ' file ' + i + '\\n')",
].join('\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'bash', input: { command: 'node gen.js', description: 'Generate the files' } }] },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('a held set of 3,000 files is reviewed by folder: one folder rejected, the rest accepted, only those land', async ({
  page,
}) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  test.setTimeout(180_000)
  await page.setViewportSize({ width: 800, height: 600 })
  const files: Record<string, string> = { 'gen.js': gen }
  for (const folder of FOLDERS) files[`${folder}/keep.txt`] = 'kept\n'
  const { app, stop } = await startAppWithModel(files, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Generate the files')
    const panel = page.getByTestId('approval-panel').first()
    await expect(panel).toBeVisible({ timeout: 30_000 })
    // Typing in the note field (Enter, and the review's own letter keys among them) never approves anything.
    const note = panel.getByTestId('approval-note')
    await note.fill('')
    await note.pressSequentially('A note: aaa rrr')
    await note.press('Enter')
    await note.press('Shift+A')
    await expect(panel.getByTestId('approval-approve')).toBeVisible()
    expect((await loadEvents(page)).filter((e) => e.type === 'approval.decided')).toHaveLength(0)
    await note.fill('')
    await panel.getByTestId('approval-hold').check()
    await panel.getByTestId('approval-approve').click()

    const review = page.getByTestId('held-review')
    await expect(review).toBeVisible({ timeout: 90_000 })
    const groups = review.getByTestId('held-group')
    await expect(groups).toHaveCount(3)
    const group = (folder: string) => review.locator(`[data-testid=held-group][data-folder="${folder}"]`)
    for (const folder of FOLDERS)
      await expect(group(folder).getByTestId('held-group-counts')).toHaveText('1000 added')
    // Nothing of the command has landed, and the renderer was sent no file list, let alone 3,000 diffs.
    expect(await readdir(join(app.workspace, 'src'))).toEqual(['keep.txt'])
    await expect(review.getByTestId('held-file')).toHaveCount(0)
    const held = (await loadEvents(page)).find((e) => e.type === 'command.held')
    expect(JSON.stringify(held).length).toBeLessThan(200_000)

    // A folder opens a page at a time; a file's change is loaded when asked for.
    await group('src').getByTestId('held-group-toggle').click()
    await expect(group('src').getByTestId('held-file')).toHaveCount(200)
    await group('src').getByTestId('held-group-more').click()
    await expect(group('src').getByTestId('held-file')).toHaveCount(400)
    const first = group('src').getByTestId('held-file').first()
    await first.getByTestId('held-show-diff').click()
    await expect(first).toContainText(/src file \d+/)

    await expect(review.getByTestId('held-apply')).toBeDisabled()
    await group('vendor').getByTestId('held-group-reject').click()
    await group('src').getByTestId('held-group-accept').click()
    await group('docs').getByTestId('held-group-accept').click()
    // At 800x600, light and dark, the review reads well.
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      expect(await contrastViolations(page), scheme).toEqual([])
    }
    await page.emulateMedia({ colorScheme: null })
    await screenshots(page, 'held-large-review')
    await review.getByTestId('held-apply').click()

    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 90_000 })
    expect(await readdir(join(app.workspace, 'vendor'))).toEqual(['keep.txt'])
    expect(await readdir(join(app.workspace, 'src'))).toHaveLength(1001)
    expect(await readdir(join(app.workspace, 'docs'))).toHaveLength(1001)
    expect(await readFile(join(app.workspace, 'docs', 'f7.txt'), 'utf8')).toBe('docs file 7\n')
    const card = page.locator('[data-testid=tool-card]', { hasText: 'node gen.js' }).last()
    await expect(card.getByTestId('command-held')).toContainText('2000 applied, 1000 not applied')
    // The card shows what landed folder by folder too.
    const rows = card.getByTestId('command-changes-folder')
    await expect(rows).toHaveCount(2)
    await expect(card.locator('[data-testid=command-changes-folder][data-folder="src"]')).toContainText(
      'src/ 1000 added',
    )
    // Opened, a folder lists the changes the result names (the first 200 of them) and counts the rest.
    for (const folder of ['docs', 'src'])
      await card.locator(`[data-testid=command-changes-folder][data-folder="${folder}"] summary`).click()
    await expect(rows.getByTestId('command-changed-path')).toHaveCount(12)
    await expect(rows.filter({ hasText: 'more' })).toHaveCount(2)
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      expect(await contrastViolations(page), scheme).toEqual([])
    }
  } finally {
    await stop()
  }
})
