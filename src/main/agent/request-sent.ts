import { subscribe, unsubscribe } from 'node:diagnostics_channel'

/**
 * Tells once that a model request went out (what waited for it, the MCP servers' start, may begin): when the API
 * answered it (status and headers), or SENT_GRACE_MS after its body went out on the socket without an answer yet,
 * or when the attempt ended. Not at the very moment the body is sent: the answer's first events are read in this
 * process, and a server's start (preparing its sandbox, spawning it) would hold them up.
 *
 * The body's sending is seen on the `undici:request:bodySent` channel of Node's fetch (which the SDK uses): the
 * first POST to the request's origin counts (a request of another session to the same address may be the one:
 * early by a request, never before one went out).
 */

const CHANNEL = 'undici:request:bodySent'
export const SENT_GRACE_MS = 100

interface SentMessage {
  request?: { origin?: unknown; method?: unknown }
}

export interface SentSignal {
  /** The API answered the request. */
  answered(): void
  /** The attempt is over, answered or not. */
  ended(): void
}

export function sentSignal(url: string, call: (() => void) | undefined): SentSignal {
  if (call === undefined) return { answered: () => undefined, ended: () => undefined }
  let origin: string | null
  try {
    origin = new URL(url).origin
  } catch {
    origin = null
  }
  let done = false
  let grace: NodeJS.Timeout | undefined
  const listener = (message: unknown): void => {
    const request = (message as SentMessage).request
    if (request?.method !== 'POST' || request.origin !== origin) return
    unsubscribe(CHANNEL, listener)
    grace = setTimeout(fire, SENT_GRACE_MS)
    grace.unref()
  }
  const fire = (): void => {
    if (done) return
    done = true
    clearTimeout(grace)
    unsubscribe(CHANNEL, listener)
    call()
  }
  if (origin !== null) subscribe(CHANNEL, listener)
  return { answered: fire, ended: fire }
}
