import { z } from 'zod'

/**
 * The one contract between the UI and the app, whatever the transport (Electron IPC or the browser-mode
 * WebSocket). Every request channel is `resource:verb` with a zod input and output schema; every
 * main-to-renderer event channel has a payload schema. Main validates every input with these schemas;
 * `window.api`'s types are inferred from them, so a channel cannot drift between the two sides.
 *
 * A request answers `Result<Output>`: expected failures (a folder that does not exist, a cancelled dialog)
 * are values, because only an error's message survives IPC and a renderer should never have to parse one.
 */

export const AppInfo = z.object({
  name: z.string(),
  version: z.string(),
  platform: z.string(),
  transport: z.enum(['electron', 'web']),
})
export type AppInfo = z.infer<typeof AppInfo>

export const WorkspaceInfo = z.object({
  /** Absolute real path of the folder. */
  path: z.string(),
  /** Folder name shown to the user. */
  name: z.string(),
})
export type WorkspaceInfo = z.infer<typeof WorkspaceInfo>

const NoInput = z.undefined()

export const requestChannels = {
  'app:info': { input: NoInput, output: AppInfo },
  /** Without a path, Electron shows the native folder dialog; browser mode needs the path. */
  'workspace:open': {
    input: z
      .object({ path: z.string().min(1).max(4096).optional() })
      .strict()
      .optional(),
    output: WorkspaceInfo,
  },
  'workspace:current': { input: NoInput, output: WorkspaceInfo.nullable() },
} as const

export const eventChannels = {
  'workspace:changed': WorkspaceInfo,
} as const

export type RequestChannel = keyof typeof requestChannels
export type EventChannel = keyof typeof eventChannels
export type RequestInput<C extends RequestChannel> = z.input<(typeof requestChannels)[C]['input']>
export type RequestOutput<C extends RequestChannel> = z.output<(typeof requestChannels)[C]['output']>
export type EventPayload<E extends EventChannel> = z.output<(typeof eventChannels)[E]>

export type ErrorCode =
  'invalid-input' | 'unknown-channel' | 'forbidden' | 'cancelled' | 'not-found' | 'failed'

export type Result<T> = { ok: true; value: T } | { ok: false; error: string; code: ErrorCode }

export const ResultEnvelope = z.union([
  z.object({ ok: z.literal(true), value: z.unknown() }),
  z.object({ ok: z.literal(false), error: z.string(), code: z.string() }),
])

export function isRequestChannel(channel: unknown): channel is RequestChannel {
  return typeof channel === 'string' && Object.hasOwn(requestChannels, channel)
}

export function isEventChannel(channel: unknown): channel is EventChannel {
  return typeof channel === 'string' && Object.hasOwn(eventChannels, channel)
}

/** Channels whose input is optional or absent can be invoked with no argument. */
type InvokeArgs<C extends RequestChannel> =
  undefined extends RequestInput<C> ? [input?: RequestInput<C>] : [input: RequestInput<C>]

/** `window.api`, identical under Electron and in browser mode. */
export interface LanesApi {
  invoke<C extends RequestChannel>(channel: C, ...args: InvokeArgs<C>): Promise<Result<RequestOutput<C>>>
  /** Returns the function that removes the listener. */
  on<E extends EventChannel>(channel: E, listener: (payload: EventPayload<E>) => void): () => void
}

/** Messages of the browser-mode socket. Requests carry an id; answers and events come back on the same socket. */
export const WireRequest = z
  .object({ id: z.number().int().nonnegative(), channel: z.string().max(200), input: z.unknown().optional() })
  .strict()
export type WireRequest = z.infer<typeof WireRequest>

export type WireMessage =
  | { kind: 'result'; id: number; result: Result<unknown> }
  | { kind: 'event'; channel: EventChannel; payload: unknown }

/** Describes why a payload failed its schema in words a developer can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.join('.') : 'input'
      return `${where}: ${issue.message}`
    })
    .join('; ')
}
