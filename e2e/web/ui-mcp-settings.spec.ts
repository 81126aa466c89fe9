import { expect, test } from '@playwright/test'
import { createRequire } from 'node:module'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

/**
 * A server of the user's own, added in Settings: the registry's `server-everything`, started with the next
 * session without a trust dialog (the user typed it), its tools on the cards with their server; a value that
 * looks like a key comes back masked and an edit keeps it unseen.
 */

const EVERYTHING = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-everything/dist/index.js',
)
const TOKEN = 'tok-5f4e3d2c1b0a9988'

const scenario = {
  turns: [
    {
      // Streams once the server has had time to start (it starts with the run, in the background).
      firstTokenMs: 4000,
      blocks: [
        { text: 'Asking everything.' },
        { tool: 'mcp__everything__echo', input: { message: 'hello from settings' } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('a server added in Settings starts with the next task and its tool runs', async ({ page }) => {
  const { app, stop } = await startAppWithModel({ 'README.md': '# project\n' }, scenario)
  try {
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const section = page.getByTestId('settings-mcp')
    await section.getByTestId('settings-mcp-add').click()
    const editor = section.getByTestId('mcp-editor')
    await editor.getByTestId('mcp-editor-name').fill('everything')
    await editor.getByTestId('mcp-editor-command').fill(process.execPath)
    await editor.getByTestId('mcp-editor-args').fill(`${EVERYTHING}\nstdio`)
    await editor.getByTestId('mcp-editor-add-pair').click()
    await editor.getByTestId('mcp-editor-pair-name').fill('SOME_TOKEN')
    await editor.getByTestId('mcp-editor-pair-value').fill(TOKEN)
    await editor.getByTestId('mcp-editor-timeout').fill('30')
    await editor.getByTestId('mcp-editor-save').click()

    const row = section.getByTestId('settings-mcp-server')
    await expect(row).toHaveAttribute('data-name', 'everything')
    await expect(row).toContainText('calls up to 30 s')
    // The token never comes back to the page: an edit shows it masked and keeps it when left alone.
    await row.getByTestId('settings-mcp-edit').click()
    const value = editor.getByTestId('mcp-editor-pair-value')
    await expect(value).toHaveValue('')
    await expect(value).toHaveAttribute('placeholder', /kept: tok-5f4…9988/)
    await screenshots(page, 'ui-mcp-settings')
    await editor.getByTestId('mcp-editor-save').click()
    await expect(editor).toHaveCount(0)
    expect(await page.content()).not.toContain(TOKEN)
    await page.getByTestId('settings-close').click()

    await sendTask(page, 'Echo something')
    const card = page.getByTestId('tool-card')
    await expect(card).toHaveCount(1, { timeout: 30_000 })
    // Read-only and from a server the user configured: it runs without asking.
    await expect(card).toHaveAttribute('data-status', 'ok', { timeout: 30_000 })
    await expect(card.getByTestId('tool-card-server')).toHaveText('everything')
    await card.locator('.tool-card-toggle').click()
    await expect(card).toContainText('Echo: hello from settings')
    await expect(page.getByTestId('approval-panel')).toHaveCount(0)

    // Settings shows what its tool definitions cost, as the session counted them.
    await page.getByTestId('settings-open').click()
    const cost = /\d+ tools · about [\d,]+ tokens of definitions/
    await expect(section.getByTestId('settings-mcp-server').getByTestId('mcp-server-cost')).toContainText(
      cost,
    )
    const costs = page.getByTestId('settings-mcp-costs')
    await expect(costs.getByTestId('settings-mcp-cost')).toHaveAttribute('data-name', 'everything')
    await expect(costs.getByTestId('settings-mcp-total')).toHaveAttribute('data-over', 'false')
  } finally {
    await stop()
  }
})
