import { expect, test, type Page } from '@playwright/test'
import { spawnSync } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { changed, original, scenario } from './rewind-scenario'
import { axeViolations, loadEvents, sendTask, setRange, startAppWithModel } from './ui-support'

// Undos and rewinds after they happened (issue 14), in a real browser against the app in browser mode: their
// row in the transcript, their mark on the timeline, the struck changes and turns linked to them, Undo beside
// any bar, Rewind to here on each turn, a reload, a replay, and a rewind a crash cut short.

/** The rewound write's and edit's calls: a write of f.txt and an edit of g.txt in turn 2, both approved. */
async function finishedRun(page: Page) {
  const started = await startAppWithModel({ 'f.txt': original, 'g.txt': 'bye\n' }, scenario)
  await page.goto(started.app.url)
  await sendTask(page, 'Change the lines')
  const panel = page.getByTestId('approval-panel')
  await expect(panel.getByTestId('approval-item')).toHaveCount(2, { timeout: 30_000 })
  // Nothing is offered for undoing while the agent waits for the review (the app would refuse it).
  await expect(page.getByTestId('timeline-turn').first()).toBeVisible()
  await expect(page.getByTestId('rewind-to-here')).toHaveCount(0)
  await panel.getByTestId('approval-approve-all').click()
  await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
  const queued = (await loadEvents(page)).filter((e) => e.type === 'tool.queued') as unknown as {
    callId: string
    name: string
  }[]
  const writeId = queued.find((e) => e.name === 'write_file')?.callId
  const editId = queued.find((e) => e.name === 'edit_file')?.callId
  return { ...started, writeId: writeId as string, editId: editId as string }
}

test('an undo stays visible: its row with its file, the struck card linked to it, its mark on the timeline, after a reload and in a replay', async ({
  page,
}) => {
  const { app, stop, writeId, editId } = await finishedRun(page)
  try {
    const timeline = page.getByTestId('timeline')
    const editBar = timeline.locator(`[data-testid=tool-bar][data-call-id="${editId}"]`)
    const writeBar = timeline.locator(`[data-testid=tool-bar][data-call-id="${writeId}"]`)
    // Undo is offered beside a bar the pointer is on (not only the selected one), and stays while the pointer
    // goes over to it.
    await expect(timeline.getByTestId('undo-button')).toHaveCount(0)
    await writeBar.hover()
    const writeUndo = timeline.locator(`[data-testid=undo-button][data-call-id="${writeId}"]`)
    await expect(writeUndo).toBeVisible()
    await writeUndo.hover()
    await expect(writeUndo).toBeVisible()
    await page.screenshot({ path: 'e2e/output/screenshots/ui-undo-bar-hover.png' })
    // It covers no other bar (the edit just after the write may share its row).
    const overlaps = (a: { x: number; y: number; width: number; height: number }, b: typeof a) =>
      a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
    expect(overlaps((await writeUndo.boundingBox())!, (await editBar.boundingBox())!)).toBe(false)
    await page.mouse.move(2, 2)
    await expect(writeUndo).toHaveCount(0)

    // ...and from the keyboard: Tab from the focused bar reaches its Undo; Enter opens the dialog.
    await editBar.focus()
    await page.keyboard.press('Tab')
    const editUndo = timeline.locator(`[data-testid=undo-button][data-call-id="${editId}"]`)
    await expect(editUndo).toBeFocused()
    await page.keyboard.press('Enter')
    const dialog = page.getByTestId('rewind-dialog')
    // The dialog takes the focus; Escape gives it back to the bar, whose Undo is there again.
    await expect(dialog.getByRole('button', { name: 'Close' })).toBeFocused()
    await page.keyboard.press('Escape')
    await expect(dialog).toHaveCount(0)
    await expect(editBar).toBeFocused()
    await page.keyboard.press('Tab')
    await expect(editUndo).toBeFocused()
    await page.keyboard.press('Enter')
    await expect(dialog.getByTestId('rewind-file')).toHaveCount(1)
    await expect(dialog.getByTestId('rewind-file')).toHaveAttribute('data-path', 'g.txt')
    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-done')).toContainText('1 file was put back')
    await dialog.getByTestId('rewind-cancel').click()
    // Closing shows where it went: its row, selected.
    await expect(page.getByTestId('rewind-row')).toHaveClass(/selected/)
    await expect(page.getByTestId('rewind-row').locator('.rewind-row-title')).toBeFocused()
    expect(await readFile(join(app.workspace, 'g.txt'), 'utf8')).toBe('bye\n')
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(changed)

    const checkAfterUndo = async () => {
      const row = page.getByTestId('rewind-row')
      await expect(row).toHaveCount(1)
      await expect(row).toHaveAttribute('data-status', 'done')
      await expect(row.getByTestId('rewind-row-headline')).toHaveText(/^Undid Edit g\.txt/)
      await expect(row.getByTestId('rewind-row-file')).toHaveAttribute('data-path', 'g.txt')
      await expect(row.getByTestId('rewind-row-file')).toContainText('put back as it was')
      // The card is struck through and says what took it back, with a link there.
      const card = page.locator(`[data-testid=tool-card][data-call-id="${editId}"]`)
      await expect(card).toHaveAttribute('data-rewound', /.+/)
      await expect(card.getByTestId('rewound-note')).toContainText('Taken back by the undo at')
      await expect(page.locator(`[data-testid=tool-card][data-call-id="${writeId}"]`)).not.toHaveAttribute(
        'data-rewound',
        /.+/,
      )
      await expect(timeline.getByTestId('timeline-rewind-mark')).toHaveCount(1)
      await expect(editBar).toHaveClass(/rewound/)
      await expect(editBar).toHaveAttribute('aria-label', /taken back by the undo at/)
    }
    await checkAfterUndo()
    // The timeline's key says what a struck bar and a rewind's line are (behind "Key" when the panel is narrow).
    const key = page.getByRole('button', { name: 'Key', exact: true })
    if (await key.isVisible()) await key.click()
    const legend = page.getByTestId('timeline-legend')
    await expect(legend.getByText('Undone', { exact: true })).toBeVisible()
    await expect(legend.getByText('Undo or rewind', { exact: true })).toBeVisible()
    await page.screenshot({ path: 'e2e/output/screenshots/ui-legend-rewind.png' })
    if (await key.isVisible()) await key.click()

    // The card's link selects the rewind's row; the row's link goes back to the card.
    const card = page.locator(`[data-testid=tool-card][data-call-id="${editId}"]`)
    await card.getByTestId('rewound-note-link').click()
    const row = page.getByTestId('rewind-row')
    await expect(row).toHaveClass(/selected/)
    await expect(row.locator('.rewind-row-title')).toBeFocused()
    await expect(timeline.getByTestId('timeline-rewind-mark')).toHaveClass(/selected/)
    await row.getByTestId('rewind-row-call').click()
    await expect(card).toHaveClass(/selected/)
    await expect(card.locator('.tool-card-toggle')).toBeFocused()
    await expect(row).not.toHaveClass(/selected/)
    // The mark on the timeline selects the row too, from the keyboard.
    await timeline.getByTestId('timeline-rewind-mark').focus()
    await page.keyboard.press('Enter')
    await expect(row).toHaveClass(/selected/)
    // A bar taken back links to its undo from beside it.
    await editBar.click()
    await timeline.getByTestId('bar-rewound-link').click()
    await expect(row).toHaveClass(/selected/)

    // "Rewind to here" is in the transcript too, at each turn that has calls.
    await page.getByTestId('transcript').evaluate((el) => el.scrollTo(0, 0))
    await page
      .getByTestId('transcript')
      .locator('[data-testid=turn-header][data-turn="2"]')
      .getByTestId('rewind-to-here')
      .click()
    await expect(page.getByTestId('rewind-dialog')).toContainText('Rewind to before turn 2')
    await page.getByTestId('rewind-cancel').click()

    await page.setViewportSize({ width: 800, height: 600 })
    await page.emulateMedia({ colorScheme: 'dark' })
    await timeline.getByTestId('timeline-rewind-mark').click()
    await expect(page.getByTestId('rewind-row')).toHaveClass(/selected/)
    await page.screenshot({ path: 'e2e/output/screenshots/ui-undo-row-800-dark.png' })
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.emulateMedia({ colorScheme: 'light' })
    await page.screenshot({ path: 'e2e/output/screenshots/ui-undo-row-1440-light.png' })
    // The new parts pass axe's WCAG A/AA rules in both schemes, with a rewound bar's link shown beside it.
    await editBar.focus()
    await expect(timeline.getByTestId('bar-rewound-link')).toBeVisible()
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      expect(
        await axeViolations(page, [
          '[data-testid=rewind-row]',
          '.rewind-mark-strip',
          '.turn-header',
          '[data-testid=tool-card][data-rewound]',
          '[data-testid=timeline]',
        ]),
        scheme,
      ).toEqual([])
    }
    await page.emulateMedia({ colorScheme: null })

    // A reload keeps all of it: it is in the session's log.
    await page.reload()
    await checkAfterUndo()

    // A replay shows the undo from the moment it happened: not before, struck after.
    const events = await loadEvents(page)
    const first = events[0]!.at
    const startedAt = events.find((e) => e.type === 'rewind.started')!.at
    const finishedAt = events.find((e) => e.type === 'rewind.finished')!.at
    const scrubber = page.getByTestId('replay-scrubber')
    await setRange(scrubber, startedAt - first - 1)
    await expect(page.getByTestId('replay-exit')).toBeVisible()
    await expect(page.getByTestId('rewind-row')).toHaveCount(0)
    await expect(timeline.getByTestId('timeline-rewind-mark')).toHaveCount(0)
    await expect(editBar).not.toHaveClass(/rewound/)
    await expect(page.locator(`[data-testid=tool-card][data-call-id="${editId}"]`)).not.toHaveAttribute(
      'data-rewound',
      /.+/,
    )
    // Nothing is undone from the past.
    await editBar.hover()
    await expect(page.getByTestId('undo-button')).toHaveCount(0)
    await setRange(scrubber, finishedAt - first)
    await checkAfterUndo()
  } finally {
    await stop()
  }
})

test('a rewind of the conversation marks the turns Claude no longer sees, and the session waits to continue from there', async ({
  page,
}) => {
  const { app, stop } = await finishedRun(page)
  try {
    await page.getByTestId('transcript').evaluate((el) => el.scrollTo(0, 0))
    await page
      .getByTestId('transcript')
      .locator('[data-testid=turn-header][data-turn="2"]')
      .getByTestId('rewind-to-here')
      .click()
    const dialog = page.getByTestId('rewind-dialog')
    await expect(dialog.getByTestId('rewind-file')).toHaveCount(2)
    await expect(dialog.getByTestId('rewind-conversation')).toBeChecked()
    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-done')).toContainText('2 files were put back')
    await dialog.getByTestId('rewind-cancel').click()
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(original)

    // The turn the conversation went back to is marked (its rows dimmed); earlier turns can still be rewound to.
    await page.getByTestId('transcript').evaluate((el) => el.scrollTo(0, 0))
    const turn2 = page.locator('[data-testid=turn-header][data-turn="2"]')
    await expect(turn2.getByTestId('turn-rewound-note')).toContainText('Claude no longer sees this turn')
    await expect(turn2.getByTestId('rewind-to-here')).toHaveCount(0)
    await expect(
      page.locator('[data-testid=turn-header][data-turn="1"]').getByTestId('rewind-to-here'),
    ).toHaveCount(1)
    await expect(page.locator('.transcript-row.rewound-turn').first()).toBeVisible()
    // The rewind's own row, from its mark on the timeline.
    await page.getByTestId('timeline-rewind-mark').click()
    const row = page.getByTestId('rewind-row')
    await expect(row.getByTestId('rewind-row-headline')).toHaveText(
      'Rewound to before turn 2: files and conversation (Claude no longer sees turn 2 or later)',
    )
    await expect(row.getByTestId('rewind-row-file')).toHaveCount(2)
    await expect(row.getByTestId('rewind-row-call')).toHaveCount(2)
    await expect(
      page
        .getByTestId('timeline')
        .locator('[data-testid=timeline-turn][data-turn="2"]')
        .getByTestId('timeline-turn-rewound'),
    ).toBeVisible()
    // Paused for no review: the session says where it goes on from.
    await expect(page.getByTestId('session-paused-banner')).toContainText('rewound to before turn 2')
    await expect(page.getByTestId('working')).toHaveCount(0)
    await expect(page.getByTestId('session-status')).toHaveText('rewound')
    await expect(page.getByTestId('timeline-rewind-mark')).toHaveText(/Rewound/)
    await page.setViewportSize({ width: 800, height: 600 })
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.screenshot({ path: 'e2e/output/screenshots/ui-rewind-turns-800-dark.png' })
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.emulateMedia({ colorScheme: 'light' })
    await page.screenshot({ path: 'e2e/output/screenshots/ui-rewind-turns-1440-light.png' })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      expect(
        await axeViolations(page, [
          '[data-testid=transcript]',
          '[data-testid=timeline]',
          '[data-testid=session-paused-banner]',
        ]),
        scheme,
      ).toEqual([])
    }
    await page.emulateMedia({ colorScheme: null })
  } finally {
    await stop()
  }
})

for (const changedAfter of [false, true]) {
  test(`a rewind a crash cut short is ${changedAfter ? 'rolled back (a file changed since)' : 'finished'} when the session is opened again, and says so`, async ({
    page,
  }) => {
    const { app, stop, editId } = await finishedRun(page)
    try {
      const sessionId = new URLSearchParams(new URL(page.url()).hash.slice(1)).get('session') as string
      // A real process starts rewinding the files to before the edit and is killed (SIGKILL) right after it
      // changed the one file.
      const crashed = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/main/cli/test-fixtures/rewind-child.ts',
          'crash',
          app.sessionsDir,
          sessionId,
          editId,
        ],
        { encoding: 'utf8' },
      )
      expect(crashed.signal).toBe('SIGKILL')
      const gFile = join(app.workspace, 'g.txt')
      expect(await readFile(gFile, 'utf8')).toBe('bye\n')
      if (changedAfter) await writeFile(gFile, 'the user wrote this after the crash\n')
      // Opening the session (a reload) finishes it, or rolls it back, before showing it.
      await page.reload()
      await page.getByTestId('timeline-rewind-mark').click()
      const row = page.getByTestId('rewind-row')
      const card = page.locator(`[data-testid=tool-card][data-call-id="${editId}"]`)
      if (changedAfter) {
        await expect(row).toHaveAttribute('data-status', 'rolled-back')
        await expect(row.getByTestId('rewind-row-status')).toContainText(
          'Rolled back: the files are as they were before it.',
        )
        await expect(row.getByTestId('rewind-row-status')).toContainText('g.txt changed after')
        await expect(page.getByTestId('timeline-rewind-mark')).toHaveText(/Rewind failed/)
        await expect(card).not.toHaveAttribute('data-rewound', /.+/)
        expect(await readFile(gFile, 'utf8')).toBe('the user wrote this after the crash\n')
      } else {
        await expect(row).toHaveAttribute('data-status', 'done')
        await expect(row.getByTestId('rewind-row-status')).toContainText(
          'finished it when the session was opened again',
        )
        await expect(card).toHaveAttribute('data-rewound', /.+/)
      }
      const events = await loadEvents(page)
      expect(events.filter((e) => e.type.startsWith('rewind.')).map((e) => e.type)).toEqual([
        'rewind.started',
        'rewind.finished',
      ])
      await page.setViewportSize({ width: 800, height: 600 })
      await page.emulateMedia({ colorScheme: 'dark' })
      await page.screenshot({
        path: `e2e/output/screenshots/ui-rewind-${changedAfter ? 'rolled-back' : 'recovered'}-800-dark.png`,
      })
      await page.emulateMedia({ colorScheme: null })
    } finally {
      await stop()
    }
  })
}
