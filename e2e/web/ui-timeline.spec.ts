import { expect, test } from '@playwright/test'
import { screenshots, sendTask, setSettings, startAppWithModel } from './ui-support'

const scenario = {
  turns: [
    {
      blocks: [
        { text: 'Reading the three modules, then checking the build folder.' },
        { tool: 'read_file', input: { path: 'src/a.ts' } },
        { tool: 'read_file', input: { path: 'src/b.ts' } },
        { tool: 'read_file', input: { path: 'src/c.ts' } },
        { tool: 'bash', input: { command: 'ls no-such-folder', description: 'List the build folder' } },
        { tool: 'write_file', input: { path: 'src/d.ts', content: 'export const d = 4\n' } },
        { tool: 'edit_file', input: { path: 'src/a.ts', old_string: 'a = 1', new_string: 'a = 10' } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'The folder is missing, so I stopped before changing anything.' }], stop: 'end_turn' },
  ],
}

// Big enough that reading takes a moment, so the parallel reads visibly overlap.
const big = (name: string): string =>
  Array.from({ length: 4000 }, (_, i) => `export const ${name}${i} = ${i} // ${'x'.repeat(60)}`).join('\n') +
  '\n'

test('the timeline shows parallel reads overlapping, the failed command serial, and skipped siblings linked to it', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'src/a.ts': 'export const a = 1\n' + big('a'), 'src/b.ts': big('b'), 'src/c.ts': big('c') },
    scenario,
  )
  try {
    await page.goto(app.url)
    await expect(page.getByTestId('workspace-name')).toHaveText('demo-project')
    // Batch mode starts the turn's safe calls together; edits need no review here so the turn runs through.
    await setSettings(page, { scheduler: 'batch', autoApproveEdits: true })
    await sendTask(page, 'Check the modules and the build folder')

    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    const timeline = page.getByTestId('timeline')
    const parallel = timeline.getByTestId('lane-parallel').first()
    const serial = timeline.getByTestId('lane-serial').first()

    // Three reads on the parallel lane, finished, each on its own row because they ran at the same time.
    const reads = parallel.getByTestId('tool-bar')
    await expect(reads).toHaveCount(3)
    await expect(parallel.locator('[data-testid=tool-bar][data-status=ok]')).toHaveCount(3)
    const spans = await reads.evaluateAll((els) =>
      els.map((el) => ({
        start: Number(el.getAttribute('data-run-start')),
        end: Number(el.getAttribute('data-end')),
        top: el.getBoundingClientRect().top,
        left: el.getBoundingClientRect().left,
        right: el.getBoundingClientRect().right,
      })),
    )
    // Overlap in time: every read started before any of them finished...
    expect(Math.max(...spans.map((s) => s.start))).toBeLessThanOrEqual(Math.min(...spans.map((s) => s.end)))
    // ...and on screen: one row each, with horizontally overlapping bars.
    expect(new Set(spans.map((s) => Math.round(s.top))).size).toBe(3)
    expect(Math.max(...spans.map((s) => s.left))).toBeLessThan(Math.min(...spans.map((s) => s.right)))

    // The command is on the serial lane and failed; the write and the edit after it were skipped because of it.
    const command = serial.locator('[data-testid=tool-bar][data-status=error]')
    await expect(command).toHaveCount(1)
    const commandId = await command.getAttribute('data-call-id')
    expect(commandId).toBeTruthy()
    const skipped = serial.locator('[data-testid=tool-bar][data-status=skipped]')
    await expect(skipped).toHaveCount(2)
    for (const marker of await skipped.all()) {
      await expect(marker).toHaveAttribute('data-cause-call-id', commandId!)
      await expect(marker).toContainText("skipped because 'List the build folder' failed")
      await expect(marker).toContainText('failed')
    }
    // Nothing was written.
    await expect(page.getByTestId('tool-card').filter({ hasText: 'src/d.ts' })).toHaveAttribute(
      'data-status',
      'skipped',
    )

    // The link on a skipped marker selects the failed command, in the timeline and in the transcript.
    await skipped.first().getByTestId('skip-link').click()
    await expect(command).toHaveClass(/selected/)
    await expect(page.locator(`[data-testid=tool-card][data-call-id="${commandId}"]`)).toHaveClass(/selected/)

    // Clicking a card selects its bar; hovering a bar shows its details.
    const firstRead = page.getByTestId('tool-card').filter({ hasText: 'src/b.ts' })
    await firstRead.locator('.tool-card-toggle').click()
    const readId = await firstRead.getAttribute('data-call-id')
    await expect(page.locator(`[data-testid=tool-bar][data-call-id="${readId}"]`)).toHaveClass(/selected/)
    await page.locator(`[data-testid=tool-bar][data-call-id="${readId}"]`).hover()
    await expect(page.getByTestId('timeline-tooltip')).toContainText('src/b.ts')
    await page.mouse.move(5, 5)

    // Zoom changes the scale; "fit run" brings the whole run back in view.
    const widthBefore = (await command.boundingBox())!.width
    await page.getByRole('button', { name: 'Zoom in' }).click()
    await page.getByRole('button', { name: 'Zoom in' }).click()
    await expect.poll(async () => (await command.boundingBox())!.width).toBeGreaterThan(widthBefore * 1.3)
    await page.getByTestId('timeline-fit').click()
    await expect
      .poll(async () => Math.round((await command.boundingBox())!.width))
      .toBe(Math.round(widthBefore))

    const session = page.getByTestId('session-item').first()
    await expect(session).toHaveAttribute('data-status', 'finished')
    await screenshots(page, 'ui-timeline-skipped')
  } finally {
    await stop()
  }
})

test('following a live run keeps the header of its latest turn and that turn’s first lane in view', async ({
  page,
}) => {
  // Enough turns to overflow the timeline pane, then a model slow to answer so the run stays live meanwhile.
  const reads = ['a', 'b', 'c'].map((f) => ({ tool: 'read_file', input: { path: `${f}.txt` } }))
  const turns = Array.from({ length: 12 }, () => ({ blocks: reads, stop: 'tool_use' }))
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' },
    {
      turns: [...turns, { blocks: [{ text: 'All read.' }], stop: 'end_turn', firstTokenMs: 15_000 }],
    },
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Read the three files, twelve times')
    const timeline = page.getByTestId('timeline')
    await expect(timeline.locator('[data-testid=timeline-turn][data-turn="12"]')).toHaveCount(1, {
      timeout: 30_000,
    })
    await expect(page.getByTestId('wait-notice')).toBeVisible({ timeout: 10_000 })
    const inView = async () => {
      const box = await timeline.evaluate((el) => {
        const turns = [...el.querySelectorAll<HTMLElement>('[data-testid=timeline-turn]')]
        const last = turns.sort((a, b) => Number(b.dataset.turn) - Number(a.dataset.turn))[0]!
        const header = last.querySelector('.tl-turn-header')!.getBoundingClientRect()
        const lane = last.querySelector('.tl-lane')!.getBoundingClientRect()
        const ruler = el.querySelector('.timeline-ruler')!.getBoundingClientRect()
        const pane = el.getBoundingClientRect()
        return {
          turn: last.dataset.turn,
          scrolled: el.scrollTop,
          headerTop: header.top,
          rulerBottom: ruler.bottom,
          firstRowBottom: lane.top + 24,
          paneBottom: pane.top + el.clientHeight,
        }
      })
      expect(box.turn).toBe('12')
      // The pane did scroll to follow the run...
      expect(box.scrolled).toBeGreaterThan(0)
      // ...to where the turn's header sits below the sticky ruler and its first lane row is on screen.
      expect(box.headerTop).toBeGreaterThanOrEqual(box.rulerBottom - 1)
      expect(box.firstRowBottom).toBeLessThanOrEqual(box.paneBottom + 1)
    }
    await inView()
    // The pane gets smaller (a smaller window): the turn is followed again, its header and first row still shown.
    const size = page.viewportSize()!
    await page.setViewportSize({ width: size.width, height: size.height - 200 })
    await expect(inView).toPass({ timeout: 3_000 })
    await screenshots(page, 'ui-timeline-follow')
  } finally {
    await stop()
  }
})
