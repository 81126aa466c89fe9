import { expect, test, type Locator, type Page } from '@playwright/test'
import { contrastViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// Issue 23, item 4: parallel and serial read at a glance. A serial lane is one row of bars end to start; a
// parallel group stacks rows only where calls really overlapped; each lane says "one at a time" / "side by
// side"; a long wait for the user is drawn as long as it was felt; skip and undo marks do not look alike.

// Big enough that reading takes a moment, so the parallel reads overlap.
const big = (name: string): string =>
  Array.from({ length: 6000 }, (_, i) => `export const ${name}${i} = ${i} // ${'x'.repeat(60)}`).join('\n') +
  '\n'

const scenario = {
  turns: [
    {
      blocks: [
        { text: 'Reading the three modules.' },
        { tool: 'read_file', input: { path: 'src/a.ts' } },
        { tool: 'read_file', input: { path: 'src/b.ts' } },
        { tool: 'read_file', input: { path: 'src/c.ts' } },
      ],
      stop: 'tool_use',
    },
    {
      blocks: [
        { text: 'Writing the three new files, then fixing a.' },
        { tool: 'write_file', input: { path: 'src/d1.ts', content: 'export const d1 = 1\n' } },
        { tool: 'write_file', input: { path: 'src/d2.ts', content: 'export const d2 = 2\n' } },
        { tool: 'write_file', input: { path: 'src/d3.ts', content: 'export const d3 = 3\n' } },
        { tool: 'edit_file', input: { path: 'src/a.ts', old_string: 'no such text', new_string: 'x' } },
        { tool: 'write_file', input: { path: 'src/d4.ts', content: 'export const d4 = 4\n' } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'The edit did not apply; I stopped there.' }], stop: 'end_turn' },
  ],
}

interface Box {
  id: string
  row: number
  left: number
  right: number
  top: number
  start: number
  end: number
}

async function boxes(bars: Locator): Promise<Box[]> {
  return bars.evaluateAll((els) =>
    els.map((el) => {
      const r = el.getBoundingClientRect()
      return {
        id: el.getAttribute('data-call-id') ?? '',
        row: Number(el.getAttribute('data-row')),
        left: r.left,
        right: r.right,
        top: Math.round(r.top),
        start: Number(el.getAttribute('data-run-start')),
        end: Number(el.getAttribute('data-end')),
      }
    }),
  )
}

/** The geometry rules of item 4, on every turn of the timeline as it is drawn now. */
async function checkGeometry(page: Page): Promise<void> {
  const turns = page.getByTestId('timeline').getByTestId('timeline-turn')
  for (const turn of await turns.all()) {
    const serial = turn.getByTestId('lane-serial')
    if ((await serial.count()) > 0) {
      const bars = (await boxes(serial.locator('[data-testid=tool-bar]:not(.skip-marker)'))).sort(
        (a, b) => a.left - b.left,
      )
      // One row: every bar of the lane at the same height...
      expect(new Set(bars.map((b) => b.top)).size).toBe(1)
      expect(new Set(bars.map((b) => b.row))).toEqual(new Set([0]))
      // ...end to start, none over the next.
      for (let i = 1; i < bars.length; i++)
        expect(bars[i]!.left).toBeGreaterThanOrEqual(bars[i - 1]!.right - 0.5)
      await expect(serial.getByTestId('lane-caption')).toHaveText('one at a time')
    }
    const parallel = turn.getByTestId('lane-parallel')
    if ((await parallel.count()) > 0) {
      const bars = await boxes(parallel.getByTestId('tool-bar'))
      for (const a of bars)
        for (const b of bars) {
          if (a.id >= b.id) continue
          const overlapInTime = a.start < b.end && b.start < a.end
          if (overlapInTime) expect(a.top, `${a.id} and ${b.id} ran together`).not.toBe(b.top)
          // Bars of one row never cover each other on screen.
          if (a.top === b.top) expect(a.right <= b.left + 0.5 || b.right <= a.left + 0.5).toBe(true)
        }
      await expect(parallel.getByTestId('lane-caption')).toHaveText('side by side')
    }
  }
}

for (const size of [
  { width: 800, height: 600 },
  { width: 1440, height: 900 },
]) {
  test(`lanes read at a glance at ${size.width}x${size.height}: a serial chain, parallel rows only where calls overlap, a wait as long as it was`, async ({
    page,
  }) => {
    await page.setViewportSize(size)
    const { app, stop } = await startAppWithModel(
      { 'src/a.ts': big('a'), 'src/b.ts': big('b'), 'src/c.ts': big('c') },
      scenario,
    )
    try {
      await page.goto(app.url)
      await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
      await sendTask(page, 'Read the modules and add three files')
      const panel = page.getByTestId('approval-panel')
      await expect(panel.getByTestId('approval-item')).toHaveCount(4, { timeout: 30_000 })
      // While the writes wait for the review they stand in one row too, one after another.
      await checkGeometry(page)
      // The review, with the pointer on Stop (issue 19: white on the hover grey read 1.23): contrast holds.
      await page.getByTestId('run-stop').hover()
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        expect(await contrastViolations(page), `review, ${scheme}`).toEqual([])
      }
      await page.emulateMedia({ colorScheme: null })
      await screenshots(page, `ui-review-stop-hover-${size.width}`)
      await page.mouse.move(1, 1)
      // The user takes a while to decide: that wait must show on the timeline as the longest stretch.
      await page.waitForTimeout(6000)
      await panel.getByTestId('approval-approve-all').click()
      await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', {
        timeout: 30_000,
      })

      await checkGeometry(page)
      const timeline = page.getByTestId('timeline')

      // The wait for the user: drawn as wide as any stretch the model spent thinking, with its length written
      // on it, and in a colour of its own.
      const waits = timeline.locator('[data-testid=tool-wait].status-awaiting-approval')
      await expect(waits.first()).toBeVisible()
      const waitBox = (await waits.first().boundingBox())!
      const breaks = await timeline
        .locator('.break-band.idle')
        .evaluateAll((els) => els.map((el) => el.getBoundingClientRect().width))
      for (const w of breaks) expect(waitBox.width).toBeGreaterThanOrEqual(w)
      await expect(timeline.getByTestId('wait-for-you')).toContainText(/waited for you \d/)

      // Undo the first write: its mark and the skip marker do not look alike.
      const skip = timeline.locator('.skip-marker').first()
      await expect(skip).toBeVisible()
      const firstWrite = timeline.getByTestId('lane-serial').getByTestId('tool-bar').first()
      await firstWrite.click()
      const undo = timeline.getByTestId('undo-button')
      await undo.click()
      const dialog = page.getByTestId('rewind-dialog')
      await dialog.getByTestId('rewind-apply').click()
      await expect(dialog.getByTestId('rewind-done')).toBeVisible()
      await dialog.getByTestId('rewind-cancel').click()
      await expect(timeline.getByTestId('timeline-rewind-mark')).toHaveCount(1)
      // The undo's line through the lanes is solid and in the accent colour; a skip's connector is dashed and
      // red, and the skip marker carries its own sign.
      const look = (l: Locator) =>
        l.evaluate((el) => {
          const s = getComputedStyle(el)
          // A connector drawn leftward has its vertical stroke on the right.
          return s.borderLeftStyle === 'none'
            ? `${s.borderRightStyle} ${s.borderRightColor}`
            : `${s.borderLeftStyle} ${s.borderLeftColor}`
        })
      const line = await look(timeline.locator('.rewind-line').first())
      const connector = await look(timeline.locator('.skip-connector').first())
      expect(line.split(' ')[0]).toBe('solid')
      expect(connector.split(' ')[0]).toBe('dashed')
      expect(line).not.toBe(connector)
      await expect(skip.locator('.skip-icon')).toHaveCount(1)
      await checkGeometry(page)

      expect(await contrastViolations(page)).toEqual([])
      await page.emulateMedia({ colorScheme: 'dark' })
      expect(await contrastViolations(page)).toEqual([])
      await page.emulateMedia({ colorScheme: null })
      await screenshots(page, `ui-lanes-glance-${size.width}`)
    } finally {
      await stop()
    }
  })
}
