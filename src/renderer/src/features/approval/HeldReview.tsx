import { useMemo, useState, type ReactNode } from 'react'
import type { HeldFile, HeldGroup } from '../../../../shared/events'
import type { ApprovalReply } from '../../../../shared/ipc'
import type { SessionState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'
import { DiffView } from './DiffView'
import { CHANGE_WORDS, countsText, folderOf, groupsByFolder } from './folder-groups'
import { DecisionButtons } from './DecisionButtons'
import { Button } from '../../components/Button'

/**
 * The review of a command's held changes (issue 20): the command has run, nothing it changed has landed, and the
 * changes to protected files (or all of them, when the review asked to hold them) wait here, folder by folder,
 * each with its diff and a plain warning. The user accepts or rejects a whole folder, or a file in it; only what
 * is accepted lands (undoable, like every landing). A folder's files are paged in when it is opened, and a file's
 * diff is loaded when it is shown (`held:files`, `held:diff`): a command that made 50,000 files sends the app its
 * counts per folder, never 50,000 diffs. The decisions go in one `approval:reply` for the command's call.
 */
export function HeldReviews({
  head,
  sessionId,
  busy,
  replyApprovals,
}: {
  head: SessionState | undefined
  sessionId: string | null
  busy: boolean
  replyApprovals(decisions: ApprovalReply[]): Promise<boolean>
}) {
  const waiting = useMemo(() => {
    const turn = head?.turns.at(-1)
    if (!turn) return []
    return turn.callIds
      .map((id) => turn.calls[id] as ToolCallState)
      .filter((c) => c.held?.pending === true && c.finishedAt === undefined)
  }, [head])
  if (sessionId === null) return null
  return (
    <>
      {waiting.map((call) => (
        <HeldReview
          key={call.callId}
          call={call}
          sessionId={sessionId}
          busy={busy}
          replyApprovals={replyApprovals}
        />
      ))}
    </>
  )
}

type Choice = 'accepted' | 'rejected'

/** A held folder or file in the review's list, marked with its staged choice. */
function HeldItem({
  choice,
  testId,
  data,
  children,
}: {
  choice: Choice | undefined
  testId: string
  data: Record<`data-${string}`, string>
  children: ReactNode
}) {
  return (
    <li
      className={`approval-item ${choice ? `staged ${choice === 'accepted' ? 'approved' : 'rejected'}` : ''}`}
      data-testid={testId}
      data-choice={choice ?? ''}
      {...data}
    >
      {children}
    </li>
  )
}

/** Reject or accept a held file, or a whole folder of them (`group`), the staged choice shown pressed. */
function HeldChoice({
  what,
  choice,
  disabled,
  onChoose,
  children,
}: {
  what: 'file' | 'group'
  choice: Choice | undefined
  disabled: boolean
  onChoose(choice: Choice): void
  children?: ReactNode
}) {
  const prefix = what === 'group' ? 'held-group' : 'held'
  const noun = what === 'group' ? ' folder' : ''
  return (
    <DecisionButtons
      reject={{ value: 'rejected', testId: `${prefix}-reject`, label: `Reject${noun}` }}
      approve={{ value: 'accepted', testId: `${prefix}-accept`, label: `Accept${noun}` }}
      disabled={disabled}
      chosen={choice ?? null}
      onChoose={onChoose}
    >
      {children}
    </DecisionButtons>
  )
}

/** A folder's files shown at once; "Show more" pages the rest in. */
const PAGE = 200
/** A review this small opens with every folder open. */
const OPEN_ALL_MAX = 50

/** The folder a change is listed under, for a review logged before groups were (every change is in it then). */

function HeldReview({
  call,
  sessionId,
  busy,
  replyApprovals,
}: {
  call: ToolCallState
  sessionId: string
  busy: boolean
  replyApprovals(decisions: ApprovalReply[]): Promise<boolean>
}) {
  const inline = useMemo(() => call.held?.review ?? [], [call.held?.review])
  const count = call.held?.count ?? inline.length
  const groups = useMemo(() => call.held?.groups ?? groupsByFolder(inline), [call.held?.groups, inline])
  // Every held change came with the review (a small set): its folders need no paging.
  const complete = inline.length >= count
  const inlineByFolder = useMemo(() => {
    const map = new Map<string, HeldFile[]>()
    if (complete)
      for (const f of inline) map.set(folderOf(f.relPath), [...(map.get(folderOf(f.relPath)) ?? []), f])
    return map
  }, [complete, inline])
  const [groupChoices, setGroupChoices] = useState<Record<string, Choice>>({})
  const [fileChoices, setFileChoices] = useState<Record<string, Choice>>({})
  /** The files paged in per folder (a large set), and how many the folder holds. */
  const [pages, setPages] = useState<Record<string, { files: HeldFile[]; total: number }>>({})
  const [sending, setSending] = useState(false)
  const filesOf = (folder: string): HeldFile[] | undefined =>
    complete ? (inlineByFolder.get(folder) ?? []) : pages[folder]?.files
  const decided = (g: HeldGroup): boolean =>
    groupChoices[g.folder] !== undefined ||
    (complete && (filesOf(g.folder) ?? []).every((f) => fileChoices[f.relPath] !== undefined))
  const undecided = groups.filter((g) => !decided(g)).length

  const chooseGroup = (folder: string, choice: Choice): void => {
    setGroupChoices((c) => ({ ...c, [folder]: choice }))
    // The folder's own choice now speaks for every file in it.
    const inFolder = new Set((filesOf(folder) ?? []).map((f) => f.relPath))
    setFileChoices((c) => Object.fromEntries(Object.entries(c).filter(([path]) => !inFolder.has(path))))
  }
  const chooseFile = (relPath: string, choice: Choice): void =>
    setFileChoices((c) => ({ ...c, [relPath]: choice }))
  const send = (all?: Choice): void => {
    setSending(true)
    const folders = all
      ? groups.map((g) => ({ folder: g.folder, decision: all }))
      : Object.entries(groupChoices).map(([folder, decision]) => ({ folder, decision }))
    const files = all ? [] : Object.entries(fileChoices).map(([relPath, decision]) => ({ relPath, decision }))
    const accepts = [...folders, ...files].some((d) => d.decision === 'accepted')
    void replyApprovals([
      { callId: call.callId, decision: accepts ? 'approved' : 'rejected', files, folders },
    ]).then((ok) => {
      if (!ok) setSending(false)
    })
  }
  const loadPage = async (folder: string): Promise<void> => {
    const have = pages[folder]?.files ?? []
    const result = await window.api.invoke('held:files', {
      sessionId,
      callId: call.callId,
      folder,
      offset: have.length,
      limit: PAGE,
    })
    if (result.ok)
      setPages((p) => ({
        ...p,
        [folder]: { files: [...have, ...result.value.files], total: result.value.total },
      }))
  }
  const protectedCount = groups.reduce((n, g) => n + g.protected, 0)
  return (
    <section
      className="approval-panel held-review"
      data-testid="held-review"
      data-call-id={call.callId}
      aria-label="Review what the command changed"
    >
      <header className="approval-header">
        <div>
          <h2>Review what the command changed</h2>
          <p className="muted small">
            {call.held?.interrupted ? (
              // Kept in a small window too (where the "what" line is hidden): without it the review is a riddle.
              <span className="approval-cut-short" data-testid="held-cut-short">
                The command <code>{commandOf(call)}</code> was cut short when Lanes stopped; here is what it
                had changed by then.
              </span>
            ) : (
              <span className="approval-what">
                The command <code>{commandOf(call)}</code> has run:{' '}
                {protectedCount > 0 ? 'it changed protected files.' : 'you asked to see its changes first.'}
              </span>
            )}{' '}
            None of its changes is applied until you decide.
            <span className="approval-each">
              {' '}
              Accept or reject each folder below (or a file in it); only what you accept is applied, and it
              can be undone like any other change.
            </span>
          </p>
        </div>
        <div className="approval-actions">
          <Button testId="held-reject-all" disabled={busy || sending} onClick={() => send('rejected')}>
            Reject all
          </Button>
        </div>
      </header>
      <div className="approval-body">
        <ol className="approval-list">
          {groups.map((group) => (
            <HeldGroupItem
              key={group.folder}
              group={group}
              openAtFirst={count <= OPEN_ALL_MAX}
              choice={groupChoices[group.folder]}
              files={filesOf(group.folder)}
              total={complete ? undefined : pages[group.folder]?.total}
              fileChoices={fileChoices}
              disabled={busy || sending}
              onChoose={(choice) => chooseGroup(group.folder, choice)}
              onChooseFile={chooseFile}
              onMore={() => loadPage(group.folder)}
              loadDiff={(relPath) =>
                window.api.invoke('held:diff', { sessionId, callId: call.callId, relPath })
              }
            />
          ))}
        </ol>
        <footer className="approval-footer row">
          <span className="muted small" data-testid="held-progress">
            {count} change{count === 1 ? '' : 's'} in {groups.length} folder{groups.length === 1 ? '' : 's'}
            {undecided > 0 ? `: ${undecided} still to decide.` : ': all decided.'}
          </span>
          <Button
            look="primary"
            testId="held-apply"
            disabled={busy || sending || undecided > 0}
            onClick={() => send()}
          >
            Apply what I accepted
          </Button>
        </footer>
      </div>
    </section>
  )
}

type DiffResult = Awaited<ReturnType<typeof window.api.invoke<'held:diff'>>>

function HeldGroupItem({
  group,
  openAtFirst,
  choice,
  files,
  total,
  fileChoices,
  disabled,
  onChoose,
  onChooseFile,
  onMore,
  loadDiff,
}: {
  group: HeldGroup
  openAtFirst: boolean
  choice: Choice | undefined
  /** Undefined: not paged in yet. */
  files: HeldFile[] | undefined
  /** How many the folder holds, once a page said so (a large set). */
  total: number | undefined
  fileChoices: Record<string, Choice>
  disabled: boolean
  onChoose(choice: Choice): void
  onChooseFile(relPath: string, choice: Choice): void
  onMore(): Promise<void>
  loadDiff(relPath: string): Promise<DiffResult>
}) {
  const [open, setOpen] = useState(openAtFirst)
  const [loading, setLoading] = useState(false)
  const name = group.folder === '' ? 'top level' : `${group.folder}/`
  const more = async (): Promise<void> => {
    setLoading(true)
    await onMore().finally(() => setLoading(false))
  }
  const toggle = (): void => {
    if (!open && files === undefined) void more()
    setOpen(!open)
  }
  return (
    <HeldItem choice={choice} testId="held-group" data={{ 'data-folder': group.folder }}>
      <div className="approval-item-head">
        <span className="approval-kind">folder</span>
        <span className="approval-title mono">{name}</span>
        {group.protected > 0 && (
          <span className="badge danger" data-testid="protected-badge">
            {group.protected} protected
          </span>
        )}
      </div>
      <p className="muted small" data-testid="held-group-counts">
        {countsText(group)}
      </p>
      <HeldChoice what="group" choice={choice} disabled={disabled} onChoose={onChoose}>
        <Button testId="held-group-toggle" aria-expanded={open} onClick={toggle}>
          {open ? 'Hide its changes' : 'Show its changes'}
        </Button>
      </HeldChoice>
      {open && (
        <>
          <ol className="approval-list" aria-label={`Changes in ${name}`}>
            {(files ?? []).map((file) => (
              <HeldFileItem
                key={file.relPath}
                file={file}
                choice={fileChoices[file.relPath] ?? choice}
                disabled={disabled}
                onChoose={(c) => onChooseFile(file.relPath, c)}
                loadDiff={loadDiff}
              />
            ))}
          </ol>
          {loading && <p className="muted small">Loading…</p>}
          {total !== undefined && files !== undefined && files.length < total && !loading && (
            <Button testId="held-group-more" onClick={() => void more()}>
              Show more ({total - files.length} not shown)
            </Button>
          )}
        </>
      )}
    </HeldItem>
  )
}

function HeldFileItem({
  file,
  choice,
  disabled,
  onChoose,
  loadDiff,
}: {
  file: HeldFile
  choice: Choice | undefined
  disabled: boolean
  onChoose(choice: Choice): void
  loadDiff(relPath: string): Promise<DiffResult>
}) {
  // A file paged in comes without its diff: loaded when the user asks to see it.
  const [loaded, setLoaded] = useState<HeldFile | { error: string } | undefined>()
  const shown = loaded && !('error' in loaded) ? loaded : file
  const paged = file.diff === undefined && file.note === undefined
  const show = (): void => {
    void loadDiff(file.relPath).then((r) => setLoaded(r.ok ? r.value : { error: r.error }))
  }
  return (
    <HeldItem choice={choice} testId="held-file" data={{ 'data-path': file.relPath }}>
      <div className="approval-item-head">
        <span className="approval-kind">
          {file.kind === 'dir' ? 'folder' : file.kind === 'link' ? 'link' : 'file'}{' '}
          {CHANGE_WORDS[file.change]}
        </span>
        <span className="approval-title mono">{file.relPath}</span>
        {file.reason !== undefined && (
          <span className="badge danger" data-testid="protected-badge">
            protected path
          </span>
        )}
      </div>
      {file.reason !== undefined && (
        <p className="sibling-skip-note" role="note" data-testid="held-warning">
          Warning, protected path ({file.reason}): a change here can run code on your computer or expose
          secrets (your next plain <code>git</code> command, your editor or your shell may act on it). Accept
          it only if you expected this command to make it.
        </p>
      )}
      {shown.diff ? (
        <DiffView preview={shown.diff} />
      ) : paged && loaded === undefined ? (
        <Button testId="held-show-diff" onClick={show}>
          Show the change
        </Button>
      ) : (
        <p className="muted small" data-testid="held-note">
          {loaded && 'error' in loaded ? loaded.error : (shown.note ?? 'No content to show.')}
        </p>
      )}
      <HeldChoice what="file" choice={choice} disabled={disabled} onChoose={onChoose} />
    </HeldItem>
  )
}

/** The command as the model wrote it (its description is the card's title). */
function commandOf(call: ToolCallState): string {
  const input = call.input as { command?: unknown } | null
  return typeof input?.command === 'string' ? input.command : callTitle(call)
}
