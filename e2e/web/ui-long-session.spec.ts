import { expect, test } from '@playwright/test'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startWebApp } from '../fixtures'
import { setRange } from './ui-support'

// Issue 21, a day of work: a long session opens on a preview of its last turns, then becomes the whole session
// (counts, replay from its start), and a folder of many sessions lists them all through a list that mounts only
// the rows in view.

const TURNS = 150

/** A finished session of TURNS turns, each a read beside a search and a command after them (about 1,800 events). */
async function writeLongSession(sessionsDir: string, workspace: string, sessionId: string, at0: number) {
  const events: Record<string, unknown>[] = []
  let at = at0
  const add = (e: Record<string, unknown>, advance = 50): void => {
    at += advance
    events.push({ ...e, at, seq: events.length })
  }
  add({
    type: 'session.created',
    sessionId,
    workspace,
    title: `A long day ${sessionId}`,
    settings: { model: 'claude-sonnet-4-5', scheduler: 'streaming', siblingSkip: true, demo: false },
  })
  add({ type: 'run.started', runId: 'r1', task: 'Keep going' })
  for (let turn = 1; turn <= TURNS; turn++) {
    add({ type: 'turn.started', runId: 'r1', turn }, 3000)
    add({ type: 'assistant.delta', turn, index: 0, text: `Turn ${turn} of the day.` })
    const calls = [
      {
        id: `t${turn}-read`,
        name: 'read_file',
        input: { path: 'a.txt' },
        safe: true,
        lane: { kind: 'parallel', group: 0 },
      },
      {
        id: `t${turn}-grep`,
        name: 'grep',
        input: { pattern: 'x' },
        safe: true,
        lane: { kind: 'parallel', group: 0 },
      },
      {
        id: `t${turn}-cmd`,
        name: 'bash',
        input: { command: 'npm test' },
        safe: false,
        lane: { kind: 'serial' },
      },
    ]
    calls.forEach((c, i) =>
      add(
        {
          type: 'tool.queued',
          callId: c.id,
          turn,
          index: i + 1,
          name: c.name,
          input: c.input,
          safe: c.safe,
          lane: c.lane,
        },
        5,
      ),
    )
    for (const c of calls) {
      add({ type: 'tool.started', callId: c.id }, 5)
      add(
        { type: 'tool.finished', callId: c.id, isError: false, output: `${c.name} ok`, durationMs: 200 },
        200,
      )
    }
  }
  add({ type: 'run.finished', runId: 'r1', reason: 'end_turn' }, 500)
  await mkdir(sessionsDir, { recursive: true })
  await writeFile(
    join(sessionsDir, `${sessionId}.jsonl`),
    events.map((e) => JSON.stringify(e)).join('\n') + '\n',
  )
  return events.length
}

test('a long session shows its last turns first, then is whole: its counts, its replay from the start', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 })
  const { app, stop } = await startWebApp({ 'a.txt': 'x\n' })
  try {
    const count = await writeLongSession(
      app.sessionsDir,
      app.workspace,
      'long-day',
      Date.UTC(2026, 10, 30, 9),
    )
    expect(count).toBeGreaterThan(1500)
    await page.goto(app.url)
    // Whether the preview was ever on screen, caught however briefly it stays.
    await page.evaluate(() => {
      const w = window as { sawPreview?: boolean }
      new MutationObserver(() => {
        if (document.querySelector('[data-testid=session-preview-note]')) w.sawPreview = true
      }).observe(document.body, { childList: true, subtree: true })
    })
    await page.getByTestId('session-item').first().click()
    await expect(page.getByTestId('replay-scrubber')).toBeVisible({ timeout: 30_000 })
    expect(await page.evaluate(() => (window as { sawPreview?: boolean }).sawPreview)).toBe(true)
    await expect(page.getByTestId('session-preview-note')).toHaveCount(0)

    // The whole session: every call and turn counted, the last turn's command in the transcript.
    const timeline = page.getByTestId('timeline')
    await expect(page.locator('.timeline-panel .panel-header')).toContainText(
      `${TURNS * 3} calls in ${TURNS} turns`,
    )
    await expect(page.locator(`[data-testid=tool-card][data-call-id="t${TURNS}-cmd"]`)).toBeAttached()

    // Replay from the start shows the first turn's calls, which the preview did not have.
    await setRange(page.getByTestId('replay-scrubber'), 0)
    await expect(page.getByTestId('replay-exit')).toBeVisible()
    await setRange(page.getByTestId('replay-scrubber'), 3000 + 50 * 20)
    await expect(timeline.locator('[data-testid=tool-bar][data-call-id="t1-read"]')).toBeVisible()
    await expect(timeline.locator(`[data-testid=tool-bar][data-call-id="t${TURNS}-cmd"]`)).toHaveCount(0)
  } finally {
    await stop()
  }
})

test('a folder of 300 sessions lists every one, mounting only the rows in view', async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 900 })
  const { app, stop } = await startWebApp({ 'a.txt': 'x\n' })
  try {
    await mkdir(app.sessionsDir, { recursive: true })
    const t0 = Date.UTC(2026, 10, 30, 9)
    for (let i = 0; i < 300; i++) {
      const id = `s${String(i).padStart(3, '0')}`
      const created = {
        type: 'session.created',
        sessionId: id,
        workspace: app.workspace,
        title: `Session ${i}`,
        settings: { model: 'claude-sonnet-4-5', scheduler: 'streaming', siblingSkip: true, demo: false },
        at: t0 + i * 60_000,
        seq: 0,
      }
      await writeFile(join(app.sessionsDir, `${id}.jsonl`), JSON.stringify(created) + '\n')
    }
    await page.goto(app.url)
    const list = page.getByTestId('session-list')
    await expect(list).toHaveAttribute('data-count', '300')
    // Newest first; far fewer rows mounted than listed.
    await expect(list.getByTestId('session-item').first()).toHaveAttribute('data-session-id', 's299')
    expect(await list.getByTestId('session-item').count()).toBeLessThan(60)
    // Scrolled to its end, the list shows the oldest, which opens.
    await list.evaluate((el) => (el.scrollTop = el.scrollHeight))
    const oldest = list.locator('[data-session-id=s000]')
    await expect(oldest).toBeVisible()
    await oldest.click()
    await expect(page.getByRole('heading', { name: 'Session 0' })).toBeVisible()
  } finally {
    await stop()
  }
})
