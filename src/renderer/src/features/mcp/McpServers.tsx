import { useEffect, useRef, useState } from 'react'
import type { McpLanes, McpServerView, McpServersView } from '../../../../shared/ipc'
import { Modal } from '../../components/Modal'
import { useDialogKeys } from '../../lib/focus-trap'
import { useAppStore } from '../../store/app-store'
import { DefinitionCost } from './DefinitionCost'
import { Checkbox } from '../../components/Checkbox'
import { Button } from '../../components/Button'

/**
 * The open folder's MCP servers (its `.mcp.json`): none starts until the user has seen exactly what would run
 * (command, arguments, environment, or URL and headers) and with what permissions, and trusted it. Trust is for
 * that exact server: a changed file shows it here again as not trusted.
 */
export function McpServers() {
  const workspace = useAppStore((s) => s.workspace?.path ?? null)
  // What the open session's servers offered, as its log says (their tools' definitions, in tokens).
  const offered = useAppStore((s) => s.view?.mcpServers)
  // Kept with the folder it describes: another folder's list is never shown for this one.
  const [listed, setListed] = useState<{ workspace: string; view: McpServersView } | null>(null)
  const [reviewing, setReviewing] = useState(false)
  const [error, setError] = useState<string | null>(null)

  useEffect(() => {
    if (workspace === null) return
    let current = true
    void window.api.invoke('mcp:list').then((r) => {
      if (current && r.ok) setListed({ workspace, view: r.value })
    })
    return () => {
      current = false
    }
  }, [workspace])

  const view = listed !== null && listed.workspace === workspace ? listed.view : null
  const setView = (value: McpServersView): void => {
    if (workspace !== null) setListed({ workspace, view: value })
  }
  if (!view || (view.servers.length === 0 && view.problems.length === 0)) return null
  const untrusted = view.servers.filter((s) => !s.trusted)
  const trust = async (server: McpServerView, lanes: McpLanes): Promise<void> => {
    const r = await window.api.invoke('mcp:trust', { trustKey: server.trustKey, lanes })
    if (r.ok) {
      setView(r.value)
      setError(null)
    } else {
      setError(r.error)
      const again = await window.api.invoke('mcp:list')
      if (again.ok) setView(again.value)
    }
  }
  return (
    <section className="mcp-servers" aria-label="MCP servers" data-testid="mcp-servers">
      <div className="section-label">MCP servers</div>
      <ul className="mcp-server-list">
        {view.servers.map((s) => (
          <li key={s.name} data-testid="mcp-server" data-trusted={s.trusted}>
            <span className="mcp-server-name">{s.name}</span>{' '}
            <span className={`badge ${s.trusted ? '' : 'danger'}`}>
              {s.trusted ? 'trusted' : 'not trusted'}
            </span>
            <DefinitionCost tools={offered?.[s.name]?.tools} />
          </li>
        ))}
      </ul>
      {untrusted.length > 0 && (
        <p className="muted small">
          This folder asks to start {untrusted.length === 1 ? 'a server' : `${untrusted.length} servers`};
          none runs until you trust it.
        </p>
      )}
      <Button testId="mcp-review" onClick={() => setReviewing(true)}>
        {untrusted.length > 0 ? 'Review and trust…' : 'Show servers…'}
      </Button>
      {reviewing && (
        <TrustDialog view={view} error={error} onTrust={trust} onClose={() => setReviewing(false)} />
      )}
    </section>
  )
}

function TrustDialog({
  view,
  error,
  onTrust,
  onClose,
}: {
  view: McpServersView
  error: string | null
  onTrust(server: McpServerView, lanes: McpLanes): Promise<void>
  onClose(): void
}) {
  const dialogRef = useRef<HTMLDivElement>(null)
  useDialogKeys(dialogRef, onClose, 'button')
  return (
    <Modal
      title="This folder's MCP servers"
      titleId="mcp-trust-title"
      testId="mcp-trust-dialog"
      className="mcp-trust"
      closeLabel="Close"
      dialogRef={dialogRef}
      onClose={onClose}
    >
      <p className="muted small">
        Its <code>.mcp.json</code> came with the folder. Trust a server only if you would run this command
        yourself: it starts with every task in this folder, with the permissions below.
      </p>
      {view.problems.map((p) => (
        <p key={p} className="warning-line">
          {p}
        </p>
      ))}
      {view.servers.map((s) => (
        <ServerDetails
          key={`${s.trustKey}:${s.permissions.workspace}:${s.permissions.network}`}
          server={s}
          onTrust={(lanes) => onTrust(s, lanes)}
        />
      ))}
      {error && (
        <p className="error-text" role="alert">
          {error}
        </p>
      )}
    </Modal>
  )
}

const FOLDER_ACCESS = [
  { value: 'none', label: 'not visible' },
  { value: 'read-only', label: 'read only' },
  { value: 'read-write', label: 'read and write' },
] as const

function ServerDetails({
  server,
  onTrust,
}: {
  server: McpServerView
  onTrust(lanes: McpLanes): Promise<void>
}) {
  const env = Object.entries(server.env ?? server.headers ?? {})
  // The user's choice, written as the server's "lanes" key in the trust record and honoured at launch.
  const [choice, setChoice] = useState<McpLanes>(server.permissions)
  const changed =
    choice.workspace !== server.permissions.workspace || choice.network !== server.permissions.network
  const asked = server.requested
  const differs =
    asked.workspace !== server.permissions.workspace || asked.network !== server.permissions.network
  return (
    <article className="mcp-server-details" data-testid="mcp-server-details" aria-label={server.name}>
      <h3>{server.name}</h3>
      {server.kind === 'stdio' ? (
        <code className="bash-command" data-testid="mcp-command">
          {[server.command ?? '', ...(server.args ?? [])].map(quoted).join(' ')}
        </code>
      ) : (
        <code className="bash-command" data-testid="mcp-url">
          {server.url}
        </code>
      )}
      {env.length > 0 && (
        <table className="mcp-env" data-testid="mcp-env">
          <caption className="muted small">{server.kind === 'stdio' ? 'Environment' : 'Headers'}</caption>
          <tbody>
            {env.map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <td>
                  <code>{v}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <fieldset className="mcp-permissions" data-testid="mcp-permissions">
        <legend className="muted small">What it may reach</legend>
        {server.kind === 'stdio' && (
          <>
            <div className="mcp-permission-row" role="radiogroup" aria-label="This folder">
              <span>This folder:</span>
              {FOLDER_ACCESS.map((o) => (
                <label className="checkbox" key={o.value}>
                  <input
                    type="radio"
                    name={`mcp-folder-${server.trustKey}`}
                    data-testid={`mcp-folder-${o.value}`}
                    checked={choice.workspace === o.value}
                    onChange={() => setChoice({ ...choice, workspace: o.value })}
                  />
                  {o.label}
                </label>
              ))}
            </div>
            <Checkbox
              testId="mcp-network"
              checked={choice.network}
              onChange={(checked) => setChoice({ ...choice, network: checked })}
            >
              Network
            </Checkbox>
          </>
        )}
        <div>A call may take {server.permissions.timeoutSec} s</div>
        <div>Your home folder: not visible (an empty one)</div>
      </fieldset>
      {server.trusted && differs && (
        <p className="muted small" data-testid="mcp-requested">
          Its <code>.mcp.json</code> asks for: this folder {describeAccess(asked.workspace)}, network{' '}
          {asked.network ? 'on' : 'off'}. It runs with what you chose.
        </p>
      )}
      {server.noSandbox !== null && (
        <p className="warning-line" data-testid="mcp-no-sandbox">
          No sandbox here: it would run with all your permissions. {server.noSandbox}
        </p>
      )}
      {server.trusted && !changed ? (
        <p className="decision-note approved">Trusted: it starts with each task in this folder.</p>
      ) : (
        <Button look="primary" testId="mcp-trust" onClick={() => void onTrust(choice)}>
          {server.trusted ? `Give ${server.name} these permissions` : `Trust ${server.name}`}
        </Button>
      )}
    </article>
  )
}

function describeAccess(access: McpLanes['workspace']): string {
  return FOLDER_ACCESS.find((o) => o.value === access)?.label ?? access
}

/** An argument as a shell would need it written, so what is shown is unambiguous. */
function quoted(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
}
