import { describe, expect, it } from 'vitest'
import { GIT_WORKSPACE_RULES } from '../tools/sensitive-paths'
import type { PolicyOptions, Tool } from '../tools/tool'
import type { McpConnection } from './connection'
import { mcpTool } from './tools'

const connection = { config: { name: 'files' } } as unknown as McpConnection

function tool(annotations: Record<string, unknown>): Tool {
  const made = mcpTool({
    name: 'mcp__files__put',
    def: { name: 'put', inputSchema: { type: 'object' }, annotations },
    connection,
  })
  if ('error' in made) throw new Error(made.error)
  return made
}

const opts: PolicyOptions = {
  workspace: '/w',
  pathRules: GIT_WORKSPACE_RULES,
  alwaysAllow: [],
  autoApproveEdits: false,
  sandbox: true,
}

describe('an MCP tool allowed for the rest of the session', () => {
  it('runs unasked once the rule names it, and asks without it', () => {
    const put = tool({})
    expect(put.sessionRule?.({}, opts)).toEqual({ kind: 'tool', tool: 'mcp__files__put' })
    expect(put.policy?.({}, opts)).toEqual({ kind: 'ask', protected: false })
    const ruled = { ...opts, sessionRules: [{ kind: 'tool' as const, tool: 'mcp__files__put' }] }
    expect(put.policy?.({}, ruled)).toEqual({ kind: 'allow' })
    const other = { ...opts, sessionRules: [{ kind: 'tool' as const, tool: 'mcp__files__get' }] }
    expect(put.policy?.({}, other)).toEqual({ kind: 'ask', protected: false })
  })

  it('is never offered for, nor covers, a tool that says it is destructive', () => {
    const wipe = tool({ destructiveHint: true, readOnlyHint: true })
    expect(wipe.sessionRule?.({}, opts)).toBeUndefined()
    const ruled = { ...opts, sessionRules: [{ kind: 'tool' as const, tool: 'mcp__files__put' }] }
    expect(wipe.policy?.({}, ruled)).toEqual({ kind: 'ask', protected: false })
  })
})
