import { expect, test } from '@playwright/test'
import { loadEvents, screenshots, sendTask, setRange, startAppWithModel } from './ui-support'

const read = (path: string) => ({ tool: 'read_file', input: { path } })
const paced = { tokensPerSecond: 400, firstTokenMs: 250 }

test('a finished session replays: scrubbing to the middle shows only the calls that had started by then', async ({
  page,
}) => {
  const files = { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n', 'd.txt': 'd\n' }
  const { app, stop } = await startAppWithModel(files, {
    turns: [
      {
        blocks: [{ text: 'First the a and b files.' }, read('a.txt'), read('b.txt')],
        stop: 'tool_use',
        ...paced,
      },
      { blocks: [{ text: 'Then c.' }, read('c.txt')], stop: 'tool_use', ...paced },
      {
        blocks: [{ text: 'And d.' }, read('d.txt'), { tool: 'glob', input: { pattern: '*.txt' } }],
        stop: 'tool_use',
        ...paced,
      },
      { blocks: [{ text: 'All four files say their own name.' }], stop: 'end_turn', ...paced },
    ],
  })
  try {
    await page.goto(app.url)
    await sendTask(page, 'What do the text files say?')
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    await expect(page.getByTestId('tool-bar')).toHaveCount(5)

    // Open it again from the list, as one opens an old session.
    await page.reload()
    await page.getByTestId('session-item').first().click()
    await expect(page.getByTestId('session-item').first()).toHaveAttribute('data-status', 'finished')
    await expect(page.getByTestId('tool-bar')).toHaveCount(5)

    const events = await loadEvents(page)
    const first = events[0]!.at
    const last = events[events.length - 1]!.at
    const queued = events.filter((e) => e.type === 'tool.queued')
    // The middle of the session, between the second and third turns' calls.
    const middle = Math.round((queued[2]!.at + queued[1]!.at) / 2) - first
    const expected = queued.filter((e) => e.at - first <= middle).map((e) => e.callId)
    expect(expected.length).toBeGreaterThan(0)
    expect(expected.length).toBeLessThan(queued.length)

    const scrubber = page.getByTestId('replay-scrubber')
    await expect(scrubber).toHaveAttribute('max', String(last - first))
    await setRange(scrubber, middle)
    await expect(page.getByTestId('replay-exit')).toBeVisible()
    await expect
      .poll(async () =>
        (
          await page
            .getByTestId('tool-bar')
            .evaluateAll((els) => els.map((e) => e.getAttribute('data-call-id')))
        ).sort(),
      )
      .toEqual([...expected].sort())
    // The transcript shows the same moment: later calls and the end of the run are not there yet.
    await expect(page.getByTestId('tool-card')).toHaveCount(expected.length)
    await expect(page.getByTestId('run-end')).toHaveCount(0)
    await screenshots(page, 'ui-replay-middle')

    // A drag: a position every frame across the whole session, ending in the middle. While it goes on the panes
    // take the positions in turn; once it stops, both show the last one.
    await scrubber.evaluate(async (el, end) => {
      const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set
      const max = Number((el as HTMLInputElement).max)
      for (let i = 0; i <= 30; i++) {
        await new Promise((resolve) => requestAnimationFrame(resolve))
        setter?.call(el, String(i === 30 ? end : Math.round((max * (i % 10)) / 9)))
        el.dispatchEvent(new Event('input', { bubbles: true }))
      }
    }, middle)
    await expect
      .poll(async () =>
        (
          await page
            .getByTestId('tool-bar')
            .evaluateAll((els) => els.map((e) => e.getAttribute('data-call-id')))
        ).sort(),
      )
      .toEqual([...expected].sort())
    await expect(page.getByTestId('tool-card')).toHaveCount(expected.length)
    await expect(page.getByTestId('run-end')).toHaveCount(0)

    // Back to the start, then "next call" moves to the first call.
    await setRange(scrubber, 0)
    await expect(page.getByTestId('tool-bar')).toHaveCount(0)
    await page.getByTestId('replay-next-call').click()
    await expect(page.getByTestId('tool-bar')).toHaveCount(1)

    // Playing instantly reaches the end.
    await page.getByTestId('replay-speed-instant').click()
    await expect(page.getByTestId('tool-bar')).toHaveCount(5)
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished')

    // Playing at 16x from the start goes through the session and ends with everything shown.
    await page.getByTestId('replay-speed-16').click()
    await setRange(scrubber, 0)
    await expect(page.getByTestId('tool-bar')).toHaveCount(0)
    // (At 16x this session plays in well under a second: the end state is what can be checked reliably.)
    await page.getByTestId('replay-play').click()
    await expect(page.getByTestId('tool-bar')).toHaveCount(5, { timeout: 15_000 })
    await expect(page.getByTestId('replay-play')).toHaveAttribute('aria-label', 'Play replay', {
      timeout: 15_000,
    })
    await page.getByTestId('replay-exit').click()
    await expect(page.getByTestId('replay-exit')).toBeHidden()
  } finally {
    await stop()
  }
})
