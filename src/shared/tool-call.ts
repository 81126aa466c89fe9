import { z } from 'zod'
import {
  ApprovalDecision,
  ApprovalPreview,
  HeldFile,
  HeldGroup,
  HeldPath,
  HunkDecision,
  Lane,
  SessionRule,
} from './events'

/**
 * The state of one tool call as the reducer builds it from the events (reducer.ts). The status strings are
 * the UI's `data-status` values and are part of the contract tests rely on.
 *
 * queued → (awaiting-approval →) running → ok | error, with the side exits rejected (the user said no),
 * skipped (an earlier unsafe sibling failed) and cancelled (the user stopped the run). An approved call goes
 * back to queued until the scheduler starts it.
 */
export const ToolCallStatus = z.enum([
  'queued',
  'awaiting-approval',
  'running',
  'ok',
  'error',
  'rejected',
  'skipped',
  'cancelled',
])
export type ToolCallStatus = z.infer<typeof ToolCallStatus>

export const ToolCallApproval = z.object({
  preview: ApprovalPreview.optional(),
  requestedAt: z.number().optional(),
  decision: ApprovalDecision.optional(),
  note: z.string().optional(),
  always: z.boolean().optional(),
  /** What "allow for the rest of this session" would grant with its approval (offered in the review). */
  sessionRule: SessionRule.optional(),
  /** bash: the user let it reach the network (in the sandbox). */
  network: z.boolean().optional(),
  /** bash: the user let it run outside the sandbox. */
  outsideSandbox: z.boolean().optional(),
  /** bash: the user asked to review its changes before they land. */
  hold: z.boolean().optional(),
  by: z.enum(['user', 'cli']).optional(),
  decidedAt: z.number().optional(),
  /** Per-hunk review of a write or edit: the decision on each hunk (absent: the change as a whole). */
  hunks: z.array(HunkDecision).optional(),
})
export type ToolCallApproval = z.infer<typeof ToolCallApproval>

/**
 * The live output of a running call (bash). Only the last LIVE_OUTPUT_TAIL_CHARS (to 1.25x that, so trimming
 * is amortized) are kept in state: a command printing 1 GB must not grow the renderer; the full output is in
 * the session folder and the model's view is in `output`.
 */
export const LiveOutput = z.object({
  tail: z.string(),
  /** Characters received in all chunks. */
  totalChars: z.number().int().nonnegative(),
  /** Characters dropped from the front of `tail`. */
  droppedChars: z.number().int().nonnegative(),
  chunks: z.number().int().nonnegative(),
})
export type LiveOutput = z.infer<typeof LiveOutput>

export const LIVE_OUTPUT_TAIL_CHARS = 64 * 1024

/**
 * Fields every call has. Result fields are optional here so a view can read `call.output` without narrowing;
 * the members below make them required where the status guarantees them.
 */
const ToolCallBase = z.object({
  callId: z.string(),
  runId: z.string().optional(),
  turn: z.number().int(),
  /** Content block index in the model's message. */
  index: z.number().int(),
  name: z.string(),
  /** Parsed arguments, or null when unparsable (then `rawInput` holds what the model sent). */
  input: z.unknown(),
  rawInput: z.string().optional(),
  title: z.string().optional(),
  /** The MCP server that provides the tool. */
  server: z.string().optional(),
  safe: z.boolean(),
  lane: Lane,
  queuedAt: z.number(),
  approval: ToolCallApproval.optional(),
  startedAt: z.number().optional(),
  finishedAt: z.number().optional(),
  durationMs: z.number().optional(),
  isError: z.boolean().optional(),
  /** What the model sees. */
  output: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  /** For a skipped call: the failed call that caused it. */
  causeCallId: z.string().optional(),
  live: LiveOutput.optional(),
  /** A write or edit whose previous content was kept: it can be undone. */
  undoable: z.boolean().optional(),
  /**
   * Protected changes an approved command made that were held back (issue 20), and whether they landed; in the
   * app, the per-file review (`review`, waiting while `pending`) and what the user accepted and rejected.
   */
  held: z
    .object({
      paths: z.array(HeldPath),
      count: z.number().int().nonnegative(),
      landed: z.boolean(),
      review: z.array(HeldFile).optional(),
      groups: z.array(HeldGroup).optional(),
      /** Cut short when Lanes stopped: everything it had changed is held (command.held `interrupted`). */
      interrupted: z.literal(true).optional(),
      pending: z.boolean().optional(),
      accepted: z.array(z.string()).optional(),
      rejected: z.array(HeldPath).optional(),
      acceptedCount: z.number().int().nonnegative().optional(),
      rejectedCount: z.number().int().nonnegative().optional(),
    })
    .optional(),
  /** The rewind (or undo) that took this call's file changes back. */
  rewoundBy: z.string().optional(),
})

export const ToolCallState = z.discriminatedUnion('status', [
  ToolCallBase.extend({ status: z.literal('queued') }),
  ToolCallBase.extend({
    status: z.literal('awaiting-approval'),
    approval: ToolCallApproval.extend({ preview: ApprovalPreview }),
  }),
  ToolCallBase.extend({ status: z.literal('running'), startedAt: z.number() }),
  ToolCallBase.extend({
    status: z.literal('ok'),
    isError: z.literal(false),
    output: z.string(),
    finishedAt: z.number(),
  }),
  ToolCallBase.extend({
    status: z.literal('error'),
    isError: z.literal(true),
    output: z.string(),
    finishedAt: z.number(),
  }),
  /** The rejection result (`output`) arrives with the engine's tool.finished right after the decision. */
  ToolCallBase.extend({
    status: z.literal('rejected'),
    approval: ToolCallApproval.extend({ decision: z.literal('rejected') }),
  }),
  ToolCallBase.extend({
    status: z.literal('skipped'),
    isError: z.literal(true),
    output: z.string(),
    causeCallId: z.string(),
    finishedAt: z.number(),
  }),
  ToolCallBase.extend({
    status: z.literal('cancelled'),
    isError: z.literal(true),
    output: z.string(),
    finishedAt: z.number(),
  }),
])
export type ToolCallState = z.infer<typeof ToolCallState>

/** `ToolCallOf<'ok'>` is the member of the union with that status. */
export type ToolCallOf<S extends ToolCallStatus> = Extract<ToolCallState, { status: S }>
