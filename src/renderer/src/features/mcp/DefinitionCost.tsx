import { overBudget, serverTokens } from '../../../../shared/mcp-cost'
import { DEFAULT_CONTEXT_WINDOW, modelContext } from '../../../../shared/models'
import { useAppStore } from '../../store/app-store'

/**
 * What MCP servers' tool definitions cost, as the open session's log says (the engine counted them when each
 * server listed its tools): per server in the sidebar and Settings, and in Settings the session's total and
 * whether it is over the share of the context window past which Claude searches for tools instead.
 */

/** A server's tool definitions in tokens: what it adds to every request (or to the searches, over budget). */
export function DefinitionCost({ tools }: { tools: readonly { tokens: number }[] | undefined }) {
  if (tools === undefined) return null
  return (
    <div className="muted small" data-testid="mcp-server-cost">
      {tools.length} tools · about {serverTokens(tools).toLocaleString('en')} tokens of definitions
    </div>
  )
}

/** Settings: every server of the open session with its cost, and what their total means for each request. */
export function SessionToolCosts() {
  const servers = useAppStore((s) => s.view?.mcpServers)
  const model = useAppStore((s) => s.view?.session?.settings.model)
  const listed = Object.values(servers ?? {}).filter((s) => s.tools !== undefined)
  if (listed.length === 0) return null
  const total = serverTokens(listed.flatMap((s) => s.tools ?? []))
  // The session's model's window, as the engine judges it (mcp/hub.ts).
  const over = overBudget(total, model ? modelContext(model).window : DEFAULT_CONTEXT_WINDOW)
  return (
    <fieldset data-testid="settings-mcp-costs">
      <legend>MCP tools in the open session</legend>
      <ul className="plain-list mcp-user-servers">
        {listed.map((s) => (
          <li key={s.server} data-testid="settings-mcp-cost" data-name={s.server}>
            <strong>{s.server}</strong>
            <DefinitionCost tools={s.tools} />
          </li>
        ))}
      </ul>
      <p className="muted small" data-testid="settings-mcp-total" data-over={over}>
        In all about {total.toLocaleString('en')} tokens of definitions,{' '}
        {over
          ? 'over a tenth of the context window: Claude finds the tools it needs through a search tool instead of receiving them all with every request.'
          : 'sent with every request (under a tenth of the context window).'}
      </p>
    </fieldset>
  )
}
