/// <reference lib="dom" />
import type { SessionEvent, SessionSummary } from '../../src/shared/events'
import type { SettingsView } from '../../src/shared/ipc'

/**
 * An in-page `window.api` for driving the real renderer without a server: answers the request channels from
 * fixed data and lets the driver emit events. It stands in for the transport only; the store, reducer and
 * components measured are the real ones. Installed with `page.addInitScript(installMockApi, data)`, so it must
 * be self-contained (it is serialized into the page).
 */

export interface MockData {
  workspace: { path: string; name: string }
  sessions: SessionSummary[]
  /**
   * Events per session id, as `session:load` answers them; as JSON text, they are parsed when asked for (what the
   * real transport does with a socket message), so a measurement from `loadedAt` includes the parse.
   */
  events: Record<string, SessionEvent[] | string>
  live: boolean
  settings: SettingsView
}

export interface MockHandle {
  emit(channel: string, payload: unknown): void
  /** Requests the page made, for checks. */
  requests: { channel: string; input: unknown }[]
  /** performance.now() when `session:load` first answered (the bench's "file read" moment). */
  loadedAt: number | null
  /** performance.now() when `session:list` answered. */
  listedAt: number | null
}

declare global {
  interface Window {
    __lanesMock: MockHandle
    /**
     * Set by a driver (`page.exposeFunction`) that answers `session:load` with `tail` as the engine does: the
     * answer's JSON text, or null for a log no longer than that (then the whole log answers).
     */
    __lanesPreview?: (sessionId: string, tail: number) => Promise<string | null>
  }
}

export function installMockApi(data: MockData): void {
  const listeners = new Map<string, Set<(payload: unknown) => void>>()
  const handle: MockHandle = {
    requests: [],
    loadedAt: null,
    listedAt: null,
    emit(channel, payload) {
      for (const listener of listeners.get(channel) ?? []) listener(payload)
    },
  }
  const answer = async (channel: string, input: unknown): Promise<unknown> => {
    switch (channel) {
      case 'app:info':
        return { name: 'Lanes', version: '0.0.0-bench', platform: 'linux', transport: 'web' }
      case 'workspace:current':
        return data.workspace
      case 'session:list':
        handle.listedAt = performance.now()
        return data.sessions
      case 'session:load': {
        const { sessionId: id, tail } = input as { sessionId: string; tail?: number }
        const preview =
          tail !== undefined && window.__lanesPreview ? await window.__lanesPreview(id, tail) : null
        handle.loadedAt ??= performance.now()
        if (preview !== null)
          return { ...(JSON.parse(preview) as object), warnings: [], live: data.live, partial: true }
        const stored = data.events[id] ?? []
        const events = typeof stored === 'string' ? (JSON.parse(stored) as unknown[]) : stored
        return { events, warnings: [], live: data.live }
      }
      case 'settings:get':
      case 'settings:set':
        return data.settings
      default:
        return null
    }
  }
  window.__lanesMock = handle
  Object.defineProperty(window, 'api', {
    value: {
      async invoke(channel: string, input?: unknown) {
        handle.requests.push({ channel, input })
        return { ok: true, value: await answer(channel, input) }
      },
      on(channel: string, listener: (payload: unknown) => void) {
        const set = listeners.get(channel) ?? new Set()
        set.add(listener)
        listeners.set(channel, set)
        return () => set.delete(listener)
      },
    },
  })
}

/**
 * The init script as source text. tsx/esbuild decorate functions with a `__name` helper that does not exist in
 * the page, so the page gets a stand-in for it (also used by the functions the bench passes to `page.evaluate`).
 */
export function mockInitScript(data: MockData): string {
  return `globalThis.__name = (f) => f;\n(${installMockApi.toString()})(${JSON.stringify(data)});`
}
