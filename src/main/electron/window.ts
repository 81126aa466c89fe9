import { BrowserWindow, screen, session, type IpcMainInvokeEvent } from 'electron'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { sameDocument } from './guards'

/** Where the renderer comes from: the dev server in `electron-vite dev`, the built file otherwise. */
export function rendererUrl(): string {
  const dev = process.env.ELECTRON_RENDERER_URL
  if (dev) return dev
  return pathToFileURL(fileURLToPath(new URL('../renderer/index.html', import.meta.url))).href
}

interface WindowState {
  width: number
  height: number
  x?: number
  y?: number
  maximized?: boolean
}

function loadState(file: string): WindowState {
  const fallback: WindowState = { width: 1280, height: 820 }
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as WindowState
    if (typeof saved.width !== 'number' || typeof saved.height !== 'number') return fallback
    // A window saved on a monitor that is gone must not open off screen.
    const visible = screen
      .getAllDisplays()
      .some(
        (d) =>
          saved.x === undefined ||
          saved.y === undefined ||
          (saved.x >= d.workArea.x - 50 &&
            saved.y >= d.workArea.y - 50 &&
            saved.x < d.workArea.x + d.workArea.width &&
            saved.y < d.workArea.y + d.workArea.height),
      )
    return visible ? saved : { width: saved.width, height: saved.height }
  } catch {
    return fallback
  }
}

/** `packaged`: a packaged build has no DevTools (development builds keep them). */
export function createMainWindow(stateFile: string, opts: { packaged: boolean }): BrowserWindow {
  const state = loadState(stateFile)
  const win = new BrowserWindow({
    width: Math.max(800, state.width),
    height: Math.max(560, state.height),
    ...(state.x !== undefined && state.y !== undefined ? { x: state.x, y: state.y } : {}),
    minWidth: 800,
    minHeight: 560,
    show: false,
    title: 'Lanes',
    backgroundColor: '#1b1d22',
    webPreferences: {
      preload: fileURLToPath(new URL('../preload/index.cjs', import.meta.url)),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      spellcheck: false,
      devTools: !opts.packaged,
    },
  })
  if (state.maximized) win.maximize()
  win.once('ready-to-show', () => win.show())

  const save = (): void => {
    if (win.isDestroyed()) return
    const bounds = win.getNormalBounds()
    const next: WindowState = { ...bounds, maximized: win.isMaximized() }
    try {
      // Synchronous, unlike writeJsonAtomic: the window closing may be the app quitting, which would not wait
      // for an async write. A torn file only costs the saved size (the reader falls back to defaults).
      writeFileSync(stateFile, JSON.stringify(next))
    } catch {
      // Losing the window size is not worth an error dialog.
    }
  }
  win.on('close', save)

  // Navigation, new windows and webviews are denied for every web contents by guards.ts, app-wide.
  void win.loadURL(rendererUrl())
  return win
}

/** Every permission request (camera, notifications, ...) is refused: Lanes needs none. */
export function denyAllPermissions(): void {
  session.defaultSession.setPermissionRequestHandler((_contents, _permission, callback) => callback(false))
  session.defaultSession.setPermissionCheckHandler(() => false)
}

/** Only our own window's top frame, showing our own page, may call the app API. */
export function isTrustedSender(win: BrowserWindow, event: IpcMainInvokeEvent): boolean {
  const frame = event.senderFrame
  if (!frame || frame.parent !== null) return false
  if (event.sender !== win.webContents) return false
  return sameDocument(frame.url, rendererUrl())
}
