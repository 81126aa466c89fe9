import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import { ThinkingField } from './ThinkingField'
import { useShallow } from 'zustand/react/shallow'
import type { SettingsUpdate, SettingsView } from '../../../../shared/ipc'
import { MIN_COMPACT_AT_TOKENS } from '../../../../shared/models'
import { useAppStore } from '../../store/app-store'
import { useDialogKeys } from '../../lib/focus-trap'
import { Checkbox } from '../../components/Checkbox'
import { RadioField } from '../../components/RadioField'
import { Modal } from '../../components/Modal'
import { UserServers } from '../mcp/UserServers'
import { SessionToolCosts } from '../mcp/DefinitionCost'
import { Button } from '../../components/Button'

/** The scheduling choices, in the order shown. */
const SCHEDULERS: readonly { value: SettingsView['scheduler']; label: string }[] = [
  { value: 'streaming', label: 'Start each step as soon as the model has written it (faster)' },
  { value: 'batch', label: 'Wait for the model’s whole answer, then run its steps' },
]

/** Settings: the API key (kept in main, shown masked), the model and how the agent runs. */
export function SettingsDialog() {
  const { settings, open, error, setOpen, save, sandbox, capture } = useAppStore(
    useShallow((s) => ({
      sandbox: s.info?.sandbox,
      capture: s.info?.capture,
      settings: s.settings,
      open: s.settingsOpen,
      error: s.settingsError,
      setOpen: s.setSettingsOpen,
      save: s.saveSettings,
    })),
  )
  const dialogRef = useRef<HTMLDivElement>(null)
  /** What the form holds that is not saved (field names), so closing does not lose it silently. */
  const unsaved = useRef<string[]>([])
  const [leaving, setLeaving] = useState<string[] | null>(null)
  const close = useCallback(() => {
    if (unsaved.current.length > 0) setLeaving(unsaved.current)
    else setOpen(false)
  }, [setOpen])
  const reportUnsaved = useCallback((fields: string[]) => {
    unsaved.current = fields
    if (fields.length === 0) setLeaving(null)
  }, [])

  useDialogKeys(dialogRef, close, 'input, button', open)
  useEffect(() => {
    if (!open) return
    return () => {
      unsaved.current = []
      setLeaving(null)
    }
  }, [open])

  if (!open) return null
  return (
    <Modal
      title="Settings"
      titleId="settings-title"
      testId="settings-dialog"
      closeLabel="Close settings"
      closeTestId="settings-close"
      dialogRef={dialogRef}
      onClose={close}
    >
      {leaving && (
        <LeaveUnsaved fields={leaving} onStay={() => setLeaving(null)} onLeave={() => setOpen(false)} />
      )}
      {sandbox && !sandbox.available && (
        <p className="warning-line" data-testid="settings-sandbox-unavailable">
          {sandbox.reason}
        </p>
      )}
      {capture && (
        <p
          className={capture.mode === 'overlay' ? 'muted small' : 'warning-line'}
          data-testid="settings-capture"
          data-mode={capture.mode}
        >
          {capture.mode === 'overlay'
            ? 'What an approved command changes is captured on a copy-on-write layer: it is shown as a diff and can be undone. (A command you run outside the sandbox is only compared before and after: its changes cannot be undone.)'
            : `What an approved command changes is found by comparing the folder before and after it: it is reported but cannot be undone. ${capture.reason ?? ''}`}
        </p>
      )}
      {settings ? (
        <>
          <SettingsForm settings={settings} save={save} onUnsaved={reportUnsaved} />
          <div className="settings-form settings-mcp">
            <UserServers servers={settings.mcpServers} />
            <SessionToolCosts />
          </div>
        </>
      ) : (
        <p className="muted">Loading…</p>
      )}
      {!settings && error && (
        <p className="error-text" role="alert" data-testid="settings-error">
          {error}
        </p>
      )}
    </Modal>
  )
}

/** The fields a refusal can be about, so its reason shows next to them. */
type Field = 'apiKey' | 'baseUrl' | 'model' | 'timeout'

const FIELD_NAMES: Record<Field, string> = {
  apiKey: 'the API key',
  baseUrl: 'the base URL',
  model: 'the model',
  timeout: 'the command timeout',
}

function SettingsForm({
  settings,
  save,
  onUnsaved,
}: {
  settings: SettingsView
  save(update: SettingsUpdate): Promise<boolean>
  onUnsaved(fields: string[]): void
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
  /** A refusal, found here or by the app, and the field it is about (shown next to it, in view). */
  const [problem, setProblem] = useState<{ field: Field | null; text: string } | null>(null)
  const formRef = useRef<HTMLFormElement>(null)

  // What is typed and not saved, for the dialog's "close without saving?".
  const url = baseUrl.trim() === '' ? null : baseUrl.trim()
  const unsaved = [
    apiKey.trim() !== '' && 'the API key',
    model.trim() !== settings.model && 'the model',
    url !== settings.baseUrl && 'the base URL',
    scheduler !== settings.scheduler && 'scheduling',
    keepGoing === settings.siblingSkip && 'keep going after a failure',
    autoApproveEdits !== settings.autoApproveEdits && 'apply file edits without asking',
    timeout !== String(settings.bashTimeoutSec) && 'the command timeout',
    thinking !== settings.thinking && 'thinking',
    compactAt !== (settings.compactAtTokens === null ? '' : String(settings.compactAtTokens)) &&
      'compact the conversation at',
  ].filter((f): f is string => f !== false)
  const unsavedList = unsaved.join('|')
  useEffect(() => onUnsaved(unsavedList === '' ? [] : unsavedList.split('|')), [unsavedList, onUnsaved])

  // A refusal is shown where it is about, scrolled into view, and its field takes the focus (the user's Save
  // asked for this): a reason out of view is how a change was lost without a word.
  useEffect(() => {
    if (!problem) return
    const form = formRef.current
    form?.querySelector<HTMLElement>('[data-testid=settings-problem]')?.scrollIntoView({ block: 'nearest' })
    if (problem.field)
      form
        ?.querySelector<HTMLElement>(`[data-field="${problem.field}"] input`)
        ?.focus({ preventScroll: true })
  }, [problem])

  const refuse = (field: Field | null, text: string): void => {
    setSaved(false)
    setProblem({ field, text })
  }

  const submit = (event: FormEvent): void => {
    event.preventDefault()
    setSaved(false)
    const update: SettingsUpdate = {}
    if (model.trim() !== settings.model) update.model = model.trim()
    if (url !== settings.baseUrl) {
      if (url !== null && !/^https?:\/\/\S+$/.test(url))
        return refuse('baseUrl', 'The base URL must start with http:// or https://.')
      update.baseUrl = url
    }
    if (scheduler !== settings.scheduler) update.scheduler = scheduler
    if (keepGoing === settings.siblingSkip) update.siblingSkip = !keepGoing
    if (autoApproveEdits !== settings.autoApproveEdits) update.autoApproveEdits = autoApproveEdits
    const seconds = Number(timeout)
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600) {
      return refuse('timeout', 'The command timeout is a whole number of seconds from 1 to 600.')
    }
    if (seconds !== settings.bashTimeoutSec) update.bashTimeoutSec = seconds
    if (thinking !== settings.thinking) update.thinking = thinking
    const compactAtTokens = compactAt.trim() === '' ? null : Number(compactAt.trim())
    if (
      compactAtTokens !== null &&
      (!Number.isInteger(compactAtTokens) || compactAtTokens < MIN_COMPACT_AT_TOKENS)
    ) {
      return refuse(
        null,
        `Compact at is a whole number of tokens, at least ${MIN_COMPACT_AT_TOKENS.toLocaleString()}; leave it empty for the automatic threshold.`,
      )
    }
    if (compactAtTokens !== settings.compactAtTokens) update.compactAtTokens = compactAtTokens
    if (apiKey.trim() !== '') update.apiKey = apiKey.trim()
    if (update.model === '') return refuse('model', 'Enter a model name.')
    setProblem(null)
    if (Object.keys(update).length === 0) return setSaved(true)
    void save(update).then((ok) => {
      if (ok) {
        setApiKey('')
        setSaved(true)
        return
      }
      // The app refuses a new base URL for a saved key (the key must not follow a new address unasked); other
      // refusals are about the key (it could not be stored) or the save as a whole.
      const field: Field | null =
        update.baseUrl !== undefined && update.apiKey === undefined
          ? 'baseUrl'
          : update.apiKey !== undefined
            ? 'apiKey'
            : null
      refuse(field, useAppStore.getState().settingsError ?? 'The settings were not saved.')
    })
  }

  const fieldProblem = (field: Field) =>
    problem?.field === field ? (
      <p
        className="error-text field-problem"
        role="alert"
        data-testid="settings-problem"
        id={`problem-${field}`}
      >
        Not saved: {problem.text}
        {field === 'baseUrl' && settings.apiKey.source !== 'none' && (
          <>
            {' '}
            <Button
              look="link"
              testId="settings-type-key"
              onClick={() =>
                formRef.current?.querySelector<HTMLElement>('[data-testid=settings-api-key]')?.focus()
              }
            >
              Type the key
            </Button>
          </>
        )}
      </p>
    ) : null
  const invalid = (field: Field) =>
    problem?.field === field ? { 'aria-invalid': true, 'aria-describedby': `problem-${field}` } : {}

  const { apiKey: key } = settings
  return (
    <form className="settings-form" onSubmit={submit} noValidate ref={formRef}>
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
        <div className="row" data-field="apiKey">
          <input
            className="text-input"
            {...invalid('apiKey')}
            type="password"
            autoComplete="off"
            data-testid="settings-api-key"
            aria-label="New API key"
            placeholder={key.source === 'none' ? 'sk-ant-…' : 'Replace with a new key'}
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
          />
          {key.source === 'stored' && (
            <Button testId="settings-forget-key" onClick={() => void save({ apiKey: null })}>
              Forget
            </Button>
          )}
        </div>
        {fieldProblem('apiKey')}
        <KeyStorageNote storage={key.storage} file={key.file} />
      </fieldset>
      <fieldset>
        <legend>Model</legend>
        <label className="field" data-field="model">
          <span>Model</span>
          <input
            className="text-input"
            data-testid="settings-model"
            {...invalid('model')}
            value={model}
            onChange={(e) => setModel(e.target.value)}
          />
        </label>
        {fieldProblem('model')}
        <ThinkingField model={model.trim()} value={thinking} onChange={setThinking} />
        <label className="field" data-field="baseUrl">
          <span>Base URL</span>
          <input
            className="text-input"
            data-testid="settings-base-url"
            {...invalid('baseUrl')}
            placeholder="https://api.anthropic.com (default)"
            value={baseUrl}
            onChange={(e) => setBaseUrl(e.target.value)}
          />
        </label>
        {fieldProblem('baseUrl')}
      </fieldset>
      <fieldset>
        <legend>How the agent works</legend>
        <RadioField
          label="Scheduling"
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
        <label className="field inline" data-field="timeout">
          <span>Command timeout</span>
          <input
            className="text-input narrow"
            type="number"
            min={1}
            max={600}
            data-testid="settings-bash-timeout"
            {...invalid('timeout')}
            value={timeout}
            onChange={(e) => setTimeoutSec(e.target.value)}
          />
          <span className="muted">seconds</span>
        </label>
        {fieldProblem('timeout')}
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
      {problem && problem.field === null && (
        <p className="error-text" role="alert" data-testid="settings-problem">
          Not saved: {problem.text}
        </p>
      )}
      <div className="modal-actions">
        {problem?.field && (
          <span className="error-text" data-testid="settings-not-saved">
            Not saved: see {FIELD_NAMES[problem.field]} above
          </span>
        )}
        {saved && (
          <span className="ok-text" role="status">
            Saved
          </span>
        )}
        <Button look="primary" type="submit" testId="settings-save">
          Save
        </Button>
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

/** "Close without saving?": what would be lost is named; staying is the default. */
function LeaveUnsaved({ fields, onStay, onLeave }: { fields: string[]; onStay(): void; onLeave(): void }) {
  const stayRef = useRef<HTMLButtonElement>(null)
  useEffect(() => stayRef.current?.focus(), [])
  return (
    <div className="leave-unsaved" role="alert" data-testid="settings-leave-unsaved">
      <p>
        <strong>Not saved yet:</strong> {fields.join(', ')}. Close and lose{' '}
        {fields.length === 1 ? 'it' : 'them'}?
      </p>
      <div className="row">
        <Button look="primary" ref={stayRef} onClick={onStay} testId="settings-stay">
          Keep editing
        </Button>
        <Button onClick={onLeave} testId="settings-discard">
          Close without saving
        </Button>
      </div>
    </div>
  )
}
