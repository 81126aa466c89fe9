import { expect, test } from '@playwright/test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contrastViolations, loadEvents, sendTask, setRange, startAppWithModel } from './ui-support'

// Per-hunk review with the keyboard only (issue 14), on a small dark screen, in a real browser against the app in
// browser mode and the scripted model; then the decisions on the finished card, after a reload and in replay.

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`)
const original = lines(30).join('\n') + '\n'
const changed = original
  .replace('line 2\n', 'CHANGED 2\n')
  .replace('line 15\n', 'CHANGED 15\n')
  .replace('line 29\n', 'CHANGED 29\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }], stop: 'tool_use' },
    {
      blocks: [
        { text: 'Changing three lines.' },
        { tool: 'write_file', input: { path: 'f.txt', content: changed } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('per-hunk review by keyboard alone: move, leave out with a note, edit, approve; the card and replay show each decision', async ({
  page,
}) => {
  await page.setViewportSize({ width: 800, height: 600 })
  await page.emulateMedia({ colorScheme: 'dark' })
  const { app, model, stop } = await startAppWithModel({ 'f.txt': original }, scenario)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the lines')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    const review = panel.getByTestId('hunk-review')
    const parts = review.getByTestId('hunk-item')
    await expect(parts).toHaveCount(3)
    // The keys are on screen, where the parts are.
    await expect(review.getByTestId('hunk-keys')).toContainText('Space')
    await expect(panel.locator('.approval-footer')).toContainText('choose parts of a change')
    // The diff is shown once, with its parts in it: each part's header holds its checkbox.
    await expect(panel.getByTestId('diff-view')).toHaveCount(1)
    await expect(panel.locator('.diff-hunk').nth(1)).toContainText('Part 2 · lines 12–18 will be applied')
    await expect(parts.nth(1).locator('.diff-hunk').getByTestId('hunk-apply')).toBeChecked()

    const box = (i: number) => parts.nth(i).getByTestId('hunk-apply')
    // The review left the focus in the composer, where the task was typed; Esc goes to the review, and H from
    // there to the first part; J and ↓ move down, K and ↑ up.
    await page.keyboard.press('Escape')
    await page.keyboard.press('h')
    await expect(box(0)).toBeFocused()
    await page.screenshot({ path: 'e2e/output/screenshots/ui-hunk-keys-start-800x600-dark.png' })
    await page.keyboard.press('j')
    await expect(box(1)).toBeFocused()
    await page.keyboard.press('ArrowDown')
    await expect(box(2)).toBeFocused()
    await page.keyboard.press('k')
    await expect(box(1)).toBeFocused()
    // The moves stayed inside the review of this call.
    await expect(panel.getByTestId('approval-item').first()).toHaveClass(/focused/)

    // X leaves part 2 out; N writes why; Esc comes back to the part.
    await page.keyboard.press('x')
    await expect(box(1)).not.toBeChecked()
    await expect(review).toContainText('2 of 3 will be applied')
    // The diff shows it at once: part 2 struck through and named so.
    await expect(panel.locator('.diff-hunk').nth(1)).toContainText('Part 2 · lines 12–18 left out')
    await expect(panel.locator('.diff-line.left-out.del')).toContainText('line 15')
    await page.keyboard.press('n')
    await expect(parts.nth(1).getByTestId('hunk-note')).toBeFocused()
    await page.keyboard.type('line 15 stays')
    await page.keyboard.press('Escape')
    await expect(box(1)).toBeFocused()
    await expect(parts.nth(1).getByTestId('hunk-note')).toHaveValue('line 15 stays')
    await page.screenshot({ path: 'e2e/output/screenshots/ui-hunk-keys-left-out-800x600-dark.png' })
    // Space toggles too: on, then off again.
    await page.keyboard.press('Space')
    await expect(box(1)).toBeChecked()
    await page.keyboard.press('Space')
    await expect(box(1)).not.toBeChecked()

    // E edits part 3's new lines.
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('e')
    const text = parts.nth(2).getByTestId('hunk-text')
    await expect(text).toBeFocused()
    await expect(text).toHaveValue(/CHANGED 29/)
    await page.keyboard.press('Control+a')
    await page.keyboard.type('line 26\nline 27\nline 28\nfixed 29\nline 30')
    await page.keyboard.press('Escape')
    await expect(box(2)).toBeFocused()
    await expect(parts.nth(2)).toHaveAttribute('data-decision', 'edited')
    // Before approving, the diff shows the user's version of part 3, not the agent's.
    await expect(parts.nth(2).locator('.diff-line.add .code')).toHaveText(['+fixed 29'])
    await expect(parts.nth(2).locator('.diff-line.del .code')).toHaveText(['−line 29'])
    await expect(panel.locator('.diff-line.add', { hasText: 'CHANGED 29' })).toHaveCount(0)
    // Esc again leaves the parts for the review; H comes back.
    await page.keyboard.press('Escape')
    await expect(panel).toBeFocused()
    await page.keyboard.press('h')
    await expect(box(0)).toBeFocused()

    await page.screenshot({ path: 'e2e/output/screenshots/ui-hunk-keys-800x600-dark.png' })
    expect(await contrastViolations(page)).toEqual([])
    await page.emulateMedia({ colorScheme: 'light' })
    expect(await contrastViolations(page)).toEqual([])
    await page.emulateMedia({ colorScheme: 'dark' })

    // A approves the call, from the part's checkbox, once the note on part 2 is confirmed (Enter).
    await page.keyboard.press('a')
    await expect(panel.getByTestId('approval-confirm')).toContainText('line 15 stays')
    await page.keyboard.press('Enter')
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    const expected = lines(30)
    expected[1] = 'CHANGED 2'
    expected[28] = 'fixed 29'
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(expected.join('\n') + '\n')
    const last = JSON.stringify((await model.requests()).at(-1))
    expect(last).toContain('2 of 3 hunks were applied')
    expect(last).toContain('line 15 stays')
    expect(last).toContain('    29|fixed 29')

    // The finished card says what became of each part, also when rebuilt from the log.
    const outcome = () =>
      page.locator('[data-testid=tool-card]', { hasText: 'f.txt' }).last().getByTestId('hunk-outcome')
    await expect(outcome()).toContainText('2 of 3 applied')
    await page.reload()
    await expect(outcome()).toContainText('2 of 3 applied')
    await expect(outcome().locator('[data-hunk="1"]')).toContainText('left out — “line 15 stays”')
    await expect(outcome().locator('[data-hunk="2"]')).toContainText('edited by you')
    // Its diff marks the parts the same way.
    const card = page.locator('[data-testid=tool-card]', { hasText: 'f.txt' }).last()
    await card.locator('.tool-card-toggle').click()
    await expect(card.locator('.diff-hunk.left-out')).toHaveText('Part 2 · lines 12–18 — left out')
    await expect(card.locator('.diff-hunk').nth(2)).toContainText('edited by you')
    await card.locator('.diff-hunk.left-out').scrollIntoViewIfNeeded()
    await page.screenshot({ path: 'e2e/output/screenshots/ui-hunk-card-diff-800x600-dark.png' })
    await page.screenshot({ path: 'e2e/output/screenshots/ui-hunk-outcome-800x600-dark.png' })

    // Replay, stopped just after the write finished, shows the same.
    const events = await loadEvents(page)
    const first = events[0]!.at
    const written = events.findLast((e) => e.type === 'tool.finished')!
    await setRange(page.getByTestId('replay-scrubber'), written.at - first)
    await expect(page.getByTestId('replay-exit')).toBeVisible()
    await expect(page.getByTestId('run-end')).toHaveCount(0)
    await expect(outcome().locator('[data-hunk="1"]')).toContainText('left out')
  } finally {
    await stop()
  }
})

test('a change of 500 parts stays responsive: moving and toggling by keyboard, then written exactly', async ({
  page,
}) => {
  const rows = Array.from({ length: 10_000 }, (_, i) => `row ${i + 1}`)
  const before = rows.join('\n') + '\n'
  const after = rows.map((l, i) => (i % 20 === 10 ? `${l} changed` : l)).join('\n') + '\n'
  const big = {
    turns: [
      { blocks: [{ tool: 'read_file', input: { path: 'big.txt', limit: 5 } }], stop: 'tool_use' },
      { blocks: [{ tool: 'write_file', input: { path: 'big.txt', content: after } }], stop: 'tool_use' },
      { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
    ],
  }
  const { app, model, stop } = await startAppWithModel({ 'big.txt': before }, big)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change every twentieth row')
    const parts = page.getByTestId('hunk-review').getByTestId('hunk-item')
    await expect(parts).toHaveCount(500, { timeout: 30_000 })
    await page.keyboard.press('Escape')
    await page.keyboard.press('h')
    const box = (i: number) => parts.nth(i).getByTestId('hunk-apply')
    await expect(box(0)).toBeFocused()
    // Each key press, from the key to the next painted frame, measured in the page (a key event sent to the
    // focused element, as the browser sends it, then two animation frames: the render and its paint).
    const timed = (key: string): Promise<number> =>
      page.evaluate(async (k) => {
        const started = performance.now()
        document.activeElement?.dispatchEvent(
          new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }),
        )
        await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))
        return performance.now() - started
      }, key)
    const times: number[] = []
    for (let i = 0; i < 5; i++) {
      times.push(await timed('x'))
      await expect(box(i)).not.toBeChecked()
      times.push(await timed('j'))
      await expect(box(i + 1)).toBeFocused()
    }
    times.sort((a, b) => a - b)
    const median = times[Math.floor(times.length / 2)] as number
    console.log(`500 parts: key to paint median ${median.toFixed(0)} ms, max ${times.at(-1)?.toFixed(0)} ms`)
    expect(median).toBeLessThan(100)
    await expect(page.getByTestId('hunk-review')).toContainText('495 of 500 will be applied')

    await page.keyboard.press('a')
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    const expected = rows.map((l, i) => (i % 20 === 10 && i > 5 * 20 ? `${l} changed` : l)).join('\n') + '\n'
    expect(await readFile(join(app.workspace, 'big.txt'), 'utf8')).toBe(expected)
    expect(JSON.stringify((await model.requests()).at(-1))).toContain('495 of 500 hunks were applied')
  } finally {
    await stop()
  }
})

test('a second change to the same file warns when the first is applied only in part, and does not land', async ({
  page,
}) => {
  const twice = {
    turns: [
      { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }], stop: 'tool_use' },
      {
        blocks: [
          { tool: 'write_file', input: { path: 'f.txt', content: changed } },
          { tool: 'edit_file', input: { path: 'f.txt', old_string: 'CHANGED 29', new_string: 'TWICE 29' } },
        ],
        stop: 'tool_use',
      },
      { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
    ],
  }
  const { app, model, stop } = await startAppWithModel({ 'f.txt': original }, twice)
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the lines twice')
    const items = page.getByTestId('approval-item')
    await expect(items).toHaveCount(2, { timeout: 30_000 })
    await expect(page.getByTestId('builds-on-partial')).toHaveCount(0)
    await items.nth(0).getByTestId('hunk-item').nth(0).getByTestId('hunk-apply').uncheck()
    await expect(items.nth(1).getByTestId('builds-on-partial')).toBeVisible()
    await items.nth(0).getByTestId('hunk-item').nth(0).getByTestId('hunk-apply').check()
    await expect(page.getByTestId('builds-on-partial')).toHaveCount(0)
    await items.nth(0).getByTestId('hunk-item').nth(0).getByTestId('hunk-apply').uncheck()

    await page.getByTestId('approval-approve-all').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    // The first as reviewed; the second, made on the whole first, refused rather than applied elsewhere.
    expect(await readFile(join(app.workspace, 'f.txt'), 'utf8')).toBe(
      original.replace('line 15\n', 'CHANGED 15\n').replace('line 29\n', 'CHANGED 29\n'),
    )
    // The model is told why the second did not land, and to read the file again.
    expect(JSON.stringify((await model.requests()).at(-1))).toContain('applied only in part')
  } finally {
    await stop()
  }
})
