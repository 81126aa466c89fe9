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
 * Windows, from each model's page of the Models overview (platform.claude.com/docs/en/models/<model>/overview,
 * read 2026-12) and the "Context windows" page: 1M tokens for Fable 5 and 5.1, Mythos Preview, 5 and 5.1, Opus
 * 4.6, 4.7, 4.8, 5 and 5.5, Sonnet 4.6, 5 and 5.5, and Haiku 5.5; 200k for every other model (Sonnet 4.5, Haiku
 * 4.5, Opus 4.5 and older). On these models the 1M window is their standard window: no beta header asks for it
 * (the old `context-1m-2025-08-07` beta was for Sonnet 4 and 4.5, which Lanes counts at 200k and sends no such
 * header to). An unknown model gets DEFAULT_CONTEXT_WINDOW: underestimating only compacts earlier, and a window
 * overestimated (a gateway's smaller one) ends in a "prompt is too long" that compacts and goes on; the model
 * client's `contextWindow` option overrides the table.
 */
export interface ModelContext {
  window: number
  serverCompaction: boolean
}

export const DEFAULT_CONTEXT_WINDOW = 200_000

const MILLION = 1_000_000

/** Models with a 1M-token window, by their id without `claude-` and without a date suffix (`-20251001`). */
const MILLION_TOKEN_MODELS = new Set([
  'fable-5',
  'fable-5-1',
  'mythos-preview',
  'mythos-5',
  'mythos-5-1',
  'opus-4-6',
  'opus-4-7',
  'opus-4-8',
  'opus-5',
  'opus-5-5',
  'sonnet-4-6',
  'sonnet-5',
  'sonnet-5-5',
  'haiku-5-5',
])

const SERVER_COMPACTION = [
  /^claude-opus-4-6(\b|-)/,
  /^claude-opus-4-7(\b|-)/,
  /^claude-sonnet-4-6(\b|-)/,
  /^claude-mythos-preview(\b|-)/,
  ...ADAPTIVE_BY_DEFAULT,
]

export function modelContext(model: string): ModelContext {
  return {
    window: contextWindowOf(model),
    serverCompaction: SERVER_COMPACTION.some((re) => re.test(model)),
  }
}

/** The model's documented window: `claude-sonnet-4-6` and `claude-haiku-4-5-20251001` alike. */
function contextWindowOf(model: string): number {
  const name = /^claude-([a-z]+(?:-[a-z0-9]+)*?)(?:-\d{8})?$/.exec(model)?.[1]
  return name !== undefined && MILLION_TOKEN_MODELS.has(name) ? MILLION : DEFAULT_CONTEXT_WINDOW
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
