import { useState } from 'react'
import type { McpLanes, McpUserServerInput, McpUserServerView, McpValueInput } from '../../../../shared/ipc'
import { useAppStore } from '../../store/app-store'
import { Checkbox } from '../../components/Checkbox'
import { RadioField } from '../../components/RadioField'
import { DefinitionCost } from './DefinitionCost'
import { SignIn } from './SignIn'
import { own } from '../../../../shared/own'
import type { McpServerState } from '../../../../shared/reducer'
import { Button } from '../../components/Button'
import { TextField } from '../../components/TextField'

/**
 * Settings' MCP servers of the user's own, in `.mcp.json`'s shape (a command, or a URL): trusted because the
 * user typed them, they start with every session. Values that look like keys are kept by main the way the API
 * key is and come back masked; an edit that leaves one untouched keeps it without ever seeing it.
 */
export function UserServers({ servers }: { servers: readonly McpUserServerView[] }) {
  // What each server offered in the open session (its tool definitions, in tokens).
  const offered = useAppStore((s) => s.view?.mcpServers)
  const [editing, setEditing] = useState<McpUserServerView | 'new' | null>(null)
  const [error, setError] = useState<string | null>(null)
  const remove = async (name: string): Promise<void> => {
    const r = await window.api.invoke('mcp:remove-server', { name })
    if (r.ok) useAppStore.setState({ settings: r.value })
    setError(r.ok ? null : r.error)
  }
  return (
    <fieldset data-testid="settings-mcp">
      <legend>MCP servers of your own</legend>
      <p className="muted small">
        They start with every session, in any folder, with the permissions you give them. A folder’s own{' '}
        <code>.mcp.json</code> servers are trusted from the sidebar instead.
      </p>
      {servers.length > 0 && (
        <ul className="plain-list mcp-user-servers">
          {servers.map((s) => (
            <li key={s.name} data-testid="settings-mcp-server" data-name={s.name}>
              <div>
                <strong>{s.name}</strong>{' '}
                <code className="mono small">
                  {s.kind === 'stdio' ? [s.command ?? '', ...(s.args ?? [])].join(' ') : s.url}
                </code>
              </div>
              <div className="muted small">
                {describeLanes(s.kind, s.lanes)}
                {s.problem && (
                  <span className="error-text" data-testid="settings-mcp-problem">
                    {' '}
                    · {s.problem}
                  </span>
                )}
              </div>
              {s.auth && (
                <SignIn
                  name={s.name}
                  auth={s.auth}
                  waiting={sessionServer(offered, s.name)?.status === 'needs-sign-in'}
                />
              )}
              <DefinitionCost tools={sessionServer(offered, s.name)?.tools} />
              <div className="row">
                <Button look="link" testId="settings-mcp-edit" onClick={() => setEditing(s)}>
                  Edit
                </Button>
                <Button look="link" testId="settings-mcp-remove" onClick={() => void remove(s.name)}>
                  Remove
                </Button>
              </div>
            </li>
          ))}
        </ul>
      )}
      {error && (
        <p className="error-text" role="alert">
          {error}
        </p>
      )}
      {editing === null ? (
        <div className="row">
          <Button testId="settings-mcp-add" onClick={() => setEditing('new')}>
            Add a server…
          </Button>
        </div>
      ) : (
        <ServerEditor
          key={editing === 'new' ? '' : editing.name}
          initial={editing === 'new' ? null : editing}
          onDone={() => setEditing(null)}
        />
      )}
    </fieldset>
  )
}

/** A server's permissions in a few words (an HTTP server runs elsewhere: only its calls' time applies). */
/** The open session's server of this name (its tools, its state), if it is the user's server (not a folder's). */
function sessionServer(
  offered: Readonly<Record<string, McpServerState>> | undefined,
  name: string,
): McpServerState | undefined {
  const server = offered ? own(offered, name) : undefined
  return server?.origin === 'user' ? server : undefined
}

export function describeLanes(kind: McpUserServerView['kind'], lanes: McpLanes): string {
  const time = `calls up to ${lanes.timeoutSec} s`
  if (kind === 'http') return time
  return `${FOLDER_WORDS[lanes.workspace]} · ${lanes.network ? 'network' : 'no network'} · ${time}`
}

const FOLDER_WORDS: Record<McpLanes['workspace'], string> = {
  none: 'no access to the folder',
  'read-only': 'reads the folder',
  'read-write': 'reads and writes the folder',
}

const KINDS = [
  { value: 'stdio', label: 'A command Lanes starts (stdio)' },
  { value: 'http', label: 'A server at a URL (streamable HTTP)' },
] as const

const WORKSPACE_ACCESS = [
  { value: 'none', label: 'None' },
  { value: 'read-only', label: 'Read only' },
  { value: 'read-write', label: 'Read and write' },
] as const

/** A row of the environment or headers: a value typed, or a stored secret left as it is (`kept`). */
interface Pair {
  id: number
  name: string
  value: string
  kept: string | null
}

let nextPair = 0

function pairsOf(server: McpUserServerView | null): Pair[] {
  const values = server ? ((server.kind === 'stdio' ? server.env : server.headers) ?? {}) : {}
  return Object.entries(values).map(([name, v]) => ({
    id: nextPair++,
    name,
    value: 'value' in v ? v.value : '',
    kept: 'masked' in v ? v.masked : null,
  }))
}

function ServerEditor({ initial, onDone }: { initial: McpUserServerView | null; onDone(): void }) {
  const [name, setName] = useState(initial?.name ?? '')
  const [kind, setKind] = useState<'stdio' | 'http'>(initial?.kind ?? 'stdio')
  const [command, setCommand] = useState(initial?.command ?? '')
  const [args, setArgs] = useState((initial?.args ?? []).join('\n'))
  const [url, setUrl] = useState(initial?.url ?? '')
  const [pairs, setPairs] = useState<Pair[]>(() => pairsOf(initial))
  const [lanes, setLanes] = useState<McpLanes>(
    initial?.lanes ?? { workspace: 'read-write', network: true, timeoutSec: 60 },
  )
  const [timeout, setTimeoutText] = useState(String(lanes.timeoutSec))
  const [problem, setProblem] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  const change = (id: number, patch: Partial<Pair>): void =>
    setPairs((ps) => ps.map((p) => (p.id === id ? { ...p, ...patch } : p)))

  const save = async (): Promise<void> => {
    const seconds = Number(timeout)
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 3600)
      return setProblem('The call timeout is a whole number of seconds from 1 to 3600.')
    const values: Record<string, McpValueInput> = {}
    for (const p of pairs) {
      const key = p.name.trim()
      if (key === '') continue
      if (Object.hasOwn(values, key)) return setProblem(`${key} is given twice.`)
      values[key] = p.kept !== null && p.value === '' ? { keep: true } : p.value
    }
    const input: McpUserServerInput = {
      name: name.trim(),
      ...(initial ? { previousName: initial.name } : {}),
      server:
        kind === 'stdio'
          ? {
              kind,
              command: command.trim(),
              args: args.split('\n').filter((a) => a.trim() !== ''),
              env: values,
            }
          : { kind, url: url.trim(), headers: values },
      lanes: { ...lanes, timeoutSec: seconds },
    }
    if (input.name === '') return setProblem('Give the server a name.')
    if (kind === 'stdio' && command.trim() === '') return setProblem('Give the command that starts it.')
    if (kind === 'http' && url.trim() === '') return setProblem('Give its URL.')
    setBusy(true)
    const r = await window.api.invoke('mcp:save-server', input)
    setBusy(false)
    if (!r.ok) return setProblem(r.error)
    useAppStore.setState({ settings: r.value })
    onDone()
  }

  const part = kind === 'stdio' ? 'Environment' : 'Headers'
  return (
    <div className="mcp-server-editor" data-testid="mcp-editor" aria-label="MCP server">
      <TextField
        label="Name (its tools are offered as mcp__name__tool)"
        testId="mcp-editor-name"
        value={name}
        onChange={setName}
      />
      <RadioField
        label="Kind"
        testIdPrefix="mcp-editor-kind"
        options={KINDS}
        value={kind}
        onChange={setKind}
      />
      {kind === 'stdio' ? (
        <>
          <TextField
            label="Command"
            testId="mcp-editor-command"
            mono
            placeholder="npx"
            value={command}
            onChange={setCommand}
          />
          <label className="field">
            <span>Arguments, one per line</span>
            <textarea
              className="text-input mono"
              data-testid="mcp-editor-args"
              rows={3}
              value={args}
              onChange={(e) => setArgs(e.target.value)}
            />
          </label>
        </>
      ) : (
        <TextField
          label="URL"
          testId="mcp-editor-url"
          mono
          placeholder="https://example.com/mcp"
          value={url}
          onChange={setUrl}
        />
      )}
      <div className="field">
        <span>{part}</span>
        {pairs.map((p) => (
          <div className="row" key={p.id} data-testid="mcp-editor-pair">
            <input
              className="text-input mono"
              aria-label={`${part} name`}
              data-testid="mcp-editor-pair-name"
              value={p.name}
              onChange={(e) => change(p.id, { name: e.target.value })}
            />
            <input
              className="text-input mono"
              aria-label={`Value of ${p.name || 'this entry'}`}
              data-testid="mcp-editor-pair-value"
              type={p.kept !== null ? 'password' : 'text'}
              autoComplete="off"
              placeholder={p.kept !== null ? `kept: ${p.kept} (type to replace)` : 'value'}
              value={p.value}
              onChange={(e) => change(p.id, { value: e.target.value })}
            />
            <Button
              look="link"
              aria-label={`Remove ${p.name || 'this entry'}`}
              onClick={() => setPairs((ps) => ps.filter((x) => x.id !== p.id))}
            >
              Remove
            </Button>
          </div>
        ))}
        <div className="row">
          <Button
            look="link"
            testId="mcp-editor-add-pair"
            onClick={() => setPairs((ps) => [...ps, { id: nextPair++, name: '', value: '', kept: null }])}
          >
            Add {kind === 'stdio' ? 'a variable' : 'a header'}
          </Button>
        </div>
        <span className="muted small">
          Values that look like keys or tokens are kept the way the API key is, and shown masked.
        </span>
      </div>
      {kind === 'stdio' && (
        <>
          <RadioField
            label="This folder (the one a session works in)"
            testIdPrefix="mcp-editor-workspace"
            options={WORKSPACE_ACCESS}
            value={lanes.workspace}
            onChange={(workspace) => setLanes({ ...lanes, workspace })}
          />
          <Checkbox
            testId="mcp-editor-network"
            checked={lanes.network}
            onChange={(network) => setLanes({ ...lanes, network })}
          >
            Network access
          </Checkbox>
        </>
      )}
      <label className="field inline">
        <span>A call may take up to</span>
        <input
          className="text-input narrow"
          type="number"
          min={1}
          max={3600}
          data-testid="mcp-editor-timeout"
          value={timeout}
          onChange={(e) => setTimeoutText(e.target.value)}
        />
        <span className="muted">seconds</span>
      </label>
      {problem && (
        <p className="error-text" role="alert" data-testid="mcp-editor-problem">
          Not saved: {problem}
        </p>
      )}
      <div className="row">
        <Button look="primary" testId="mcp-editor-save" disabled={busy} onClick={() => void save()}>
          {initial ? 'Save server' : 'Add server'}
        </Button>
        <Button onClick={onDone}>Cancel</Button>
      </div>
    </div>
  )
}
