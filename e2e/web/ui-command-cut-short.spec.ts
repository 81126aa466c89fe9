import { expect, test } from '@playwright/test'
import type { ChildProcess } from 'node:child_process'
import { lstat, readdir, readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { endChild, spawnLanesWeb } from '../fixtures'
import { axeViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// Issue 20: an approved command still running when Lanes dies (SIGKILL, as a crash or a power cut would end it).
// Nothing it changed has landed; when the user opens the session again and continues it, everything the command
// had changed by then waits for the per-file review, whose heading says the command was cut short. Only what is
// accepted lands. Linux with bubblewrap only (the capture needs an overlay in a user namespace).

const slow = [
  "const fs = require('fs')",
  "fs.writeFileSync('out.txt', 'half done\\n')",
  "fs.writeFileSync('new.txt', 'made before the end\\n')",
  "console.log('wrote both files')",
  'setTimeout(() => {}, 120000)',
].join('\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'bash', input: { command: 'node slow.js', description: 'A long job' } }] },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

/** The names of the files under the sessions folder (a running command's layer is there). */
async function inLayer(sessionsDir: string): Promise<string[]> {
  const entries = await readdir(sessionsDir, { recursive: true }).catch(() => [])
  return entries.map((e) => basename(e))
}

test('a command cut short by Lanes’ end has its changes reviewed on the next start; only what is accepted lands', async ({
  page,
}) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  const { app, model, stop } = await startAppWithModel({ 'out.txt': 'before\n', 'slow.js': slow }, scenario)
  let second: ChildProcess | undefined
  try {
    await page.goto(app.url)
    await sendTask(page, 'Run the long job')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-approve').click()
    // The command has written both files once they are in its layer, in the session's folder.
    await expect
      .poll(() => inLayer(app.sessionsDir), { timeout: 30_000 })
      .toEqual(expect.arrayContaining(['new.txt', 'out.txt']))

    // Lanes dies with the command running: nothing of it has landed.
    const exited = new Promise((r) => app.process.once('exit', r))
    app.process.kill('SIGKILL')
    await exited
    expect(await readFile(join(app.workspace, 'out.txt'), 'utf8')).toBe('before\n')
    await expect(lstat(join(app.workspace, 'new.txt'))).rejects.toThrow()

    // `lanes web` again on the same workspace and sessions folder: the user's next start of the app.
    const next = await spawnLanesWeb(app.workspace, app.sessionsDir, {
      LANES_NO_KEYCHAIN: '1',
      ANTHROPIC_BASE_URL: model.baseUrl,
      ANTHROPIC_API_KEY: 'sk-ant-test-ui-0000',
    })
    second = next.child
    // A newcomer's small window: the review must fit and read plainly there too.
    await page.setViewportSize({ width: 800, height: 600 })
    await page.goto(next.url)
    await page.getByTestId('session-item').first().click()
    await expect(page.getByTestId('session-paused-banner')).toContainText('interrupted')
    await page.getByTestId('session-continue').click()

    const review = page.getByTestId('held-review')
    await expect(review).toBeVisible({ timeout: 30_000 })
    // Said where a newcomer reads it, in the small window too.
    await expect(review.getByTestId('held-cut-short')).toBeVisible()
    await expect(review.getByTestId('held-cut-short')).toContainText('was cut short when Lanes stopped')
    const file = (path: string) => review.locator(`[data-testid=held-file][data-path="${path}"]`)
    await expect(file('out.txt')).toContainText('half done')
    await expect(file('new.txt')).toContainText('made before the end')
    // Neither file is protected: held because the command never finished, and no false warning says otherwise.
    await expect(review.getByTestId('protected-badge')).toHaveCount(0)
    await expect(review.getByTestId('held-warning')).toHaveCount(0)
    expect(await axeViolations(page, ['[data-testid=held-review]'])).toEqual([])
    await screenshots(page, 'command-cut-short-review')

    await file('new.txt').getByTestId('held-accept').click()
    await file('out.txt').getByTestId('held-reject').click()
    await review.getByTestId('held-apply').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'new.txt'), 'utf8')).toBe('made before the end\n')
    expect(await readFile(join(app.workspace, 'out.txt'), 'utf8')).toBe('before\n')
    const card = page.locator('[data-testid=tool-card]', { hasText: 'node slow.js' }).last()
    await expect(card.getByTestId('command-held')).toContainText('1 applied, 1 not applied')
  } finally {
    try {
      if (second) await endChild(second, 'lanes web (second start)')
    } finally {
      await stop()
    }
  }
})
