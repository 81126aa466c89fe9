import {
  app,
  BrowserWindow,
  dialog,
  Menu,
  safeStorage,
  shell,
  type MenuItemConstructorOptions,
} from 'electron'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createAppApi } from '../app/app-api'
import { defaultSessionsDir } from '../app/paths'
import type { SecretBox } from '../app/key-store'
import { writeJsonAtomic } from '../fs/atomic-write'
import { forwardEvents, registerIpc } from './ipc'
import { baseUrlConsentDialog, consentGiven, guardWebContents } from './guards'
import { createMainWindow, denyAllPermissions, isTrustedSender, rendererUrl } from './window'

/**
 * Electron entry: a thin shell around the engine. Everything the window can do goes through the app API
 * (app-api.ts), the same one browser mode serves over its socket.
 */

function workspaceFromArgs(argv: string[]): string | undefined {
  const i = argv.indexOf('--workspace')
  return i >= 0 ? argv[i + 1] : undefined
}

function readLastWorkspace(file: string): string | undefined {
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { lastWorkspace?: unknown }
    return typeof saved.lastWorkspace === 'string' ? saved.lastWorkspace : undefined
  } catch {
    return undefined
  }
}

/**
 * The OS secret store, when there is a real one. On Linux without a keyring Electron falls back to a
 * hard-coded password ("basic_text"): that is plain text in disguise, so it is not used (the key store then
 * keeps the key in a file only the user can read, and Settings says so).
 */
function secretBox(): SecretBox | undefined {
  if (!safeStorage.isEncryptionAvailable()) return undefined
  if (process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text')
    return undefined
  return {
    encrypt: (plain) => safeStorage.encryptString(plain).toString('base64'),
    decrypt: (sealed) => safeStorage.decryptString(Buffer.from(sealed, 'base64')),
  }
}

function buildMenu(): void {
  const isMac = process.platform === 'darwin'
  const template: MenuItemConstructorOptions[] = [
    ...(isMac ? [{ role: 'appMenu' as const }] : []),
    { role: 'fileMenu' },
    { role: 'editMenu' },
    { role: 'viewMenu' },
    { role: 'windowMenu' },
  ]
  Menu.setApplicationMenu(Menu.buildFromTemplate(template))
}

async function main(): Promise<void> {
  if (!app.requestSingleInstanceLock()) {
    app.quit()
    return
  }
  // Before any window exists, so every web contents (ours, DevTools', anything else) is guarded from birth.
  app.on('web-contents-created', (_event, contents) =>
    guardWebContents(contents, {
      appUrl: rendererUrl(),
      packaged: app.isPackaged,
      openExternal: (url) => void shell.openExternal(url),
    }),
  )
  await app.whenReady()
  denyAllPermissions()
  buildMenu()

  const settingsFile = join(app.getPath('userData'), 'settings.json')
  const requested = workspaceFromArgs(process.argv) ?? readLastWorkspace(settingsFile)
  let win: BrowserWindow | null = null

  const api = await createAppApi({
    name: 'Lanes',
    version: app.getVersion(),
    transport: 'electron',
    workspace: requested,
    sessionsDir: defaultSessionsDir(),
    secrets: secretBox(),
    // A remote MCP server's sign-in page (only https:, or http: on this computer; mcp/oauth.ts checks).
    openExternal: (url) => shell.openExternal(url),
    confirmBaseUrl: async (change) => {
      const options = baseUrlConsentDialog(change)
      const answer = win ? await dialog.showMessageBox(win, options) : await dialog.showMessageBox(options)
      return consentGiven(answer.response)
    },
    pickFolder: async () => {
      const options = { title: 'Open a project folder', properties: ['openDirectory' as const] }
      const picked = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options)
      return picked.canceled ? null : (picked.filePaths[0] ?? null)
    },
    onWorkspaceChanged: (ws) => {
      // Not remembering the folder is not worth an error.
      writeJsonAtomic(settingsFile, { lastWorkspace: ws.path }).catch(() => undefined)
    },
  })

  const open = (): void => {
    win = createMainWindow(join(app.getPath('userData'), 'window-state.json'), { packaged: app.isPackaged })
    forwardEvents(api, win.webContents)
    win.on('closed', () => (win = null))
  }
  registerIpc(api, { isTrustedSender: (event) => win !== null && isTrustedSender(win, event) })
  open()

  app.on('second-instance', () => {
    if (!win) return
    if (win.isMinimized()) win.restore()
    win.focus()
  })
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) open()
  })
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit()
  })
  // Runs are stopped cleanly on quit, so their logs end consistent (they can be continued later).
  let quitting = false
  app.on('before-quit', (event) => {
    if (quitting) return
    quitting = true
    event.preventDefault()
    void api.shutdown().finally(() => app.quit())
  })
}

main().catch((e: unknown) => {
  dialog.showErrorBox('Lanes could not start', e instanceof Error ? e.message : String(e))
  app.exit(1)
})
