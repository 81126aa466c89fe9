import { app, BrowserWindow, dialog, Menu, type MenuItemConstructorOptions } from 'electron'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createAppApi } from './app-api'
import { forwardEvents, registerIpc } from './ipc'
import { createMainWindow, denyAllPermissions, isTrustedSender } from './window'

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
    pickFolder: async () => {
      const options = { title: 'Open a project folder', properties: ['openDirectory' as const] }
      const picked = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options)
      return picked.canceled ? null : (picked.filePaths[0] ?? null)
    },
    onWorkspaceChanged: (ws) => {
      try {
        writeFileSync(settingsFile, JSON.stringify({ lastWorkspace: ws.path }))
      } catch {
        // Not remembering the folder is not worth an error.
      }
    },
  })

  const open = (): void => {
    win = createMainWindow(join(app.getPath('userData'), 'window-state.json'))
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
}

main().catch((e: unknown) => {
  dialog.showErrorBox('Lanes could not start', e instanceof Error ? e.message : String(e))
  app.exit(1)
})
