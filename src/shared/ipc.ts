import { z } from 'zod'
import {
  HeldDecision,
  HeldFile,
  HeldFolderDecision,
  HunkDecision,
  SessionEvent,
  SessionId,
  SessionSummary,
  WritePreview,
} from './events'
import { MIN_COMPACT_AT_TOKENS, ThinkingSetting } from './models'

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
  /**
   * Whether commands run in an OS sandbox here (DESIGN 2.3); without one every command asks first, and
   * `reason` says why in one sentence, with how to enable it.
   */
  sandbox: z.object({ available: z.boolean(), reason: z.string().optional() }),
  /**
   * How an approved command's changes are kept (issue 20): `overlay`, on a copy-on-write layer (shown as a diff,
   * undoable); `scan`, found by comparing the workspace before and after (reported, cannot be undone), with
   * `reason` saying why in one sentence.
   */
  capture: z.object({ mode: z.enum(['overlay', 'scan']), reason: z.string().optional() }),
})
export type AppInfo = z.infer<typeof AppInfo>

export const WorkspaceInfo = z.object({
  /** Absolute real path of the folder. */
  path: z.string(),
  /** Folder name shown to the user. */
  name: z.string(),
})
export type WorkspaceInfo = z.infer<typeof WorkspaceInfo>

/** One directory as browser mode's folder browser shows it: where it is, the way up, its subfolders. */
export const FolderListing = z.object({
  path: z.string(),
  name: z.string(),
  /** Null at the file system's root. */
  parent: z.string().nullable(),
  /** From the root down to this folder, this folder last. */
  crumbs: z.array(WorkspaceInfo),
  folders: z.array(WorkspaceInfo),
  /** More subfolders exist than were listed. */
  truncated: z.boolean(),
  home: z.string(),
  /** Folders opened lately, newest first (only those that still exist). */
  recent: z.array(WorkspaceInfo),
})
export type FolderListing = z.infer<typeof FolderListing>

const NoInput = z.undefined()

/** What an MCP server may reach, as its `"lanes"` key says (issue 22): the workspace, the network, a call's time. */
export const McpLanes = z.strictObject({
  workspace: z.enum(['none', 'read-only', 'read-write']),
  network: z.boolean(),
  timeoutSec: z.number().int().min(1).max(3600),
})
export type McpLanes = z.infer<typeof McpLanes>

/**
 * A server entry as `.mcp.json` writes it, shown to the user: a command with its arguments and environment, or a
 * URL with its headers; `value` is how a variable's or header's value is shown.
 */
const mcpEntry = <Value extends z.ZodType>(value: Value) => ({
  name: z.string(),
  kind: z.enum(['stdio', 'http']),
  command: z.string().optional(),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), value).optional(),
  url: z.string().optional(),
  headers: z.record(z.string(), value).optional(),
})

/** An environment variable or header of the user's server: plain, or a secret (kept like the API key) masked. */
export const McpValueView = z.union([
  z.object({ value: z.string() }).strict(),
  z.object({ masked: z.string() }).strict(),
])
export type McpValueView = z.infer<typeof McpValueView>

/** One of the user's own MCP servers (Settings), in `.mcp.json`'s shape; secret values never leave main. */
export const McpUserServerView = z.object({
  ...mcpEntry(McpValueView),
  lanes: McpLanes,
  /** Why the stored entry cannot be used (edited by hand, say); null when it can. */
  problem: z.string().nullable(),
  /**
   * OAuth sign-in, for a remote server whose entry sets no Authorization header of its own (null otherwise):
   * signed in or not, as whom (when the server says), at which authorization server.
   */
  auth: z
    .object({ signedIn: z.boolean(), account: z.string().nullable(), issuer: z.string().nullable() })
    .nullable(),
})
export type McpUserServerView = z.infer<typeof McpUserServerView>

/** A value typed in Settings, or `{keep: true}`: the secret stored under this name before (never sent back). */
export const McpValueInput = z.union([z.string().max(10_000), z.object({ keep: z.literal(true) }).strict()])
export type McpValueInput = z.infer<typeof McpValueInput>

const McpServerName = z.string().trim().min(1).max(64)

/** Adds or replaces one of the user's servers (`previousName`: the one it was, when renamed). */
export const McpUserServerInput = z
  .object({
    name: McpServerName,
    previousName: McpServerName.optional(),
    server: z.discriminatedUnion('kind', [
      z
        .object({
          kind: z.literal('stdio'),
          command: z.string().trim().min(1).max(4096),
          args: z.array(z.string().max(10_000)).max(500),
          env: z.record(z.string().min(1).max(500), McpValueInput),
        })
        .strict(),
      z
        .object({
          kind: z.literal('http'),
          url: z.string().trim().min(1).max(4096),
          headers: z.record(z.string().min(1).max(500), McpValueInput),
        })
        .strict(),
    ]),
    lanes: McpLanes,
  })
  .strict()
export type McpUserServerInput = z.infer<typeof McpUserServerInput>

/** What the settings screen shows. The API key itself never leaves main: only whether one is set, masked. */
export const SettingsView = z.object({
  model: z.string(),
  baseUrl: z.string().nullable(),
  scheduler: z.enum(['streaming', 'batch']),
  siblingSkip: z.boolean(),
  autoApproveEdits: z.boolean(),
  bashTimeoutSec: z.number().int().min(1).max(600),
  /** Sent only where the model takes it (shared/models.ts `thinkingSettingsFor`). */
  thinking: ThinkingSetting,
  /** Compact at this context size at the latest (tokens); null: the automatic threshold below the window. */
  compactAtTokens: z.number().int().nullable(),
  apiKey: z.object({
    /** Where the key comes from: stored by Lanes, the ANTHROPIC_API_KEY environment variable, or nowhere. */
    source: z.enum(['stored', 'environment', 'none']),
    /** e.g. "sk-ant-…f3Qa"; null when there is none. */
    masked: z.string().nullable(),
    /**
     * Where a key entered here is (or would be) kept: the OS keychain, a file sealed with the OS secret
     * store (the desktop app), or a file only this user can read.
     */
    storage: z.enum(['keychain', 'encrypted-file', 'file']),
    /** That file, for the two file kinds. */
    file: z.string().nullable(),
  }),
  /** No key and no base URL: the built-in demo model answers. */
  demo: z.boolean(),
  /** The user's own MCP servers: trusted (the user typed them), started with every session. */
  mcpServers: z.array(McpUserServerView),
})
export type SettingsView = z.infer<typeof SettingsView>

export const SettingsUpdate = z
  .object({
    model: z.string().min(1).max(200),
    baseUrl: z.string().url().max(2000).nullable(),
    scheduler: z.enum(['streaming', 'batch']),
    siblingSkip: z.boolean(),
    autoApproveEdits: z.boolean(),
    bashTimeoutSec: z.number().int().min(1).max(600),
    thinking: ThinkingSetting,
    compactAtTokens: z.number().int().min(MIN_COMPACT_AT_TOKENS).max(10_000_000).nullable(),
    /** A new key to store, or null to forget the stored one. */
    apiKey: z.string().min(1).max(500).nullable(),
  })
  .partial()
  .strict()
export type SettingsUpdate = z.infer<typeof SettingsUpdate>

export const ApprovalReply = z
  .object({
    callId: z.string().min(1).max(200),
    decision: z.enum(['approved', 'rejected']),
    /** Sent to the model with a rejection (and kept with an approval). */
    note: z.string().max(10_000).optional(),
    /** Always allow this exact command (bash), or this tool of this MCP server, in this folder. */
    always: z.boolean().optional(),
    /**
     * Allow calls of this kind for the rest of this session: the rule the review offered with the call
     * (`approval.requested`'s `sessionRule`), as the tool defines it; ignored where none is offered.
     */
    forSession: z.boolean().optional(),
    /** bash only: "needs the internet": the sandbox keeps the network for this command. */
    network: z.boolean().optional(),
    /** bash only: "run outside the sandbox" for this command. */
    outsideSandbox: z.boolean().optional(),
    /** bash only: "show me its changes before they land": every change is held for the per-file review. */
    hold: z.boolean().optional(),
    /** An approved write or edit reviewed hunk by hunk: the decision per hunk (absent: the whole change). */
    hunks: z.array(HunkDecision).max(10_000).optional(),
    /**
     * A command whose changes are held for review (issue 20): the decision per held change shown. A change not
     * listed is rejected; `decision` approved with no file accepted lands nothing.
     */
    files: z.array(HeldDecision).max(10_000).optional(),
    /** The decision on every held change under a folder (a group of the review); a file's own decision wins. */
    folders: z.array(HeldFolderDecision).max(10_000).optional(),
  })
  .strict()
export type ApprovalReply = z.infer<typeof ApprovalReply>

/** An undo (the files of one call) or a rewind (every file from a call on, optionally the conversation). */
export const RewindTarget = z
  .object({
    sessionId: SessionId,
    mode: z.enum(['undo', 'rewind']),
    callId: z.string().min(1).max(200),
    /** rewind only: the next continue starts from the call's turn. */
    conversation: z.boolean().optional(),
  })
  .strict()
export type RewindTarget = z.infer<typeof RewindTarget>

/** One file of a rewind as the dialog shows it: the diff from now to the point, and a conflict's versions. */
export const RewindFileView = z.object({
  relPath: z.string(),
  action: z.enum(['restore', 'remove', 'create']),
  /** From the file as it is now to its content at the point (capped like a write preview). */
  diff: WritePreview,
  /** Changed since Lanes last wrote it: never rewound unless the user says so. */
  conflict: z.boolean(),
  /** Why it cannot be rewound at all (not a regular file any more). */
  blocked: z.string().optional(),
  /** A conflict's three versions (null: no such file; absent: not kept, or too large to show). */
  versions: z
    .object({
      atPoint: z.string().nullable().optional(),
      lanesLeft: z.string().nullable().optional(),
      now: z.string().nullable().optional(),
    })
    .optional(),
})
export type RewindFileView = z.infer<typeof RewindFileView>

export const RewindPreview = z.object({
  files: z.array(RewindFileView),
  /** The calls whose file changes go back. */
  callIds: z.array(z.string()),
  /** The turn the conversation goes back to. */
  turn: z.number().int().positive().optional(),
})
export type RewindPreview = z.infer<typeof RewindPreview>

export const RewindDone = z.object({
  rewindId: z.string(),
  changed: z.array(z.object({ relPath: z.string(), action: z.enum(['restore', 'remove', 'create']) })),
  skipped: z.array(z.object({ relPath: z.string(), reason: z.string() })),
})
export type RewindDone = z.infer<typeof RewindDone>

export const SessionLoaded = z.object({
  events: z.array(SessionEvent),
  /** Lines of the log that could not be read (the rest was). */
  warnings: z.array(z.string()),
  /** A run of this session is going on in this app right now. */
  live: z.boolean(),
  /**
   * Asked with `tail`: the log's last turns and the session-level events before them, not all of it (see
   * readSessionPreview). For painting a long session at once; the whole log is asked for next.
   */
  partial: z.boolean().optional(),
})
export type SessionLoaded = z.infer<typeof SessionLoaded>

/**
 * One MCP server of the open folder's `.mcp.json` as the trust dialog shows it: exactly what would run (command,
 * arguments, environment; or URL and headers), with what permissions, and whether there is a sandbox for it.
 */
export const McpServerView = z.object({
  ...mcpEntry(z.string()),
  /** What it runs with: the user's choice once trusted, else what its entry asks for. */
  permissions: McpLanes,
  /** What its entry asks for (its `"lanes"` key, or the defaults of a folder's server). */
  requested: McpLanes,
  trusted: z.boolean(),
  /** A hash of what runs and what its entry asks for: trusting it trusts exactly this. */
  trustKey: z.string(),
  /** Why it would run without a sandbox; null when it runs in one (or is not a process here). */
  noSandbox: z.string().nullable(),
})
export type McpServerView = z.infer<typeof McpServerView>

export const McpServersView = z.object({
  servers: z.array(McpServerView),
  /** The file, or an entry, that could not be used, each in one sentence. */
  problems: z.array(z.string()),
})
export type McpServersView = z.infer<typeof McpServersView>

/** The most lines one `approval:diff` answers. */
export const FULL_DIFF_PAGE_MAX = 2000
/** The most held changes one `held:files` page carries. */
export const HELD_PAGE_MAX = 500

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
  /** The folder browser: a folder's subfolders (the home folder without a path), breadcrumbs, recent folders. */
  'folder:list': {
    input: z
      .object({ path: z.string().min(1).max(4096).optional() })
      .strict()
      .optional(),
    output: FolderListing,
  },

  /** The open workspace's sessions, newest first. */
  'session:list': { input: NoInput, output: z.array(SessionSummary) },
  /** Starts a run: a new session, or a follow-up task in a session whose last run has ended. */
  'session:start': {
    input: z
      .object({ task: z.string().trim().min(1).max(100_000), sessionId: SessionId.optional() })
      .strict(),
    output: z.object({ sessionId: SessionId }),
  },
  /** Every event of a session so far; live ones keep coming on `session:events`. */
  /**
   * A session's log. With `tail`, a preview when the log is longer: its last turns (at least `tail` events) and the
   * session-level events before them, `partial: true`.
   */
  'session:load': {
    input: z.object({ sessionId: SessionId, tail: z.number().int().min(1).max(100_000).optional() }).strict(),
    output: SessionLoaded,
  },
  /** Continues a paused or interrupted run (after a restart, say), in the folder the session recorded. */
  'session:continue': {
    input: z.object({ sessionId: SessionId }).strict(),
    output: z.object({ sessionId: SessionId }),
  },
  'session:stop': { input: z.object({ sessionId: SessionId }).strict(), output: z.null() },
  /**
   * Decisions for calls waiting for approval; any subset of the turn's calls, in one go. They apply in the
   * session's own folder, whichever folder is open now.
   */
  'approval:reply': {
    input: z.object({ sessionId: SessionId, decisions: z.array(ApprovalReply).min(1).max(1000) }).strict(),
    output: z.null(),
  },
  /**
   * A page of the full unified diff of a change waiting for review ("open in full" on a large change): lines
   * from `from`, `@@` headers included, and how many there are. Refused (with the reason) for a call that is
   * not waiting in a run of this app.
   */
  'approval:diff': {
    input: z
      .object({
        sessionId: SessionId,
        callId: z.string().min(1).max(200),
        from: z.number().int().nonnegative(),
        count: z.number().int().min(1).max(FULL_DIFF_PAGE_MAX),
      })
      .strict(),
    output: z.object({ total: z.number().int().nonnegative(), lines: z.array(z.string()) }),
  },
  /**
   * A page of the held changes of one folder group of a command's review (issue 20), in the change set's order,
   * without their diffs, and how many the group holds. Refused for a command whose review is not waiting.
   */
  'held:files': {
    input: z
      .object({
        sessionId: SessionId,
        callId: z.string().min(1).max(200),
        folder: z.string().max(4096),
        offset: z.number().int().nonnegative(),
        limit: z.number().int().min(1).max(HELD_PAGE_MAX),
      })
      .strict(),
    output: z.object({ total: z.number().int().nonnegative(), files: z.array(HeldFile) }),
  },
  /** One held change with its diff (or a note saying what it becomes), loaded when the user opens it. */
  'held:diff': {
    input: z
      .object({
        sessionId: SessionId,
        callId: z.string().min(1).max(200),
        relPath: z.string().min(1).max(4096),
      })
      .strict(),
    output: HeldFile,
  },
  /**
   * Revokes one of the session's "allow for the rest of this session" rules (its settings): logged as
   * `rule.revoked`, so the calls it covered ask again.
   */
  'session:revoke-rule': {
    input: z.object({ sessionId: SessionId, ruleId: z.string().min(1).max(200) }).strict(),
    /** `live`: a run in this app holds the session and streams the event; else reload the session to see it. */
    output: z.object({ live: z.boolean() }),
  },
  /** What an undo or rewind would change (nothing is touched); refused with the reason as an error. */
  'rewind:plan': { input: RewindTarget, output: RewindPreview },
  /**
   * Applies it. A conflicting file is rewound only if listed in `rewindConflicts`; the others are skipped and
   * reported. The session's events (rewind.started/finished) are in its log; reload it to show them.
   */
  'rewind:apply': {
    input: RewindTarget.extend({
      rewindConflicts: z.array(z.string().max(4096)).max(10_000).optional(),
    }).strict(),
    output: RewindDone,
  },
  'settings:get': { input: NoInput, output: SettingsView },
  'settings:set': { input: SettingsUpdate, output: SettingsView },
  /** The open folder's `.mcp.json` servers, for the trust dialog. */
  'mcp:list': { input: NoInput, output: McpServersView },
  /**
   * Trusts the open folder's server whose `trustKey` this is: what the dialog showed. A file changed since has
   * another key, so this is refused and the dialog shows the new one.
   */
  'mcp:trust': {
    input: z
      .object({
        trustKey: z.string().regex(/^[0-9a-f]{64}$/),
        /** The permissions the user chose in the dialog (default: what its entry asks for). */
        lanes: McpLanes.optional(),
      })
      .strict(),
    output: McpServersView,
  },
  /** Adds or changes one of the user's own servers (Settings); refused with the reason when it is not valid. */
  'mcp:save-server': { input: McpUserServerInput, output: SettingsView },
  'mcp:remove-server': { input: z.object({ name: McpServerName }).strict(), output: SettingsView },
  /**
   * Starts signing in to one of the user's remote servers: answers once the sign-in page's address is known
   * (`opened`: the system browser shows it; otherwise the UI shows the address), or with `url: null` when the
   * stored sign-in could be renewed without a page. The outcome comes as `mcp:auth-changed`.
   */
  'mcp:sign-in': {
    input: z.object({ name: McpServerName }).strict(),
    output: z.object({ url: z.string().nullable(), opened: z.boolean() }),
  },
  /** Forgets the server's tokens and client registration. */
  'mcp:sign-out': { input: z.object({ name: McpServerName }).strict(), output: SettingsView },
} as const

export const eventChannels = {
  'workspace:changed': WorkspaceInfo,
  /** New events of live sessions, batched (at most one message per session per frame). */
  'session:events': z.object({ sessionId: SessionId, events: z.array(SessionEvent) }),
  /** The session list changed (a session was created or changed status). */
  'session:list-changed': z.object({}),
  /** A sign-in to an MCP server ended: signed in (`error` null) or not, and why. */
  'mcp:auth-changed': z.object({ server: z.string(), error: z.string().nullable() }),
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

/**
 * Browser mode's handshake. The page asks for the `lanes` subprotocol and presents its token as a second one,
 * `lanes.token.<token>` (a browser lets a page set no other header on a WebSocket); the host echoes only
 * `lanes`. A page with no valid token goes to ACCESS_PATH, which says how to get in; TOKEN_CHECK_PATH answers
 * 204 or 401 to an `X-Lanes-Token` header, so a page whose socket is refused can tell a stale token from a
 * host that is down.
 */
export const WEB_API_PATH = '/api'
export const WEB_API_PROTOCOL = 'lanes'
export const WEB_TOKEN_PROTOCOL_PREFIX = 'lanes.token.'
export const WEB_ACCESS_PATH = '/access'
export const WEB_TOKEN_CHECK_PATH = '/api/token'

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
