import { expect, test, type Page } from '@playwright/test'
import { contrastViolations, sendTask, startAppWithModel } from './ui-support'

/**
 * A newcomer's session, looked at in every window size and both colour schemes: a turn of parallel reads, a
 * reviewed turn whose command fails (its sibling skipped), an answer in Markdown, then a follow-up task.
 */

const files = {
  'src/app.ts': 'export const port = 3000\n',
  'src/util.ts': '// TODO: tidy\nexport const id = (x: number) => x\n',
  'README.md': '# Demo\n\nHello.\n',
}

const scenario = {
  turns: [
    {
      blocks: [
        { text: 'Reading the app and its helpers.' },
        { tool: 'read_file', input: { path: 'src/app.ts' } },
        { tool: 'read_file', input: { path: 'src/util.ts' } },
        { tool: 'grep', input: { pattern: 'TODO' } },
      ],
      stop: 'tool_use',
    },
    {
      blocks: [
        { text: 'Changing the port, checking the build output, then adding a module.' },
        { tool: 'edit_file', input: { path: 'src/app.ts', old_string: '3000', new_string: '8080' } },
        {
          tool: 'bash',
          input: { command: 'node check-build.js', description: 'Check the build output' },
        },
        { tool: 'write_file', input: { path: 'src/new.ts', content: 'export const n = 1\n' } },
      ],
      stop: 'tool_use',
    },
    {
      blocks: [
        {
          text: 'Done:\n\n- Set the port to `8080` in `src/app.ts`\n- The build folder is **missing**\n\nSee [the guide](https://example.com/guide).',
        },
      ],
      stop: 'end_turn',
    },
    { blocks: [{ tool: 'read_file', input: { path: 'README.md' } }], stop: 'tool_use' },
    { blocks: [{ text: 'The README says hello.' }], stop: 'end_turn' },
  ],
}

const SIZES = [
  { width: 1440, height: 900 },
  { width: 1024, height: 700 },
  { width: 800, height: 600 },
] as const

/** Screenshots of the page at every size in light and dark, with zero contrast violations in each. */
async function everySizeAndScheme(
  page: Page,
  name: string,
  check?: (size: (typeof SIZES)[number]) => Promise<void>,
) {
  for (const size of SIZES) {
    await page.setViewportSize(size)
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await page.waitForTimeout(150)
      await page.screenshot({
        path: `e2e/output/screenshots/${name}-${size.width}x${size.height}-${scheme}.png`,
      })
      expect(await contrastViolations(page), `${name} at ${size.width}x${size.height}, ${scheme}`).toEqual([])
    }
    await check?.(size)
  }
  await page.emulateMedia({ colorScheme: null })
}

async function box(page: Page, testId: string) {
  const b = await page.getByTestId(testId).first().boundingBox()
  if (!b) throw new Error(`${testId} is not on screen`)
  return b
}

test('a newcomer reads the lanes, the review and the failures at every size, light and dark', async ({
  page,
}) => {
  test.setTimeout(180_000)
  const { app, stop } = await startAppWithModel(files, scenario)
  try {
    await page.setViewportSize(SIZES[0])
    await page.goto(app.url)
    await sendTask(page, 'Move the app to port 8080 and add a module')
    const panel = page.getByTestId('approval-panel')
    await expect(panel.getByTestId('approval-item')).toHaveCount(3, { timeout: 30_000 })
    await expect(page.getByTestId('session-status-badge')).toHaveAttribute('data-status', 'paused')

    await everySizeAndScheme(page, 'ui-newcomer-review', async (size) => {
      // The review, the composer and Stop stay on screen.
      for (const id of ['approval-approve-all', 'composer-input', 'run-stop']) {
        const b = await box(page, id)
        expect(b.y + b.height, `${id} at ${size.width}x${size.height}`).toBeLessThanOrEqual(size.height)
        expect(b.x + b.width, `${id} at ${size.width}x${size.height}`).toBeLessThanOrEqual(size.width)
      }
      // More than one lane stays visible above the review (at least a row of each, under the ruler); at 800x600
      // at least one.
      const timeline = await box(page, 'timeline')
      const lanes = await page.locator('[data-testid=lane-parallel], [data-testid=lane-serial]').evaluateAll(
        (els, t) =>
          els.filter((el) => {
            const r = el.getBoundingClientRect()
            return Math.min(r.bottom, t.y + t.height) - Math.max(r.top, t.y + 26) >= 12
          }).length,
        timeline,
      )
      expect(lanes, `lanes in view at ${size.width}x${size.height}`).toBeGreaterThan(
        size.height >= 700 ? 1 : 0,
      )
    })

    // The bars: a run is the bar, the wait for the review its own strip before it, every bar at least 12 px.
    await page.setViewportSize(SIZES[0])
    const waits = page.locator('[data-testid=tool-wait]')
    await expect(waits.first()).toBeVisible()
    for (const bar of await page.getByTestId('tool-bar').all()) {
      expect((await bar.boundingBox())!.width).toBeGreaterThanOrEqual(12)
    }

    // Esc from the composer (where the task was typed) to the review; Shift+A approves everything.
    await page.keyboard.press('Escape')
    await page.keyboard.press('Shift+A')
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })

    // Failures in plain words.
    const failed = page.locator('[data-testid=tool-card][data-status=error]')
    await expect(failed.getByTestId('failure-reason')).toContainText('check-build.js')
    await expect(page.locator('body')).not.toContainText('[HINT:')
    await expect(page.locator('[data-testid=tool-card][data-status=skipped]')).toContainText(
      "skipped because 'Check the build output' failed",
    )
    await expect(page.getByTestId('run-end')).not.toContainText('✓')
    await expect(page.getByTestId('run-end')).toContainText('One call failed')
    // Tokens and their estimated cost, for the session and for the run.
    await expect(page.getByTestId('session-usage')).toHaveText(/tokens · (~|under )\$/)
    await expect(page.getByTestId('run-end').getByTestId('run-usage')).toHaveText(/tokens · (~|under )\$/)
    // The failed command's bar starts when it ran, after the edit's run, not when the turn was queued.
    const edit = page
      .locator('[data-testid=tool-bar][data-status=ok]')
      .filter({ hasText: /app\.ts/ })
      .last()
    const command = page.locator('[data-testid=tool-bar][data-status=error]')
    expect(Number(await command.getAttribute('data-run-start'))).toBeGreaterThanOrEqual(
      Number(await edit.getAttribute('data-end')),
    )

    // Markdown: a list, code and a link that opens outside the app.
    const answer = page.getByTestId('assistant-text').filter({ hasText: 'Done:' })
    await expect(answer.locator('li')).toHaveCount(2)
    await expect(answer.locator('code').first()).toHaveText('8080')
    await expect(answer.locator('a')).toHaveAttribute('target', '_blank')
    await expect(answer.locator('a')).toHaveAttribute('rel', /noopener/)

    // A follow-up: "Fit" frames both runs, each with its flag.
    await sendTask(page, 'Also read the README')
    await expect(page.getByTestId('run-end')).toHaveCount(2, { timeout: 30_000 })
    await page.getByTestId('timeline-fit').click()
    const timeline = await box(page, 'timeline')
    const flags = page.getByTestId('run-start')
    await expect(flags).toHaveCount(2)
    for (const flag of await flags.all()) {
      const b = (await flag.boundingBox())!
      expect(b.x).toBeGreaterThanOrEqual(timeline.x)
      expect(b.x).toBeLessThan(timeline.x + timeline.width)
    }
    for (const bar of await page.getByTestId('tool-bar').all()) {
      const b = await bar.boundingBox()
      if (b) expect(b.x + b.width).toBeLessThanOrEqual(timeline.x + timeline.width)
    }
    await everySizeAndScheme(page, 'ui-newcomer-done', async (size) => {
      // The replay controls fit the window.
      const next = await box(page, 'replay-next-approval')
      expect(next.x + next.width, `replay controls at ${size.width}x${size.height}`).toBeLessThanOrEqual(
        size.width,
      )
    })
  } finally {
    await stop()
  }
})
