import { expect, test, type Locator, type Page } from '@playwright/test'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startWebApp } from '../fixtures'
import { original, scenario as rewindScenario } from './rewind-scenario'
import { axeViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

/**
 * What a newcomer trips on in a small window (800x600) and in dark mode, screen by screen: names on the timeline
 * drawn over by waits or by each other, a review whose call hides under its header, a header that cuts its counts
 * short, dialogs whose buttons scroll away or let their content show beneath them, a transcript squeezed to a
 * slit, and a rewind that calls a file it kept "taken back".
 */

const SMALL = { width: 800, height: 600 }
const LARGE = { width: 1280, height: 800 }
const SCHEMES = ['light', 'dark'] as const

/**
 * Every pair of things drawn on the timeline that cover each other: a wait and a name or another call's bar, two
 * names, a name and another call's bar. Read in one pass, so bars moving with "now" are measured in one frame.
 */
async function timelineOverlaps(page: Page): Promise<string[]> {
  return page.getByTestId('timeline').evaluate((timeline) => {
    type Item = { kind: string; callId: string; box: DOMRect; text: string }
    const items: Item[] = []
    for (const el of timeline.querySelectorAll<HTMLElement>('[data-testid=tool-wait]'))
      items.push({ kind: 'wait', callId: el.dataset.callId ?? '', box: el.getBoundingClientRect(), text: '' })
    for (const bar of timeline.querySelectorAll<HTMLElement>('button[data-testid=tool-bar]')) {
      const callId = bar.dataset.callId ?? ''
      items.push({ kind: 'bar', callId, box: bar.getBoundingClientRect(), text: bar.textContent ?? '' })
      const label = bar.querySelector<HTMLElement>('.bar-label')
      // A name inside its bar is part of the bar; one beside it (either side) is drawn on the lane.
      if (label && !bar.classList.contains('label-inside'))
        items.push({
          kind: 'name',
          callId,
          box: label.getBoundingClientRect(),
          text: label.textContent ?? '',
        })
    }
    const covers = (a: DOMRect, b: DOMRect) =>
      Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1
    const out: string[] = []
    for (let i = 0; i < items.length; i++) {
      for (let j = i + 1; j < items.length; j++) {
        const a = items[i]!
        const b = items[j]!
        if (a.kind === 'bar' && b.kind === 'bar') continue // bars share rows only where they do not meet
        if (a.callId === b.callId && (a.kind === 'bar' || b.kind === 'bar')) continue // its own bar
        if (a.box.width === 0 || b.box.width === 0) continue
        const at = (r: DOMRect) => `[${Math.round(r.left)}..${Math.round(r.right)} @${Math.round(r.top)}]`
        if (covers(a.box, b.box))
          out.push(
            `${a.kind} of ${a.text || a.callId} ${at(a.box)} covers ${b.kind} of ${b.text || b.callId} ${at(b.box)}`,
          )
      }
    }
    return out
  })
}

/** Whether the element is what the pointer would hit at its centre: on screen, and covered by nothing. */
async function reachable(locator: Locator): Promise<boolean> {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect()
    if (r.bottom > innerHeight || r.right > innerWidth || r.top < 0 || r.left < 0) return false
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)
    return hit !== null && (el === hit || el.contains(hit))
  })
}

async function noHorizontalScroll(page: Page, what: string): Promise<void> {
  expect(
    await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth),
    `${what}: no horizontal scrollbar`,
  ).toBe(true)
}

async function inEachScheme(page: Page, check: (scheme: (typeof SCHEMES)[number]) => Promise<void>) {
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.waitForTimeout(100)
    await check(scheme)
  }
  await page.emulateMedia({ colorScheme: null })
}

const big = (name: string): string =>
  Array.from({ length: 3000 }, (_, i) => `export const ${name}${i} = ${i} // ${'x'.repeat(40)}`).join('\n') +
  '\n'

// A turn of parallel reads, then a turn whose writes and command queue together behind one review, with a read
// after them: several calls wait at once, in both lanes, and each waits behind the one before it in its lane.
const lanesScenario = {
  turns: [
    {
      blocks: [
        { text: 'Reading the app and its helpers.' },
        { tool: 'read_file', input: { path: 'src/app.ts' } },
        { tool: 'read_file', input: { path: 'src/util.ts' } },
        { tool: 'grep', input: { pattern: 'port' } },
        { tool: 'glob', input: { pattern: '**/*.ts' } },
      ],
      stop: 'tool_use',
    },
    {
      blocks: [
        { text: 'Changing the port, adding a module, then checking the build.' },
        { tool: 'read_file', input: { path: 'src/util.ts' } },
        {
          tool: 'edit_file',
          input: { path: 'src/app.ts', old_string: 'port = 3000', new_string: 'port = 8080' },
        },
        { tool: 'write_file', input: { path: 'src/new.ts', content: 'export const n = 1\n' } },
        { tool: 'bash', input: { command: 'node check-build.js', description: 'Check the build output' } },
        { tool: 'read_file', input: { path: 'README.md' } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done: the port is 8080; the build check failed.' }], stop: 'end_turn' },
  ],
}

test('at 800x600 and 1280x800, light and dark: names on the lanes stay clear, the review shows the call it is on, the header keeps its counts', async ({
  page,
}) => {
  test.setTimeout(120_000)
  const { app, stop } = await startAppWithModel(
    {
      'src/app.ts': 'export const port = 3000\n' + big('a'),
      'src/util.ts': big('u'),
      'README.md': '# Demo\n',
    },
    lanesScenario,
  )
  try {
    await page.setViewportSize(SMALL)
    await page.goto(app.url)
    await sendTask(page, 'Move the app to port 8080 and add a module')
    const panel = page.getByTestId('approval-panel')
    await expect(panel.getByTestId('approval-item')).toHaveCount(3, { timeout: 30_000 })
    await expect(page.locator('[data-testid=tool-wait]').first()).toBeVisible()

    for (const size of [SMALL, LARGE]) {
      await page.setViewportSize(size)
      const at = `${size.width}x${size.height}`
      // The waiting calls: no wait drawn over a name, no two names over each other.
      await expect
        .poll(() => timelineOverlaps(page), { message: `timeline while waiting at ${at}` })
        .toEqual([])
      // The review opened on its first call: its name and kind show, not hidden under "Review before it runs".
      const head = panel.getByTestId('approval-item').first().locator('.approval-item-head')
      await expect.poll(() => reachable(head), { message: `first call's name at ${at}` }).toBe(true)
      await expect.poll(() => reachable(page.getByTestId('approval-approve-all'))).toBe(true)
      await inEachScheme(page, async (scheme) => {
        expect(
          await axeViolations(page, ['[data-testid=approval-panel]', '[data-testid=timeline]']),
          `review and timeline at ${at}, ${scheme}`,
        ).toEqual([])
      })
      await noHorizontalScroll(page, `review at ${at}`)
    }

    // A call further down, reached by keyboard, shows its name too.
    await page.setViewportSize(SMALL)
    await panel.focus()
    await page.keyboard.press('j')
    await page.keyboard.press('j')
    const third = panel.getByTestId('approval-item').nth(2)
    await expect(third).toHaveClass(/focused/)
    await expect.poll(() => reachable(third.locator('.approval-item-head'))).toBe(true)

    await panel.getByTestId('approval-approve-all').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })

    for (const size of [SMALL, LARGE]) {
      await page.setViewportSize(size)
      const at = `${size.width}x${size.height}`
      await page.getByTestId('timeline-fit').click()
      // The finished turn: the calls that queued together ran one after another, each wait now behind a bar.
      await expect.poll(() => timelineOverlaps(page), { message: `timeline finished at ${at}` }).toEqual([])
      // The header says "8 done · 1 failed" and what it cost in full, on a second line if need be.
      for (const part of ['.header-counts', '[data-testid=session-usage]']) {
        const whole = await page.locator(`.session-header ${part}`).evaluate((el) => {
          const r = el.getBoundingClientRect()
          const header = el.closest('header')!.getBoundingClientRect()
          return el.scrollWidth <= el.clientWidth && r.bottom <= header.bottom && r.right <= header.right
        })
        expect(whole, `${part} whole at ${at}`).toBe(true)
      }
      // The lanes' names fit their column.
      for (const label of await page.locator('.tl-lane-label').all()) {
        expect(await label.evaluate((el) => el.scrollWidth <= el.clientWidth), `lane name at ${at}`).toBe(
          true,
        )
      }
      // A bar's details say which lane it ran in, in words, and stay inside the window.
      await page.locator('[data-testid=lane-parallel] [data-testid=tool-bar]').last().hover()
      const tooltip = page.getByTestId('timeline-tooltip')
      await expect(tooltip).toContainText('Parallel: ran beside the others of group')
      const tip = (await tooltip.boundingBox())!
      expect(tip.x + tip.width, `tooltip at ${at}`).toBeLessThanOrEqual(size.width)
      expect(tip.y + tip.height, `tooltip at ${at}`).toBeLessThanOrEqual(size.height)
      await page.mouse.move(2, 2)
      // The controls under the transcript say they are a replay, and all fit the window.
      const replay = page.getByTestId('replay-bar')
      await expect(replay.getByText('Replay', { exact: true })).toBeVisible()
      const overflow = await replay.evaluate((bar) =>
        [...bar.children]
          .filter((c) => c.getBoundingClientRect().right > bar.getBoundingClientRect().right + 1)
          .map((c) => c.textContent),
      )
      expect(overflow, `replay controls at ${at}`).toHaveLength(0)
      await noHorizontalScroll(page, `finished session at ${at}`)
    }
  } finally {
    await stop()
  }
})

test('at 800x600: the rewind dialog keeps its buttons below its content and says which files it keeps; a kept change is not struck; the transcript keeps its share', async ({
  page,
}) => {
  test.setTimeout(120_000)
  const { app, stop } = await startAppWithModel({ 'f.txt': original, 'g.txt': 'bye\n' }, rewindScenario)
  try {
    await page.setViewportSize(SMALL)
    await page.goto(app.url)
    await sendTask(page, 'Fix lines')
    const panel = page.getByTestId('approval-panel')
    await expect(panel.getByTestId('approval-item')).toHaveCount(2, { timeout: 30_000 })
    await panel.getByTestId('approval-approve-all').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    await writeFile(join(app.workspace, 'f.txt'), 'the user rewrote it\n')

    await page.getByTestId('rewind-to-here').last().click()
    const dialog = page.getByTestId('rewind-dialog')
    await expect(dialog.getByTestId('rewind-conflict')).toBeVisible()
    const actions = dialog.locator('.modal-actions')
    await inEachScheme(page, async (scheme) => {
      // The buttons sit at the dialog's bottom edge: nothing of the diffs shows below them.
      const gap = await actions.evaluate((el) => {
        const modal = el.closest('.modal')!
        return modal.getBoundingClientRect().bottom - el.getBoundingClientRect().bottom
      })
      expect(gap, `space under the buttons, ${scheme}`).toBeLessThanOrEqual(2)
      await expect.poll(() => reachable(dialog.getByTestId('rewind-apply'))).toBe(true)
      expect(await axeViolations(page, ['[data-testid=rewind-dialog]']), `rewind dialog, ${scheme}`).toEqual(
        [],
      )
    })
    // Until the user chooses, the file changed since is kept, and the dialog counts it out.
    const f = dialog.locator('[data-testid=rewind-file][data-path="f.txt"]')
    await expect(f.locator('.badge')).toHaveText('kept as it is now')
    await expect(dialog).toContainText('1 of 2 files goes back as shown')
    await f.getByTestId('conflict-rewind').check()
    await expect(f.locator('.badge')).toHaveText('restored')
    await expect(dialog).toContainText('2 files go back as shown')
    await f.getByTestId('conflict-keep').check()
    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-skipped')).toContainText('f.txt')
    await dialog.getByTestId('rewind-cancel').click()

    // A short title keeps its status beside it, with no blank stretch between.
    const blank = await page.locator('.session-heading').evaluate((el) => {
      const text = document.createRange()
      text.selectNodeContents(el)
      return el.getBoundingClientRect().width - text.getBoundingClientRect().width
    })
    expect(blank, 'room left empty beside a short title').toBeLessThanOrEqual(2)

    // With the "rewound" banner above and the replay bar and composer below, the transcript keeps half the room.
    await expect(page.getByTestId('session-paused-banner')).toBeVisible()
    const panes = () =>
      page.evaluate(() => {
        const height = (selector: string) => document.querySelector(selector)!.getBoundingClientRect().height
        return `transcript ${height('.transcript-pane')} px, timeline ${height('.timeline-pane')} px: ${height('.transcript-pane') >= height('.timeline-pane') - 8 ? 'shared' : 'squeezed'}`
      })
    await expect.poll(panes).toMatch(/shared$/)

    // The write of f.txt was not taken back (the file was kept): its card says so and is not struck through.
    // The rewind's row lists only the change it took back.
    const taken = page.getByTestId('rewind-row').getByTestId('rewind-row-call')
    await expect(taken).toHaveCount(1)
    await expect(taken).toContainText('Edit g.txt')
    // (Cards are reached from their bars: the transcript only draws what is near the view.)
    await page.locator('[data-testid=lane-serial] [data-testid=tool-bar]:not(.rewound)').click()
    const write = page.getByTestId('tool-card').filter({ hasText: 'Write f.txt' })
    await expect(write.getByTestId('rewound-note')).toContainText('Not taken back by the rewind at')
    await expect(write).not.toHaveClass(/rewound/)
    const writeId = await write.getAttribute('data-call-id')
    await expect(page.locator(`[data-testid=tool-bar][data-call-id="${writeId}"]`)).not.toHaveClass(/rewound/)
    // The edit of g.txt was: struck on the timeline and on its card (reached from its bar).
    const editBar = page.locator('[data-testid=tool-bar].rewound')
    await expect(editBar).toHaveCount(1)
    await editBar.click()
    const edit = page.getByTestId('tool-card').filter({ hasText: 'Edit g.txt' })
    await expect(edit.getByTestId('rewound-note')).toContainText('Taken back by the rewind at')
    await expect(edit).toHaveClass(/rewound/)

    await noHorizontalScroll(page, 'after the rewind')
  } finally {
    await stop()
  }
})

test('at 800x600: the folder browser reads its path plainly, in light and dark', async ({ page }) => {
  const { app, stop } = await startWebApp({ 'README.md': '# Demo\n' }, {}, { openWorkspace: false })
  try {
    await page.setViewportSize(SMALL)
    await page.goto(app.url)
    const browser = page.getByTestId('folder-browser')
    await browser.getByTestId('folder-home').click()
    // "/ tmp / lanes-e2e-…", not "/ / tmp / …": the root's own "/" is its separator.
    const crumbs = browser.getByTestId('folder-crumb')
    await expect(crumbs.first()).toHaveText('/')
    expect(await browser.locator('.folder-crumb-sep').count()).toBe((await crumbs.count()) - 2)
    await inEachScheme(page, async (scheme) => {
      await expect.poll(() => reachable(browser.getByTestId('folder-open-current')), scheme).toBe(true)
      expect(
        await axeViolations(page, ['[data-testid=folder-browser]']),
        `folder browser, ${scheme}`,
      ).toEqual([])
    })
  } finally {
    await stop()
  }
})

test('at 800x600: Settings keeps Save on screen while its options scroll, in light and dark', async ({
  page,
}) => {
  const { app, stop } = await startWebApp({ 'README.md': '# Demo\n' })
  try {
    await page.setViewportSize(SMALL)
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const dialog = page.getByTestId('settings-dialog')
    await expect(dialog).toBeVisible()
    await inEachScheme(page, async (scheme) => {
      await expect.poll(() => reachable(dialog.getByTestId('settings-save')), `Save, ${scheme}`).toBe(true)
      expect(await axeViolations(page, ['[data-testid=settings-dialog]']), `settings, ${scheme}`).toEqual([])
    })
    // Still there with the first field focused and after scrolling to the last one.
    await dialog.getByTestId('settings-bash-timeout').scrollIntoViewIfNeeded()
    await expect.poll(() => reachable(dialog.getByTestId('settings-bash-timeout'))).toBe(true)
    await expect.poll(() => reachable(dialog.getByTestId('settings-save'))).toBe(true)
    await noHorizontalScroll(page, 'settings')
  } finally {
    await stop()
  }
})

test('at 800x600: a refused key says so and opens Settings in one click, in light and dark', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'a\n' },
    {
      turns: [
        { blocks: [{ text: 'Reading.' }, { tool: 'read_file', input: { path: 'a.txt' } }], stop: 'tool_use' },
        { blocks: [{ text: 'x' }], http: { status: 401, times: 9 }, errorMessage: 'invalid x-api-key' },
      ],
    },
  )
  try {
    await page.setViewportSize(SMALL)
    await page.goto(app.url)
    await sendTask(page, 'Read a.txt')
    const end = page.getByTestId('run-end')
    await expect(end).toHaveAttribute('data-status', 'failed', { timeout: 30_000 })
    await expect(end).toContainText('The API key was refused')
    await inEachScheme(page, async (scheme) => {
      await expect.poll(() => reachable(end.getByTestId('run-end-settings')), scheme).toBe(true)
      expect(await axeViolations(page, ['[data-testid=run-end]']), `failed run, ${scheme}`).toEqual([])
    })
    await end.getByTestId('run-end-settings').click()
    await expect(page.getByTestId('settings-dialog')).toBeVisible()
    await expect(page.getByTestId('settings-api-key')).toBeVisible()
  } finally {
    await stop()
  }
})

// Issue 23, item 8: a review of two changes, one of them in many parts, one staged as decided.
const reviewLines = (n: number, mark = '') =>
  Array.from({ length: n }, (_, i) => (mark && i % 15 === 4 ? `${mark} ${i + 1}` : `line ${i + 1}`)).join(
    '\n',
  ) + '\n'
const reviewScenario = {
  turns: [
    { blocks: [{ tool: 'read_file', input: { path: 'notes.txt' } }], stop: 'tool_use' },
    {
      blocks: [
        { text: 'Marking every fifteenth line and adding a summary.' },
        { tool: 'write_file', input: { path: 'notes.txt', content: reviewLines(150, 'MARKED') } },
        {
          tool: 'write_file',
          input: { path: 'summary.md', content: '# Summary\n\nTen lines were marked.\n' },
        },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

/** The elements of the review that scroll (their content overflows and they let it scroll), text fields aside. */
async function reviewScrollers(page: Page): Promise<string[]> {
  return page.getByTestId('approval-panel').evaluate((panel) => {
    const out: string[] = []
    for (const el of [panel, ...panel.querySelectorAll<HTMLElement>('*')]) {
      if (el instanceof HTMLTextAreaElement || el instanceof HTMLInputElement) continue
      const style = getComputedStyle(el)
      const scrolls = (overflow: string) => overflow === 'auto' || overflow === 'scroll'
      if (scrolls(style.overflowY) && el.scrollHeight > el.clientHeight + 1)
        out.push(el.className.toString() || el.tagName)
    }
    return out
  })
}

test('at 800x600 the review is usable: most of the window, one scroller, the diff once with its parts in it, the transcript and lanes kept, in light and dark', async ({
  page,
}) => {
  test.setTimeout(120_000)
  const { app, stop } = await startAppWithModel({ 'notes.txt': reviewLines(150) }, reviewScenario)
  try {
    await page.setViewportSize(SMALL)
    await page.goto(app.url)
    await sendTask(page, 'Mark every fifteenth line and add a summary')
    const panel = page.getByTestId('approval-panel')
    const items = panel.getByTestId('approval-item')
    await expect(items).toHaveCount(2, { timeout: 30_000 })
    await expect(items.first().getByTestId('hunk-item')).toHaveCount(10)

    const box = async (selector: string) => (await page.locator(selector).first().boundingBox())!
    const header = await box('.approval-header')
    const body = await box('.approval-body')
    // The review's chrome is one line; what is reviewed gets the room (it had 176 px at first, 178 px before this).
    expect(header.height, 'review header height').toBeLessThanOrEqual(44)
    expect(body.height, 'room for the changes').toBeGreaterThanOrEqual(215)
    expect((await box('[data-testid=approval-panel]')).height).toBeGreaterThanOrEqual(255)
    // The conversation and the lanes keep a share; the composer and Stop stay on screen.
    expect((await box('.transcript-pane')).height, 'transcript share').toBeGreaterThanOrEqual(60)
    await expect(page.getByTestId('transcript')).toBeVisible()
    expect((await box('.timeline-pane')).height, 'timeline share').toBeGreaterThanOrEqual(110)
    await expect.poll(() => reachable(page.getByTestId('run-stop'))).toBe(true)
    await expect.poll(() => reachable(panel.getByTestId('approval-approve-all'))).toBe(true)
    // "Nothing happens until you decide" is said whole, beside the title and the buttons.
    const subtitle = panel.locator('.approval-header p')
    expect(await subtitle.evaluate((el) => (el as HTMLElement).innerText)).toBe(
      'Nothing happens until you decide.',
    )
    expect(
      await subtitle.evaluate((el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight),
    ).toBe(true)

    // The diff once, its parts in it, and only the review scrolls: none of its diffs is a second scroller.
    for (const item of await items.all()) await expect(item.getByTestId('diff-view')).toHaveCount(1)
    await expect(items.first().getByTestId('diff-view').getByTestId('hunk-apply')).toHaveCount(10)
    expect(await reviewScrollers(page)).toEqual(['approval-body'])

    // A decided call shows its diff the same way (no box of its own that scrolls); the next call's buttons are
    // reached by scrolling the review alone.
    await items.first().getByTestId('approval-approve').scrollIntoViewIfNeeded()
    await expect.poll(() => reachable(items.first().getByTestId('approval-approve'))).toBe(true)
    await items.first().getByTestId('approval-approve').click()
    await expect(items.first()).toHaveClass(/staged/)
    expect(await reviewScrollers(page)).toEqual(['approval-body'])
    await items.nth(1).locator('.approval-item-head').scrollIntoViewIfNeeded()
    await expect.poll(() => reachable(items.nth(1).locator('.approval-item-head'))).toBe(true)
    await items.nth(1).getByTestId('approval-approve').scrollIntoViewIfNeeded()
    await expect.poll(() => reachable(items.nth(1).getByTestId('approval-approve'))).toBe(true)
    await noHorizontalScroll(page, 'review at 800x600')

    await inEachScheme(page, async (scheme) => {
      expect(await axeViolations(page, ['[data-testid=approval-panel]']), `review, ${scheme}`).toEqual([])
    })
    await screenshots(page, 'review-usable-800x600')
    await items.nth(1).getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
  } finally {
    await stop()
  }
})
