import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron'
import { isEventChannel, isRequestChannel, type LanesApi, type Result } from '../shared/ipc'

/**
 * Builds `window.api` from the contract. The only file that touches `ipcRenderer` (lint enforces it); the
 * raw object never crosses the bridge: the renderer gets two functions, both limited to contract channels.
 * Main checks the sender and validates every payload again; this allowlist just fails fast.
 */
const INVOKE_CHANNEL = 'lanes:invoke'
const EVENT_CHANNEL = 'lanes:event'

const api: LanesApi = {
  invoke(channel: string, input?: unknown) {
    if (!isRequestChannel(channel)) {
      const refused: Result<never> = {
        ok: false,
        error: `Unknown channel "${channel}".`,
        code: 'unknown-channel',
      }
      return Promise.resolve(refused)
    }
    return ipcRenderer.invoke(INVOKE_CHANNEL, { channel, input })
  },
  on(channel: string, listener: (payload: never) => void) {
    if (!isEventChannel(channel)) throw new Error(`Unknown event channel "${channel}".`)
    const handler = (_event: IpcRendererEvent, message: { channel: string; payload: never }): void => {
      if (message.channel === channel) listener(message.payload)
    }
    ipcRenderer.on(EVENT_CHANNEL, handler)
    return () => {
      ipcRenderer.removeListener(EVENT_CHANNEL, handler)
    }
  },
} as LanesApi

contextBridge.exposeInMainWorld('api', api)
