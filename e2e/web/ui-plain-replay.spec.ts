import { expect, test, type Page } from '@playwright/test'
import { startWebApp } from '../fixtures'
import { REFUSAL_FOR_MODEL, REFUSED_COMMAND, writeTwoRunSession } from './session-log'
import { contrastViolations, screenshots, setRange } from './ui-support'

// Issue 23, items 6, 7 and 11, on a finished two-run session written into the app's sessions folder: failures in
// plain words, turn numbers and labels, and the replay.

async function openSession(page: Page, size: { width: number; height: number }) {
  await page.setViewportSize(size)
  const started = await startWebApp({ 'src/a.ts': 'a\n', 'src/b.ts': 'b\n' })
  const { sessionId, retrySpanMs } = await writeTwoRunSession(started.app.sessionsDir, started.app.workspace)
  await page.goto(started.app.url)
  await page.locator(`[data-testid=session-item]`).first().click()
  await expect(page.getByTestId('session-status-badge')).toHaveAttribute('data-status', 'finished')
  return { ...started, sessionId, retrySpanMs }
}

async function checkContrast(page: Page): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    expect(await contrastViolations(page), scheme).toEqual([])
  }
  await page.emulateMedia({ colorScheme: null })
}

for (const size of [
  { width: 800, height: 600 },
  { width: 1440, height: 900 },
]) {
  test(`a refused command reads in plain words, turns count from 1, runs and durations stand apart (${size.width}x${size.height})`, async ({
    page,
  }) => {
    const { stop } = await openSession(page, size)
    try {
      // Item 6: what happened, that the agent handles it, and the model's words only in the details.
      // Picked on the timeline, the call's card comes into view in the transcript.
      await page.locator('[data-testid=tool-bar][data-call-id=toolu_list]').click()
      const card = page.locator('[data-testid=tool-card][data-call-id=toolu_list]')
      await expect(card).toBeVisible()
      const reason = card.getByTestId('failure-reason')
      await expect(reason).toContainText(`Lanes did not run “${REFUSED_COMMAND}”`)
      await expect(reason).toContainText('The agent was told and will run the commands one by one.')
      await expect(reason).toHaveAttribute('data-handled', 'true')
      await expect(card.locator('.status-text')).toHaveText('Not run')
      const forModel = card.getByTestId('failure-for-model')
      await expect(forModel.locator('pre')).toBeHidden()
      await forModel.locator('summary').click()
      await expect(forModel.locator('pre')).toHaveText(REFUSAL_FOR_MODEL)
      await expect(forModel.locator('pre')).not.toContainText('HINT')
      // Calm, not an alarm: the plain sentence is not in the danger colour.
      const colours = await reason.locator('.failure-what').evaluate((el) => {
        const probe = document.createElement('span')
        probe.style.color = 'var(--danger-text)'
        document.body.append(probe)
        const danger = getComputedStyle(probe).color
        probe.remove()
        return { text: getComputedStyle(el).color, danger }
      })
      expect(colours.text).not.toBe(colours.danger)

      // Item 7: the failed attempts before the first call are not counted; the follow-up run's turn is "Turn 2".
      const timeline = page.getByTestId('timeline')
      const headers = timeline.locator('.tl-turn-title')
      await expect(headers).toHaveCount(2)
      await expect(headers.nth(0)).toContainText('Turn 1')
      await expect(headers.nth(1)).toContainText('Turn 2')
      await page.locator('[data-testid=tool-bar][data-call-id=toolu_read_a]').click()
      await expect(page.locator('[data-testid=turn-header][data-turn="3"]')).toContainText('Turn 1')
      // Markdown, loaded after the first paint, still renders the model's text.
      await expect(
        page.getByTestId('transcript').locator('.markdown strong', { hasText: 'two' }),
      ).toBeVisible()
      // "Run 2" and "Turn 2" never overlap on the timeline.
      const run = timeline.getByTestId('run-marker').last()
      await expect(run).toBeVisible()
      const title = headers.nth(1)
      const overlaps = await title.evaluate((el) => {
        const kids = [...el.querySelectorAll(':scope > *')].map((k) => k.getBoundingClientRect())
        const own = el.getBoundingClientRect()
        const button = el.parentElement
          ?.querySelector('[data-testid=rewind-to-here]')
          ?.getBoundingClientRect()
        return { right: own.right, kids: kids.map((k) => k.right), button: button?.left ?? Infinity }
      })
      expect(overlaps.right).toBeLessThanOrEqual(overlaps.button + 0.5)
      // The run that could not reach the API: its error is a sentence, its duration apart and named.
      await page.getByTestId('transcript').evaluate((el) => (el.scrollTop = 0))
      const failed = page.locator('[data-testid=run-end][data-status=failed]').first()
      await expect(failed).toContainText('(connection refused). · took 1 min 0 s')
      await expect(failed).not.toContainText('connection to Claude was lost')

      await page.mouse.move(1, 1)
      await checkContrast(page)
      await screenshots(page, `ui-plain-words-${size.width}`)
    } finally {
      await stop()
    }
  })
}

test('replay: retry time is shortened at 1x, a speed after "Next call" plays, the header keeps the session’s status, the transcript follows', async ({
  page,
}) => {
  const { stop, retrySpanMs } = await openSession(page, { width: 1440, height: 900 })
  try {
    const bar = page.getByTestId('replay-bar')
    // One name for leaving a replay.
    await bar.getByTestId('replay-speed-1').click()
    await setRange(bar.getByTestId('replay-scrubber'), 0)
    await expect(bar.getByTestId('replay-exit')).toHaveText('Exit replay')
    await expect(page.getByTestId('session-status-badge')).toHaveAttribute('data-status', 'finished')
    await expect(page.getByTestId('session-status-badge')).toHaveText('finished')

    // At 1x, the 80 s of retries before the first call pass in a few seconds.
    const startedAt = Date.now()
    await bar.getByTestId('replay-play').click()
    await expect(page.locator('[data-testid=tool-bar][data-call-id=toolu_read_a]')).toBeVisible({
      timeout: 15_000,
    })
    expect(Date.now() - startedAt).toBeLessThan(retrySpanMs / 8)
    // Never "running" while a finished session replays.
    await expect(page.getByTestId('session-status-badge')).toHaveText('finished')

    // The transcript follows the playhead: the newest row of the moment shown is in view.
    await bar.getByTestId('replay-speed-16').click()
    await expect(page.getByTestId('replay-play')).toHaveAttribute('aria-label', 'Play replay', {
      timeout: 20_000,
    })
    const inView = async (testId: string, text: string): Promise<boolean> => {
      const box = await page.getByTestId('transcript').boundingBox()
      const row = page.getByTestId(testId).filter({ hasText: text }).last()
      const r = await row.boundingBox()
      return !!box && !!r && r.y < box.y + box.height && r.y + r.height > box.y
    }
    await expect.poll(() => inView('transcript-row', 'The changelog already has it.')).toBe(true)

    // "Next call" holds the replay still; choosing a speed then plays from there.
    await setRange(bar.getByTestId('replay-scrubber'), 0)
    await bar.getByTestId('replay-next-call').click()
    await expect(page.getByTestId('replay-play')).toHaveAttribute('aria-label', 'Play replay')
    const held = await bar.getByTestId('replay-time').textContent()
    await bar.getByTestId('replay-speed-1').click()
    await expect(page.getByTestId('replay-play')).toHaveAttribute('aria-label', 'Pause replay')
    await expect(bar.getByTestId('replay-time')).not.toHaveText(held ?? '')
    await checkContrast(page)
    await screenshots(page, 'ui-replay-playing')
  } finally {
    await stop()
  }
})
