import { useEffect, useRef, useState, type FormEvent } from 'react'
import { ThinkingField } from './ThinkingField'
import { useShallow } from 'zustand/react/shallow'
import type { SettingsUpdate, SettingsView } from '../../../../shared/ipc'
import { MIN_COMPACT_AT_TOKENS } from '../../../../shared/models'
import { useAppStore } from '../../store/app-store'
import { trapTab } from '../../lib/focus-trap'
import { Checkbox } from '../../components/Checkbox'
import { RadioField } from '../../components/RadioField'
import { Modal } from '../../components/Modal'

/** The scheduling choices, in the order shown. */
const SCHEDULERS: readonly { value: SettingsView['scheduler']; label: string }[] = [
  { value: 'streaming', label: 'Start each step as soon as the model has written it (faster)' },
  { value: 'batch', label: 'Wait for the model’s whole answer, then run its steps' },
]

/** Settings: the API key (kept in main, shown masked), the model and how the agent runs. */
export function SettingsDialog() {
  const { settings, open, error, setOpen, save, sandbox } = useAppStore(
    useShallow((s) => ({
      sandbox: s.info?.sandbox,
      settings: s.settings,
      open: s.settingsOpen,
      error: s.settingsError,
      setOpen: s.setSettingsOpen,
      save: s.saveSettings,
    })),
  )
  const dialogRef = useRef<HTMLDivElement>(null)

  useEffect(() => {
    if (!open) return
    const previous = document.activeElement as HTMLElement | null
    dialogRef.current?.querySelector<HTMLElement>('input, button')?.focus()
    const onKey = (event: KeyboardEvent): void => {
      if (event.key === 'Escape') setOpen(false)
      else if (dialogRef.current) trapTab(event, dialogRef.current)
    }
    window.addEventListener('keydown', onKey)
    return () => {
      window.removeEventListener('keydown', onKey)
      previous?.focus()
    }
  }, [open, setOpen])

  if (!open) return null
  return (
    <Modal
      title="Settings"
      titleId="settings-title"
      testId="settings-dialog"
      closeLabel="Close settings"
      closeTestId="settings-close"
      dialogRef={dialogRef}
      onClose={() => setOpen(false)}
    >
      {sandbox && !sandbox.available && (
        <p className="warning-line" data-testid="settings-sandbox-unavailable">
          {sandbox.reason}
        </p>
      )}
      {settings ? <SettingsForm settings={settings} save={save} /> : <p className="muted">Loading…</p>}
      {error && (
        <p className="error-text" role="alert" data-testid="settings-error">
          {error}
        </p>
      )}
    </Modal>
  )
}

function SettingsForm({
  settings,
  save,
}: {
  settings: SettingsView
  save(update: SettingsUpdate): Promise<boolean>
}) {
  const [apiKey, setApiKey] = useState('')
  const [model, setModel] = useState(settings.model)
  const [baseUrl, setBaseUrl] = useState(settings.baseUrl ?? '')
  const [scheduler, setScheduler] = useState(settings.scheduler)
  const [keepGoing, setKeepGoing] = useState(!settings.siblingSkip)
  const [autoApproveEdits, setAutoApproveEdits] = useState(settings.autoApproveEdits)
  const [timeout, setTimeoutSec] = useState(String(settings.bashTimeoutSec))
  const [thinking, setThinking] = useState(settings.thinking)
  const [compactAt, setCompactAt] = useState(
    settings.compactAtTokens === null ? '' : String(settings.compactAtTokens),
  )
  const [saved, setSaved] = useState(false)
  const [problem, setProblem] = useState<string | null>(null)

  const submit = (event: FormEvent): void => {
    event.preventDefault()
    setSaved(false)
    const update: SettingsUpdate = {}
    if (model.trim() !== settings.model) update.model = model.trim()
    const url = baseUrl.trim() === '' ? null : baseUrl.trim()
    if (url !== settings.baseUrl) {
      if (url !== null && !/^https?:\/\/\S+$/.test(url))
        return setProblem('The base URL must start with http:// or https://.')
      update.baseUrl = url
    }
    if (scheduler !== settings.scheduler) update.scheduler = scheduler
    if (keepGoing === settings.siblingSkip) update.siblingSkip = !keepGoing
    if (autoApproveEdits !== settings.autoApproveEdits) update.autoApproveEdits = autoApproveEdits
    const seconds = Number(timeout)
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600) {
      return setProblem('The command timeout is a whole number of seconds from 1 to 600.')
    }
    if (seconds !== settings.bashTimeoutSec) update.bashTimeoutSec = seconds
    if (thinking !== settings.thinking) update.thinking = thinking
    const compactAtTokens = compactAt.trim() === '' ? null : Number(compactAt.trim())
    if (
      compactAtTokens !== null &&
      (!Number.isInteger(compactAtTokens) || compactAtTokens < MIN_COMPACT_AT_TOKENS)
    ) {
      return setProblem(
        `Compact at is a whole number of tokens, at least ${MIN_COMPACT_AT_TOKENS.toLocaleString()}; leave it empty for the automatic threshold.`,
      )
    }
    if (compactAtTokens !== settings.compactAtTokens) update.compactAtTokens = compactAtTokens
    if (apiKey.trim() !== '') update.apiKey = apiKey.trim()
    if (update.model === '') return setProblem('Enter a model name.')
    setProblem(null)
    if (Object.keys(update).length === 0) return setSaved(true)
    void save(update).then((ok) => {
      if (ok) setApiKey('')
      setSaved(ok)
    })
  }

  const { apiKey: key } = settings
  return (
    <form className="settings-form" onSubmit={submit} noValidate>
      <fieldset>
        <legend>Claude API key</legend>
        <p className="muted small" data-testid="settings-key-status">
          {key.source === 'stored' && (
            <>
              Stored by Lanes: <span className="mono">{key.masked}</span>
            </>
          )}
          {key.source === 'environment' && (
            <>
              From the ANTHROPIC_API_KEY environment variable: <span className="mono">{key.masked}</span>
            </>
          )}
          {key.source === 'none' &&
            'No key set: the built-in demo model answers, so you can try Lanes without one.'}
        </p>
        <div className="row">
          <input
            className="text-input"
            type="password"
            autoComplete="off"
            data-testid="settings-api-key"
            aria-label="New API key"
            placeholder={key.source === 'none' ? 'sk-ant-…' : 'Replace with a new key'}
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
          />
          {key.source === 'stored' && (
            <button
              type="button"
              className="button"
              data-testid="settings-forget-key"
              onClick={() => void save({ apiKey: null })}
            >
              Forget
            </button>
          )}
        </div>
        <KeyStorageNote storage={key.storage} file={key.file} />
      </fieldset>
      <fieldset>
        <legend>Model</legend>
        <label className="field">
          <span>Model</span>
          <input
            className="text-input"
            data-testid="settings-model"
            value={model}
            onChange={(e) => setModel(e.target.value)}
          />
        </label>
        <ThinkingField model={model.trim()} value={thinking} onChange={setThinking} />
        <label className="field">
          <span>Base URL</span>
          <input
            className="text-input"
            data-testid="settings-base-url"
            placeholder="https://api.anthropic.com (default)"
            value={baseUrl}
            onChange={(e) => setBaseUrl(e.target.value)}
          />
        </label>
      </fieldset>
      <fieldset>
        <legend>How the agent works</legend>
        <RadioField
          label="Scheduling"
          name="scheduler"
          testIdPrefix="settings-scheduler"
          options={SCHEDULERS}
          value={scheduler}
          onChange={setScheduler}
        />
        <Checkbox testId="settings-keep-going" checked={keepGoing} onChange={setKeepGoing}>
          Keep going after a failed write or command (otherwise the step’s later writes and commands are
          skipped)
        </Checkbox>
        <Checkbox
          testId="settings-auto-approve-edits"
          checked={autoApproveEdits}
          onChange={setAutoApproveEdits}
        >
          Apply file edits without asking (commands and protected files are still reviewed)
        </Checkbox>
        <label className="field inline">
          <span>Command timeout</span>
          <input
            className="text-input narrow"
            type="number"
            min={1}
            max={600}
            data-testid="settings-bash-timeout"
            value={timeout}
            onChange={(e) => setTimeoutSec(e.target.value)}
          />
          <span className="muted">seconds</span>
        </label>
        <label className="field inline">
          <span>Compact the conversation at</span>
          <input
            className="text-input narrow"
            type="number"
            min={MIN_COMPACT_AT_TOKENS}
            data-testid="settings-compact-at"
            placeholder="automatic"
            value={compactAt}
            onChange={(e) => setCompactAt(e.target.value)}
          />
          <span className="muted">tokens at the latest (empty: a margin below the model’s window)</span>
        </label>
      </fieldset>
      <InstructionFiles />
      {problem && (
        <p className="error-text" role="alert">
          {problem}
        </p>
      )}
      <div className="modal-actions">
        {saved && (
          <span className="ok-text" role="status">
            Saved
          </span>
        )}
        <button type="submit" className="button primary" data-testid="settings-save">
          Save
        </button>
      </div>
    </form>
  )
}

/** The open session's project-instruction files and what each costs (issue 21). */
function InstructionFiles() {
  const files = useAppStore((s) => s.view?.instructions)
  if (!files) return null
  return (
    <fieldset data-testid="settings-instructions">
      <legend>Project instructions</legend>
      {files.length === 0 ? (
        <p className="muted small">
          This session uses none: AGENTS.md or CLAUDE.md at the project root (or in a folder) are sent to
          Claude when they exist.
        </p>
      ) : (
        <ul className="plain-list small">
          {files.map((f) => (
            <li key={f.path} data-testid="settings-instruction-file" data-path={f.path}>
              <span className="mono">{f.path}</span>{' '}
              <span className="muted">
                {f.tokens.toLocaleString()} tokens{f.scope === 'nested' ? ' · for its folder' : ''}
                {f.note ? ` · ${f.note}` : ''}
              </span>
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  )
}

/** Where a key typed here is kept, in one sentence (the key itself never leaves the app's main side). */
function KeyStorageNote({ storage, file }: Pick<SettingsView['apiKey'], 'storage' | 'file'>) {
  return (
    <p className="muted small" data-testid="settings-key-storage" data-storage={storage}>
      {storage === 'keychain' && 'Keys entered here are kept in your system’s keychain.'}
      {storage === 'encrypted-file' && (
        <>
          Keys entered here are kept encrypted by your system, in <span className="mono">{file}</span>.
        </>
      )}
      {storage === 'file' && (
        <>
          No system keychain is available here, so keys entered here are kept in a file only you can read:{' '}
          <span className="mono">{file}</span>.
        </>
      )}
    </p>
  )
}
