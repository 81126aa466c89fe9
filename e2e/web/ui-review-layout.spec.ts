import { expect, test, type Page } from '@playwright/test'
import { contrastViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// Issue 23, items 5 and 8: on small and large screens the review has room, the transcript stays, the lanes are
// not a slit; every diff is shown once with its parts in it, scrolled by the review alone.

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`)
const original = lines(120).join('\n') + '\n'
const changed = lines(120)
  .map((l, i) => (i % 12 === 3 ? `CHANGED ${i + 1}` : l))
  .join('\n')
  .concat('\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }], stop: 'tool_use' },
    { blocks: [{ tool: 'write_file', input: { path: 'f.txt', content: changed } }], stop: 'tool_use' },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

const height = async (page: Page, selector: string) =>
  (await page.locator(selector).first().boundingBox())?.height ?? 0

for (const size of [
  { width: 800, height: 600, review: 230, timeline: 110 },
  { width: 1440, height: 900, review: 330, timeline: 250 },
]) {
  test(`the review at ${size.width}x${size.height}: room for it, the transcript and the lanes; one diff with its parts, one scroller`, async ({
    page,
  }) => {
    await page.setViewportSize(size)
    const { app, stop } = await startAppWithModel({ 'f.txt': original }, scenario)
    try {
      await page.goto(app.url)
      await sendTask(page, 'Change every twelfth line')
      const panel = page.getByTestId('approval-panel')
      await expect(panel.getByTestId('hunk-item')).toHaveCount(10, { timeout: 30_000 })

      expect(await height(page, '[data-testid=approval-panel]')).toBeGreaterThanOrEqual(size.review)
      expect(await height(page, '.transcript-pane')).toBeGreaterThanOrEqual(60)
      await expect(page.getByTestId('transcript')).toBeVisible()
      expect(await height(page, '.timeline-pane')).toBeGreaterThanOrEqual(size.timeline)

      // One diff, the parts in it (each part's checkbox in its header), no list of parts after it.
      const item = panel.getByTestId('approval-item')
      await expect(item.getByTestId('diff-view')).toHaveCount(1)
      await expect(item.getByTestId('diff-view').getByTestId('hunk-apply')).toHaveCount(10)
      await expect(item.locator('.hunk-lines')).toHaveCount(0)
      // Only the review scrolls: the diff inside it does not (no scroller inside a scroller).
      const diffScrolls = await item
        .locator('.diff-scroll')
        .evaluate(
          (el) => el.scrollHeight > el.clientHeight + 1 && getComputedStyle(el).overflowY !== 'visible',
        )
      expect(diffScrolls).toBe(false)
      const body = panel.locator('.approval-body')
      expect(await body.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true)

      // An edited part shows the user's lines in the diff before approval (item 5).
      await item.getByTestId('hunk-edit').nth(1).click()
      const text = item.getByTestId('hunk-text')
      await text.fill(String(await text.inputValue()).replace('CHANGED 16', 'mine 16'))
      await expect(item.getByTestId('hunk-item').nth(1).locator('.diff-line.add .code')).toHaveText([
        '+mine 16',
      ])

      await screenshots(page, `ui-review-layout-${size.width}x${size.height}`)
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        expect(await contrastViolations(page)).toEqual([])
      }

      // Once the review is done, a tall window gives the lanes more than a slit under the legend.
      await panel.getByTestId('approval-approve-all').click()
      await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', {
        timeout: 30_000,
      })
      if (size.height >= 800) expect(await height(page, '.timeline-pane')).toBeGreaterThanOrEqual(300)
    } finally {
      await stop()
    }
  })
}
