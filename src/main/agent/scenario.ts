import { z } from 'zod'

/**
 * The scripted model's scenario file (DESIGN 9). The documented fields are a contract that tests outside the
 * project rely on; the fields marked "extra" exist to make failure paths testable and never change what the
 * documented ones mean.
 *
 * Unknown keys are not an error: they are reported as warnings by `parseScenario`, so a typo
 * (`tokensPerSec`) is visible without breaking a scenario written for a newer version.
 */

export type TextBlock = { text: string }
export type ToolBlock = { tool: string; input?: unknown; rawInput?: string; id?: string }
/** A `thinking` block: its text (empty when the display is omitted) and its signature. */
export type ThinkingBlock = { thinking: string; signature: string }
export type RedactedThinkingBlock = { redactedThinking: string }
/** A `compaction` block (server-side compaction): its summary, or null for a failed compaction. */
export type CompactionBlock = { compaction: string | null }
export type AnyScenarioBlock = TextBlock | ToolBlock | ThinkingBlock | RedactedThinkingBlock | CompactionBlock

const BlockFields = z.object({
  text: z.string().optional().describe('Text the model streams as text_delta chunks.'),
  tool: z.string().min(1).optional().describe('Tool name as the model would call it.'),
  input: z
    .unknown()
    .optional()
    .describe('Arguments, serialized with JSON.stringify and streamed as input_json_delta chunks.'),
  rawInput: z.string().optional().describe('Argument text streamed verbatim (malformed on purpose).'),
  /**
   * extra: a fixed tool_use id instead of the generated one. Any text up to 128 characters, so a scenario can
   * play a gateway whose ids break the API's pattern (`call:1.2`); the client must map those.
   */
  id: z.string().min(1).max(128).optional(),
  thinking: z.string().optional().describe('A thinking block: its text, streamed as thinking_delta chunks.'),
  signature: z.string().min(1).optional().describe("The thinking block's signature (signature_delta)."),
  redactedThinking: z.string().min(1).optional().describe('A redacted_thinking block: its opaque data.'),
  compaction: z
    .string()
    .min(1)
    .nullable()
    .optional()
    .describe(
      'A compaction block (server-side compaction): its summary, streamed as one compaction_delta with opaque encrypted_content; null: a failed compaction.',
    ),
})

const KINDS = ['text', 'tool', 'thinking', 'redactedThinking', 'compaction'] as const

/** One content block: `{ text }`, `{ tool, input | rawInput }`, `{ thinking, signature }` or `{ redactedThinking }`. */
export const ScenarioBlock = BlockFields.superRefine((b, ctx) => {
  const kinds = KINDS.filter((k) => b[k] !== undefined)
  if (kinds.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      message:
        'a block has exactly one of "text", "tool" (with "input" or "rawInput"), "thinking" (with "signature"), "redactedThinking" or "compaction"',
    })
    return
  }
  if (kinds[0] === 'thinking' && b.signature === undefined) {
    ctx.addIssue({ code: 'custom', message: 'a thinking block needs its "signature"' })
  }
  if (kinds[0] !== 'thinking' && b.signature !== undefined) {
    ctx.addIssue({ code: 'custom', message: '"signature" belongs to a thinking block' })
  }
  if (kinds[0] !== 'tool' && (b.input !== undefined || b.rawInput !== undefined || b.id !== undefined)) {
    ctx.addIssue({ code: 'custom', message: 'only a tool block takes "input", "rawInput" or "id"' })
  }
  if (b.text !== undefined && (b.input !== undefined || b.rawInput !== undefined || b.id !== undefined)) {
    ctx.addIssue({ code: 'custom', message: 'a text block takes no "input", "rawInput" or "id"' })
  }
  if (b.input !== undefined && b.rawInput !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'give either "input" or "rawInput", not both' })
  }
}).transform((b): AnyScenarioBlock => b as AnyScenarioBlock)
export type ScenarioBlock = z.infer<typeof ScenarioBlock>

/** A count of blocks, or null for "never" (the DESIGN example writes `"failAfterBlocks": null`). */
const BlockCount = z.number().int().min(0).nullable().optional()

export const ScenarioTurn = z
  .object({
    blocks: z.array(ScenarioBlock).describe('Content blocks of the response, in order.'),
    stop: z
      .enum([
        'tool_use',
        'end_turn',
        'max_tokens',
        'stop_sequence',
        'refusal',
        'model_context_window_exceeded',
        'pause_turn',
      ])
      .optional()
      .describe('Stop reason. Absent: tool_use when a block calls a tool, else end_turn.'),
    /** extra: a stop reason sent as it is, in place of `stop`: one newer than the client (`"compaction"`). */
    rawStop: z.string().min(1).max(64).optional(),
    /** `stop_details` sent in message_delta with `stop: "refusal"` (the API's `{ type, category, explanation }`). */
    stopDetails: z
      .object({
        type: z.literal('refusal').optional(),
        category: z.string().nullable().optional(),
        explanation: z.string().nullable().optional(),
      })
      .optional(),
    /**
     * Answer the first `times` requests for this turn with this HTTP status (and `retry-after`, seconds) and the
     * API's JSON error body, then serve the turn.
     */
    http: z
      .object({
        status: z.number().int().min(400).max(599),
        retryAfter: z.number().min(0).max(86_400).optional(),
        times: z.number().int().min(1).max(100).optional(),
        /** extra: `error.details.error_code` of the body (`enforced_spend_limit_reached`). */
        errorCode: z.string().min(1).optional(),
      })
      .optional(),
    /**
     * The usage this answer reports instead of the one computed from the request (4 characters a token), so a
     * scenario can fill a window of any size: `input_tokens` (cache reads and writes then 0).
     */
    usage: z.object({ input_tokens: z.number().int().min(0).max(10_000_000) }).optional(),
    /** Send an SSE `error` (overloaded_error) right after message_start, once, before serving the turn. */
    errorBeforeContent: z.boolean().optional(),
    /** Interleave `ping` events between the content events. */
    ping: z.boolean().optional(),
    tokensPerSecond: z.number().positive().max(1_000_000).nullable().optional(),
    firstTokenMs: z.number().min(0).max(600_000).nullable().optional(),
    failAfterBlocks: BlockCount,
    /** extra: destroy the socket after this many blocks (a dropped connection, no SSE error). */
    closeAfterBlocks: BlockCount,
    /** extra: the failure (failAfterBlocks / closeAfterBlocks) lands halfway through the next block. */
    failMidBlock: z.boolean().optional(),
    /** extra: answer this HTTP status with an Anthropic error body instead of a response (retry tests). */
    httpStatus: z.number().int().min(400).max(599).optional(),
    /** extra: `retry-after` header (seconds) sent with httpStatus. */
    retryAfter: z.number().min(0).max(3600).optional(),
    /** extra: message of the error body (httpStatus) or of the SSE error event (failAfterBlocks). */
    errorMessage: z.string().optional(),
  })
  .superRefine((turn, ctx) => {
    const fail = turn.failAfterBlocks ?? null
    const close = turn.closeAfterBlocks ?? null
    if (fail !== null && close !== null) {
      ctx.addIssue({ code: 'custom', message: 'use either failAfterBlocks or closeAfterBlocks, not both' })
    }
    if (
      (turn.stop === 'max_tokens' || turn.stop === 'model_context_window_exceeded') &&
      turn.blocks.length === 0
    ) {
      ctx.addIssue({ code: 'custom', path: ['stop'], message: `${turn.stop} needs a block to cut off` })
    }
    if (turn.stopDetails !== undefined && turn.stop !== 'refusal') {
      ctx.addIssue({ code: 'custom', path: ['stopDetails'], message: 'stopDetails goes with stop "refusal"' })
    }
    if (turn.http !== undefined && turn.httpStatus !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['http'], message: 'use either "http" or "httpStatus", not both' })
    }
    if (turn.retryAfter !== undefined && turn.httpStatus === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['retryAfter'],
        message: 'retryAfter only applies with httpStatus',
      })
    }
  })
export type ScenarioTurn = z.infer<typeof ScenarioTurn>

export const Scenario = z.object({
  turns: z.array(ScenarioTurn),
  /** extra: what the scenario demonstrates and the workspace it expects (for people reading it). */
  description: z.string().optional(),
  /**
   * extra: reject requests the real API would reject (unpaired tool_use/tool_result, empty text blocks, more
   * than 4 cache_control blocks...) with a 400, as the real API does. Default true: a fake model that accepts
   * what the real one refuses hides exactly the bugs it should catch.
   */
  validateRequests: z.boolean().optional(),
  /**
   * Also check what only `--strict` checks: thinking blocks of the latest assistant turn sent back unchanged,
   * whitespace-only text blocks, cache_control on thinking blocks, an assistant prefill.
   */
  strict: z.boolean().optional(),
  /**
   * The model's context window in tokens: a request whose input (computed, 4 characters a token) is larger is
   * answered 400 "prompt is too long: N tokens > M maximum", as the API does, without consuming a turn.
   */
  contextWindow: z.number().int().min(1).optional(),
  /**
   * Beta names this endpoint does not know: a request that sends one in `anthropic-beta` is answered 400
   * ("Unexpected value(s) ... for the `anthropic-beta` header"), without consuming a turn. A request with
   * `context_management` but without the compaction beta is refused too, always.
   */
  rejectBetas: z.array(z.string().min(1)).optional(),
})
export type Scenario = z.infer<typeof Scenario>

export type ParsedScenario =
  { ok: true; scenario: Scenario; warnings: string[] } | { ok: false; error: string }

const KNOWN_KEYS = {
  scenario: new Set(Object.keys(Scenario.shape)),
  turn: new Set(Object.keys(ScenarioTurn.shape)),
  block: new Set(Object.keys(BlockFields.shape)),
}

/** Validates a scenario from its JSON text (or an already parsed value); never throws. */
export function parseScenario(source: string | unknown, label = 'scenario'): ParsedScenario {
  let value = source
  if (typeof source === 'string') {
    try {
      value = JSON.parse(source) as unknown
    } catch (e) {
      return { ok: false, error: `${label} is not valid JSON: ${(e as Error).message}` }
    }
  }
  const parsed = Scenario.safeParse(value)
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 10).map((issue) => {
      const where = issue.path.length > 0 ? formatPath(issue.path) : '(top level)'
      return `  ${where}: ${issue.message}`
    })
    const more = parsed.error.issues.length > 10 ? `\n  ...and ${parsed.error.issues.length - 10} more` : ''
    return { ok: false, error: `${label} is not a valid scenario:\n${issues.join('\n')}${more}` }
  }
  return { ok: true, scenario: parsed.data, warnings: unknownKeys(value as Record<string, unknown>) }
}

function unknownKeys(raw: Record<string, unknown>): string[] {
  const warnings: string[] = []
  const check = (obj: unknown, known: Set<string>, path: (string | number)[]): void => {
    if (typeof obj !== 'object' || obj === null) return
    for (const key of Object.keys(obj)) {
      if (!known.has(key)) warnings.push(`${formatPath([...path, key])} is not a known field; it is ignored.`)
    }
  }
  check(raw, KNOWN_KEYS.scenario, [])
  const turns = Array.isArray(raw.turns) ? (raw.turns as unknown[]) : []
  turns.forEach((turn, t) => {
    check(turn, KNOWN_KEYS.turn, ['turns', t])
    const blocks = (turn as { blocks?: unknown }).blocks
    if (Array.isArray(blocks))
      blocks.forEach((block, b) => check(block, KNOWN_KEYS.block, ['turns', t, 'blocks', b]))
  })
  return warnings
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('')
}
