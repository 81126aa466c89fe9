import { subscribe, unsubscribe } from 'node:diagnostics_channel'

/**
 * When a request's body has gone out on the socket: Node's fetch (undici, which the SDK uses) reports it on the
 * `undici:request:bodySent` channel. `watchSent(origin, call)` calls `call` once, at the first POST to `origin`
 * whose body was sent (a request of another session to the same address may be the one: early by a request,
 * never before one went out). Returns the function that stops watching.
 */

const CHANNEL = 'undici:request:bodySent'

interface SentMessage {
  request?: { origin?: unknown; method?: unknown }
}

export function watchSent(origin: string, call: () => void): () => void {
  let done = false
  const stop = (): void => {
    if (done) return
    done = true
    unsubscribe(CHANNEL, listener)
  }
  const listener = (message: unknown): void => {
    const request = (message as SentMessage).request
    if (request?.method !== 'POST' || request.origin !== origin) return
    stop()
    call()
  }
  subscribe(CHANNEL, listener)
  return stop
}

/** `http://host:port` of a URL, as undici names a request's origin; null for an address that is not one. */
export function originOf(url: string): string | null {
  try {
    return new URL(url).origin
  } catch {
    return null
  }
}
