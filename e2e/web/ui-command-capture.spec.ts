import { expect, test } from '@playwright/test'
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises'
import { delimiter, isAbsolute, join } from 'node:path'
import { homedir, tmpdir } from 'node:os'
import { contrastViolations, screenshots, sendTask, startAppWithModel } from './ui-support'

// An approved command's changes (issue 20) in a real browser: captured on the sandbox's copy-on-write layer,
// shown on the command's card, and taken back by Undo on that card. Linux with bubblewrap only (the capture
// needs an overlay in a user namespace).

const script = [
  "const fs = require('fs')",
  "fs.writeFileSync('a.txt', 'changed by the command\\n')",
  "fs.writeFileSync('new.txt', 'made by the command\\n')",
  "fs.unlinkSync('gone.txt')",
  // A binary file: the card names it by its type and size, as the review of a write does, never as text.
  "fs.writeFileSync('logo.png', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'))",
].join('\n')

const scenario = {
  turns: [
    { blocks: [{ tool: 'bash', input: { command: 'node change.js', description: 'Change the files' } }] },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('a command’s changes are shown on its card and undone by Undo', async ({ page }) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'original\n', 'gone.txt': 'to be removed\n', 'change.js': script },
    scenario,
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the files')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('changed by the command\n')

    const card = page.locator('[data-testid=tool-card]', { hasText: 'node change.js' }).last()
    await expect(card.getByTestId('command-changes-summary')).toHaveText('changed 1, added 2, removed 1')
    await expect(card.getByTestId('command-changes')).toContainText('gone.txt')
    const path = (name: string) => card.getByTestId('command-changed-path').filter({ hasText: name })
    await expect(path('logo.png')).toHaveText('added logo.png (binary: PNG image, 16 bytes)')
    await expect(path('a.txt')).toHaveText('changed a.txt (1 line, 23 bytes)')
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      expect(await contrastViolations(page), scheme).toEqual([])
    }
    await screenshots(page, 'command-capture-binary')

    await card.getByTestId('undo-button').click()
    const dialog = page.getByTestId('rewind-dialog')
    await expect(dialog.getByTestId('rewind-file')).toHaveCount(4)
    await dialog.getByTestId('rewind-apply').click()
    await expect(dialog.getByTestId('rewind-done')).toContainText('4 files were put back')
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('original\n')
    expect(await readFile(join(app.workspace, 'gone.txt'), 'utf8')).toBe('to be removed\n')
    await expect(lstat(join(app.workspace, 'new.txt'))).rejects.toThrow()
    await expect(lstat(join(app.workspace, 'logo.png'))).rejects.toThrow()
  } finally {
    await stop()
  }
})

const heldScript = [
  "const fs = require('fs')",
  "fs.writeFileSync('a.txt', 'changed by the command\\n')",
  "fs.writeFileSync('.gitmodules', '[submodule \"lib\"]\\n\\tpath = lib\\n')",
  "fs.writeFileSync('.env.local', 'TOKEN=from-the-command-9876\\n')",
].join('\n')

const heldScenario = {
  turns: [
    { blocks: [{ tool: 'bash', input: { command: 'node held.js', description: 'Set things up' } }] },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('a command’s protected changes wait for a per-file review, with a warning; only what is accepted lands', async ({
  page,
}) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'original\n', 'held.js': heldScript },
    heldScenario,
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Set things up')
    const panel = page.getByTestId('approval-panel').first()
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-approve').click()

    const review = page.getByTestId('held-review')
    await expect(review).toBeVisible({ timeout: 30_000 })
    // Nothing of the command has landed while its protected changes wait.
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('original\n')
    const modules = review.locator('[data-testid=held-file][data-path=".gitmodules"]')
    const env = review.locator('[data-testid=held-file][data-path=".env.local"]')
    await expect(modules.getByTestId('held-warning')).toContainText('Warning, protected path')
    await expect(env.getByTestId('held-warning')).toContainText('a secret file')
    await expect(modules).toContainText('path = lib')
    // The new secret's value is hidden in the review (and in the log it comes from).
    await expect(env).toContainText('[secret from .env.local hidden]')
    await expect(env).not.toContainText('from-the-command-9876')
    await expect(review.getByTestId('held-apply')).toBeDisabled()
    await modules.getByTestId('held-accept').click()
    await env.getByTestId('held-reject').click()
    await review.getByTestId('held-apply').click()

    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    await expect(review).toHaveCount(0)
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('changed by the command\n')
    expect(await readFile(join(app.workspace, '.gitmodules'), 'utf8')).toBe(
      '[submodule "lib"]\n\tpath = lib\n',
    )
    await expect(lstat(join(app.workspace, '.env.local'))).rejects.toThrow()

    const card = page.locator('[data-testid=tool-card]', { hasText: 'node held.js' }).last()
    await expect(card.getByTestId('command-held')).toContainText('1 applied, 1 not applied')
    await expect(card.getByTestId('command-held-rejected')).toContainText('.env.local')
    await expect(card.getByTestId('command-changes-summary')).toHaveText('changed 1, added 1')
  } finally {
    await stop()
  }
})

/**
 * A PATH like this machine's, without `unshare`: what a system without a copy-on-write layer for Lanes looks
 * like (capture falls back to the before/after scan). Every other program is linked in as it is.
 */
async function pathWithout(name: string): Promise<{ path: string; remove(): Promise<void> }> {
  // Not under /tmp: the sandbox has a private tmpfs there, and binds PATH's folders for the command. A checkout
  // under /tmp (a scratch clone) keeps it in HOME's cache instead.
  const underTmp = (dir: string): boolean =>
    dir === '/tmp' || dir.startsWith('/tmp/') || dir.startsWith(`${tmpdir()}/`)
  const cache = underTmp(process.cwd())
    ? join(homedir(), '.cache', 'lanes-e2e')
    : join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  const dir = await mkdtemp(join(cache, 'lanes-path-'))
  for (const from of (process.env.PATH ?? '').split(delimiter).filter((d) => isAbsolute(d))) {
    for (const entry of await readdir(from).catch(() => [])) {
      if (entry === name) continue
      await symlink(join(from, entry), join(dir, entry)).catch(() => undefined)
    }
  }
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) }
}

test('Settings says how command changes are kept: on a copy-on-write layer here', async ({ page }) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  const { app, stop } = await startAppWithModel({ 'a.txt': 'a\n' }, { turns: [] })
  try {
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const line = page.getByTestId('settings-capture')
    await expect(line).toHaveAttribute('data-mode', 'overlay')
    await expect(line).toContainText('copy-on-write layer')
    await expect(line).toContainText('can be undone')
  } finally {
    await stop()
  }
})

test('without a copy-on-write layer, Settings, the review and the card say the changes cannot be undone', async ({
  page,
}) => {
  test.skip(process.platform !== 'linux', 'the sandbox without the layer needs Linux')
  const bin = await pathWithout('unshare')
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'original\n', 'gone.txt': 'to be removed\n', 'change.js': script },
    scenario,
    { PATH: bin.path },
  )
  try {
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const line = page.getByTestId('settings-capture')
    await expect(line).toHaveAttribute('data-mode', 'scan')
    await expect(line).toContainText('cannot be undone')
    await expect(line).toContainText('unshare (util-linux) is missing')
    await page.getByTestId('settings-close').click()

    await sendTask(page, 'Change the files')
    const panel = page.getByTestId('approval-panel')
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await expect(panel.getByTestId('capture-unavailable')).toContainText('cannot be undone')
    await panel.getByTestId('approval-approve').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('changed by the command\n')
    const card = page.locator('[data-testid=tool-card]', { hasText: 'node change.js' }).last()
    await expect(card.getByTestId('command-changes-summary')).toContainText('cannot be undone')
    await expect(card.getByTestId('undo-button')).toHaveCount(0)
  } finally {
    await stop()
    await bin.remove()
  }
})

test('“Show me its changes before they land” holds every change of a command for the per-file review', async ({
  page,
}) => {
  test.skip(process.platform !== 'linux', 'command capture needs Linux')
  const { app, stop } = await startAppWithModel(
    { 'a.txt': 'original\n', 'gone.txt': 'to be removed\n', 'change.js': script },
    scenario,
  )
  try {
    await page.goto(app.url)
    await sendTask(page, 'Change the files')
    const panel = page.getByTestId('approval-panel').first()
    await expect(panel).toBeVisible({ timeout: 30_000 })
    await panel.getByTestId('approval-hold').check()
    await panel.getByTestId('approval-approve').click()

    const review = page.getByTestId('held-review')
    await expect(review).toBeVisible({ timeout: 30_000 })
    await expect(review.getByTestId('held-file')).toHaveCount(4)
    // Nothing here is protected: no warning, no badge.
    await expect(review.getByTestId('held-warning')).toHaveCount(0)
    await expect(review.getByTestId('protected-badge')).toHaveCount(0)
    await review.locator('[data-testid=held-file][data-path="new.txt"]').getByTestId('held-accept').click()
    await review.locator('[data-testid=held-file][data-path="logo.png"]').getByTestId('held-accept').click()
    await review.locator('[data-testid=held-file][data-path="a.txt"]').getByTestId('held-reject').click()
    await review.locator('[data-testid=held-file][data-path="gone.txt"]').getByTestId('held-reject').click()
    await review.getByTestId('held-apply').click()

    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 30_000 })
    expect(await readFile(join(app.workspace, 'a.txt'), 'utf8')).toBe('original\n')
    expect(await readFile(join(app.workspace, 'gone.txt'), 'utf8')).toBe('to be removed\n')
    expect(await readFile(join(app.workspace, 'new.txt'), 'utf8')).toBe('made by the command\n')
    expect((await readFile(join(app.workspace, 'logo.png'))).toString('hex')).toBe(
      '89504e470d0a1a0a0000000d49484452',
    )
    const card = page.locator('[data-testid=tool-card]', { hasText: 'node change.js' }).last()
    await expect(card.getByTestId('command-held')).toContainText('2 applied, 2 not applied')
  } finally {
    await stop()
  }
})
