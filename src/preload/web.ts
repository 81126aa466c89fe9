import {
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
 */

type Pending = (result: Result<unknown>) => void

const token = new URLSearchParams(location.search).get('token') ?? ''
const socketUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api?token=${encodeURIComponent(token)}`

let socket: WebSocket | null = null
let opened: Promise<WebSocket> | null = null
let nextId = 1
const pending = new Map<number, Pending>()
const listeners = new Map<string, Set<(payload: unknown) => void>>()

function connect(): Promise<WebSocket> {
  if (opened) return opened
  opened = new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(socketUrl)
    ws.onopen = () => {
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
