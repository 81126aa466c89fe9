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

/** The context window of the Claude models Lanes offers, in tokens (what tool definitions are weighed against). */
export const CONTEXT_WINDOW_TOKENS = 200_000
