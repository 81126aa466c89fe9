import { expect, test } from '@playwright/test'
import { startOAuthTestServer } from '../../src/main/mcp/test-fixtures/oauth-server'
import { screenshots, startAppWithModel } from './ui-support'

/**
 * A remote server of the user's own that needs a sign-in (OAuth), in Settings, in browser mode: "Sign in" shows
 * the sign-in page's address (there is no system browser to open from here); following it signs in (the test
 * authorization server redirects straight back to Lanes' loopback listener); Settings then says who is signed
 * in, and "Sign out" forgets it.
 */

test('signs in to a remote MCP server from Settings and out again', async ({ page, context }) => {
  const server = await startOAuthTestServer()
  const { app, stop } = await startAppWithModel({ 'README.md': '# project\n' }, { turns: [] })
  try {
    await page.goto(app.url)
    await page.getByTestId('settings-open').click()
    const section = page.getByTestId('settings-mcp')
    await section.getByTestId('settings-mcp-add').click()
    const editor = section.getByTestId('mcp-editor')
    await editor.getByTestId('mcp-editor-name').fill('remote')
    await editor.getByTestId('mcp-editor-kind-http').check()
    await editor.getByTestId('mcp-editor-url').fill(server.url)
    await editor.getByTestId('mcp-editor-save').click()

    const auth = section.getByTestId('settings-mcp-server').getByTestId('settings-mcp-auth')
    await expect(auth).toHaveAttribute('data-signed-in', 'false')
    await expect(auth).toContainText('Not signed in')
    await auth.getByTestId('settings-mcp-sign-in').click()
    const shown = auth.getByTestId('settings-mcp-sign-in-page')
    await expect(shown).toContainText('Open this address to sign in')
    const link = shown.getByRole('link')
    await expect(link).toHaveAttribute('href', /code_challenge=.*state=|state=.*code_challenge=/)
    await screenshots(page, 'ui-mcp-sign-in')

    // The user opens it: the authorization server sends the browser back to Lanes on 127.0.0.1.
    const [tab] = await Promise.all([context.waitForEvent('page'), link.click()])
    await expect(tab.locator('body')).toContainText('Signed in to "remote"')
    await tab.close()
    await expect(auth).toHaveAttribute('data-signed-in', 'true')
    await expect(auth).toContainText('Signed in as ada@example.com')
    await expect(shown).toHaveCount(0)
    expect(server.counts).toMatchObject({ registrations: 1, codes: 1 })

    await auth.getByTestId('settings-mcp-sign-out').click()
    await expect(auth).toHaveAttribute('data-signed-in', 'false')
  } finally {
    await stop()
    await server.close()
  }
})
