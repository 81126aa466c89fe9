import type { LanesApi } from '../shared/ipc'

declare global {
  interface Window {
    /** Provided by the Electron preload or, in browser mode, by the web preload. */
    api: LanesApi
  }
}

export {}
