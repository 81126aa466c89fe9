import { ipcMain, type IpcMainInvokeEvent, type WebContents } from 'electron'
import { dispatchRequest, err, type AppApi } from '../app/app-api'

/**
 * The only file that touches `ipcMain` (lint enforces it). Requests travel on one channel as
 * `{ channel, input }` so the allowlist, the sender check and the schema check sit in one place for every
 * channel, exactly as in browser mode.
 */
export const INVOKE_CHANNEL = 'lanes:invoke'
export const EVENT_CHANNEL = 'lanes:event'

export interface IpcOptions {
  /** True for a frame we loaded ourselves: our window's top frame at our own URL. */
  isTrustedSender(event: IpcMainInvokeEvent): boolean
}

export function registerIpc(api: AppApi, opts: IpcOptions): () => void {
  ipcMain.handle(INVOKE_CHANNEL, async (event, message: unknown) => {
    if (!opts.isTrustedSender(event)) {
      return err('forbidden', 'Request refused: it did not come from the Lanes window.')
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      return err('invalid-input', 'A request must be an object { channel, input }.')
    }
    const { channel, input } = message as { channel?: unknown; input?: unknown }
    return dispatchRequest(api, channel, input)
  })
  return () => ipcMain.removeHandler(INVOKE_CHANNEL)
}

/** Forwards app events to one window's renderer for as long as it lives. */
export function forwardEvents(api: AppApi, contents: WebContents): () => void {
  const unsubscribe = api.subscribe((channel, payload) => {
    if (!contents.isDestroyed()) contents.send(EVENT_CHANNEL, { channel, payload })
  })
  contents.once('destroyed', unsubscribe)
  return unsubscribe
}
