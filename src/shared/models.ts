import { z } from 'zod'

/**
 * What each model accepts for thinking, from the Messages API documentation (Claude Sonnet 5.5 migration guide
 * and "What's new": https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide). One home for it:
 * the model client builds the request from it and the Settings dialog offers only what it lists.
 *
 * - adaptive: the model decides when and how much to think (the default on these models when a request has
 *   no `thinking` field).
 * - between_tools: no up-front thinking; the short progress notes between tool calls still come back as
 *   thinking blocks. The lowest setting: `{"type": "disabled"}` is a 400 on these models.
 */
export const ThinkingSetting = z.enum(['adaptive', 'between_tools'])
export type ThinkingSetting = z.infer<typeof ThinkingSetting>

/**
 * Models whose thinking is adaptive by default and whose default `display` is "omitted": the text between
 * tool calls comes back inside thinking blocks, so the request asks for `display: "summarized"` to get it.
 */
const ADAPTIVE_BY_DEFAULT = [/^claude-sonnet-5-5(\b|-)/, /^claude-opus-5-5(\b|-)/, /^claude-fable-5/]

/** The thinking settings a model takes, or null when Lanes sends no `thinking` field to it. */
export function thinkingSettingsFor(model: string): readonly ThinkingSetting[] | null {
  return ADAPTIVE_BY_DEFAULT.some((re) => re.test(model)) ? ThinkingSetting.options : null
}

/**
 * What Lanes knows of a model's context (issue 21): its window in tokens, and whether the API compacts its
 * conversations itself (server-side compaction, the `compact_20260112` context-management edit behind the
 * `compact-2026-01-12` beta header: https://platform.claude.com/docs/en/build-with-claude/compaction).
 *
 * The compaction page lists Claude Opus 4.6 and 4.7, Sonnet 4.6 and Mythos Preview; the 5.5 family and Fable
 * are newer and are tried too. A model or endpoint that refuses the beta (a 400 naming it) is compacted by Lanes
 * itself for the rest of the session, so a wrong "yes" here costs one refused request, never a run.
 *
 * Windows: 200,000 tokens unless the model is known to have more. Underestimating only compacts earlier.
 */
export interface ModelContext {
  window: number
  serverCompaction: boolean
}

export const DEFAULT_CONTEXT_WINDOW = 200_000

const SERVER_COMPACTION = [
  /^claude-opus-4-6(\b|-)/,
  /^claude-opus-4-7(\b|-)/,
  /^claude-sonnet-4-6(\b|-)/,
  /^claude-mythos-preview(\b|-)/,
  ...ADAPTIVE_BY_DEFAULT,
]

export function modelContext(model: string): ModelContext {
  return {
    window: DEFAULT_CONTEXT_WINDOW,
    serverCompaction: SERVER_COMPACTION.some((re) => re.test(model)),
  }
}

/** The smallest compaction threshold Settings accepts (the API's own minimum trigger is 50,000 tokens). */
export const MIN_COMPACT_AT_TOKENS = 20_000

/**
 * The context size (input tokens the API reported for the latest request) at which Lanes compacts: a margin
 * below the window that leaves room for one more answer and its tool results, or the user's lower setting.
 */
export function compactionThreshold(window: number, setting?: number): number {
  const margin = Math.max(40_000, Math.round(window * 0.15))
  const auto = Math.max(MIN_COMPACT_AT_TOKENS, window - margin)
  if (setting === undefined || !Number.isFinite(setting)) return auto
  return Math.max(MIN_COMPACT_AT_TOKENS, Math.min(auto, Math.floor(setting)))
}
