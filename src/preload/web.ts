import {
  WEB_ACCESS_PATH,
  WEB_API_PATH,
  WEB_API_PROTOCOL,
  WEB_TOKEN_CHECK_PATH,
  WEB_TOKEN_PROTOCOL_PREFIX,
  isEventChannel,
  isRequestChannel,
  type LanesApi,
  type Result,
  type WireMessage,
  type WireRequest,
} from '../shared/ipc'

/**
 * Browser mode's `window.api`: the same interface as the Electron preload, over the host's WebSocket.
 * Requests made before the socket opens wait for it; if the socket drops (host stopped), pending requests
 * resolve to an error value and a reconnect is attempted so a restarted host is picked up.
 *
 * The access token arrives once in the URL `lanes web` printed. It moves to this origin's local storage and
 * leaves the address bar, so it is not bookmarked, shared or kept in history; the socket handshake carries it
 * from there (see WEB_TOKEN_PROTOCOL_PREFIX). Local storage belongs to one origin, port included: a second tab
 * or a bookmark of this running Lanes gets in without the terminal, while a page served from any other local
 * port (another origin) cannot read it. Never a cookie: a browser sends 127.0.0.1 cookies to every local port.
 * The token is new at every start, so what is kept stops working when Lanes stops.
 */

type Pending = (result: Result<unknown>) => void

const TOKEN_STORAGE_KEY = 'lanes.token'

function takeToken(): string | null {
  const url = new URL(location.href)
  const fromUrl = url.searchParams.get('token')
  if (fromUrl !== null) {
    localStorage.setItem(TOKEN_STORAGE_KEY, fromUrl)
    url.searchParams.delete('token')
    history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`)
  }
  return localStorage.getItem(TOKEN_STORAGE_KEY)
}

/**
 * Sends the page to the one that says how to get in, forgetting the token it was refused with; unless another tab
 * has meanwhile stored a newer one (Lanes restarted and its new link opened there): then this page reloads on it.
 */
function leaveForAccessPage(): void {
  const stored = localStorage.getItem(TOKEN_STORAGE_KEY)
  if (stored !== null && stored !== token) return location.reload()
  localStorage.removeItem(TOKEN_STORAGE_KEY)
  location.replace(WEB_ACCESS_PATH)
}

/** A refused handshake is a stale token if the host says so; a host that does not answer is down. */
async function tokenRefused(): Promise<boolean> {
  try {
    const res = await fetch(WEB_TOKEN_CHECK_PATH, {
      headers: { 'X-Lanes-Token': token ?? '' },
      cache: 'no-store',
    })
    return res.status === 401
  } catch {
    return false
  }
}

const token = takeToken()
if (token === null) leaveForAccessPage()
const socketUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${WEB_API_PATH}`

let socket: WebSocket | null = null
let opened: Promise<WebSocket> | null = null
let nextId = 1
const pending = new Map<number, Pending>()
const listeners = new Map<string, Set<(payload: unknown) => void>>()

function connect(): Promise<WebSocket> {
  if (opened) return opened
  opened = new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(socketUrl, [WEB_API_PROTOCOL, `${WEB_TOKEN_PROTOCOL_PREFIX}${token ?? ''}`])
    let everOpen = false
    ws.onopen = () => {
      everOpen = true
      socket = ws
      resolve(ws)
    }
    ws.onmessage = (event) => {
      let message: WireMessage
      try {
        message = JSON.parse(String(event.data)) as WireMessage
      } catch {
        return
      }
      if (message.kind === 'result') {
        pending.get(message.id)?.(message.result)
        pending.delete(message.id)
      } else {
        for (const listener of listeners.get(message.channel) ?? []) listener(message.payload)
      }
    }
    ws.onclose = () => {
      socket = null
      opened = null
      for (const [id, settle] of pending) {
        settle({ ok: false, error: 'The connection to Lanes was lost.', code: 'failed' })
        pending.delete(id)
      }
      reject(new Error('closed'))
      if (!everOpen) {
        void tokenRefused().then((refused) => {
          if (refused) leaveForAccessPage()
        })
      }
      if (listeners.size > 0) setTimeout(() => void connect().catch(() => undefined), 1000)
    }
  })
  return opened
}

const api = {
  async invoke(channel: string, input?: unknown): Promise<Result<unknown>> {
    if (!isRequestChannel(channel)) {
      return { ok: false, error: `Unknown channel "${channel}".`, code: 'unknown-channel' }
    }
    let ws: WebSocket
    try {
      ws = socket ?? (await connect())
    } catch {
      return { ok: false, error: 'Cannot reach Lanes: is `lanes web` still running?', code: 'failed' }
    }
    const id = nextId++
    const request: WireRequest = { id, channel, input }
    return new Promise((resolve) => {
      pending.set(id, resolve)
      ws.send(JSON.stringify(request))
    })
  },
  on(channel: string, listener: (payload: unknown) => void): () => void {
    if (!isEventChannel(channel)) throw new Error(`Unknown event channel "${channel}".`)
    let set = listeners.get(channel)
    if (!set) listeners.set(channel, (set = new Set()))
    set.add(listener)
    void connect().catch(() => undefined)
    return () => {
      set.delete(listener)
    }
  },
} as LanesApi

window.api = api
