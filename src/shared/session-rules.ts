import { z } from 'zod'

/**
 * "Allow for the rest of this session" (issue 21 §3): a rule the user grants in the review with an approval, for
 * one kind of call. It lives in the session's log (`rule.granted`, `rule.revoked`), so it holds for that session
 * only, across a restart, and replay shows it. What a rule may cover is decided by the tool that offers it
 * (`Tool.sessionRule`) and honoured by the tool's own policy; these are the rules' shapes and their matching.
 *
 * - `edits`: write_file and edit_file on any file but the protected ones (which always ask);
 * - `command`: a bash command whose parsed words (after quote removal, as the validator reads them) begin with
 *   `words`: `npm test` covers `npm test -- --run a.test.ts`, never `npm testx`, and never a command the
 *   validator refuses (`npm test; rm -rf /` is not one simple command) or one that would not run sandboxed;
 * - `tool`: every call of that tool (an MCP tool that does not say it is destructive).
 */
export const SessionRule = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('edits') }),
  z.object({ kind: z.literal('command'), words: z.array(z.string().min(1)).min(1).max(64) }),
  z.object({ kind: z.literal('tool'), tool: z.string().min(1).max(200) }),
])
export type SessionRule = z.infer<typeof SessionRule>

/** A rule in force, as the reducer keeps it. */
export interface GrantedRule {
  ruleId: string
  rule: SessionRule
  grantedAt: number
  /** The call whose approval granted it. */
  callId?: string
}

/** Two rules that cover the same calls (granting one again adds nothing). */
export function sameRule(a: SessionRule, b: SessionRule): boolean {
  switch (a.kind) {
    case 'edits':
      return b.kind === 'edits'
    case 'command':
      return (
        b.kind === 'command' && a.words.length === b.words.length && a.words.every((w, i) => w === b.words[i])
      )
    case 'tool':
      return b.kind === 'tool' && a.tool === b.tool
  }
}

/** True when a rule lets a command with these parsed words run; a prefix of whole words, never of characters. */
export function rulesAllowCommand(rules: readonly SessionRule[], words: readonly string[]): boolean {
  return rules.some(
    (rule) =>
      rule.kind === 'command' &&
      rule.words.length <= words.length &&
      rule.words.every((word, i) => word === words[i]),
  )
}

export function rulesAllowEdits(rules: readonly SessionRule[]): boolean {
  return rules.some((rule) => rule.kind === 'edits')
}

export function rulesAllowTool(rules: readonly SessionRule[], tool: string): boolean {
  return rules.some((rule) => rule.kind === 'tool' && rule.tool === tool)
}

/** How the review and the session's settings name a rule. */
export function describeSessionRule(rule: SessionRule): string {
  switch (rule.kind) {
    case 'edits':
      return 'Edits to files (except protected ones)'
    case 'command':
      return `Commands starting with ${rule.words.map(shownWord).join(' ')}`
    case 'tool':
      return `The tool ${rule.tool}`
  }
}

/** A word as the user would type it: quoted when it holds anything but plain characters. */
function shownWord(word: string): string {
  return /^[A-Za-z0-9_\-.,/:=+@%^]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}
