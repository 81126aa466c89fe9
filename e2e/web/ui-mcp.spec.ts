import { expect, test } from '@playwright/test'
import { fileURLToPath } from 'node:url'
import { screenshots, sendTask, startAppWithModel } from './ui-support'

/**
 * A folder's MCP server in the app: the trust dialog shows exactly what would run (command, arguments,
 * environment, permissions) and nothing starts before the user trusts it; its calls then show on the cards
 * with their server's name, an image result as an image.
 */

const TEST_SERVER = fileURLToPath(
  new URL('../../src/main/mcp/test-fixtures/test-server.mjs', import.meta.url),
)

const mcpJson = JSON.stringify({
  mcpServers: { helper: { command: 'node', args: [TEST_SERVER], env: { GIVEN: 'yes' } } },
})

const scenario = {
  turns: [
    {
      // Streams once the server has had time to start (it starts with the run, in the background).
      firstTokenMs: 3000,
      blocks: [
        { text: 'Asking the helper.' },
        { tool: 'mcp__helper__image', input: {} },
        { tool: 'mcp__helper__wait', input: { ms: 300 } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

test('trusting a folder’s MCP server after seeing what it runs; its calls and image on the cards', async ({
  page,
}) => {
  const { app, stop } = await startAppWithModel({ '.mcp.json': mcpJson }, scenario)
  try {
    await page.goto(app.url)
    const section = page.getByTestId('mcp-servers')
    await expect(section.getByTestId('mcp-server')).toHaveAttribute('data-trusted', 'false')
    await section.getByTestId('mcp-review').click()

    const dialog = page.getByTestId('mcp-trust-dialog')
    await expect(dialog.getByTestId('mcp-command')).toHaveText(`node ${TEST_SERVER}`)
    await expect(dialog.getByTestId('mcp-env')).toContainText('GIVEN')
    await expect(dialog.getByTestId('mcp-env')).toContainText('yes')
    // The folder's server gets the folder read-only and no network unless the user chooses otherwise here.
    const permissions = dialog.getByTestId('mcp-permissions')
    await expect(permissions.getByTestId('mcp-folder-read-only')).toBeChecked()
    await expect(permissions.getByTestId('mcp-network')).not.toBeChecked()
    await screenshots(page, 'ui-mcp-trust')
    // The user's choice (it needs nothing of the folder) is what it is trusted with, kept as its "lanes" key.
    await permissions.getByTestId('mcp-folder-none').check()
    await dialog.getByTestId('mcp-trust').click()
    await expect(dialog).toContainText('Trusted: it starts with each task in this folder.')
    await page.keyboard.press('Escape')
    await expect(section.getByTestId('mcp-server')).toHaveAttribute('data-trusted', 'true')
    await section.getByTestId('mcp-review').click()
    await expect(dialog.getByTestId('mcp-folder-none')).toBeChecked()
    await page.keyboard.press('Escape')

    await sendTask(page, 'Ask the helper for a picture')
    const cards = page.getByTestId('tool-card')
    await expect(cards).toHaveCount(2, { timeout: 30_000 })
    await expect(cards.nth(0)).toHaveAttribute('data-status', 'ok', { timeout: 30_000 })
    await expect(cards.nth(1)).toHaveAttribute('data-status', 'ok', { timeout: 30_000 })
    for (const i of [0, 1]) await expect(cards.nth(i).getByTestId('tool-card-server')).toHaveText('helper')
    await expect(cards.nth(0)).toContainText('helper: image')
    // The sidebar says what the server's definitions cost in every request.
    await expect(section.getByTestId('mcp-server-cost')).toContainText(/\d+ tools · about [\d,]+ tokens/)

    await cards.nth(0).locator('.tool-card-toggle').click()
    const image = cards.nth(0).getByTestId('tool-images').locator('img')
    await expect(image).toBeVisible()
    expect(await image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1)
    await screenshots(page, 'ui-mcp-calls')
  } finally {
    await stop()
  }
})
