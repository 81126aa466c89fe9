import { useMemo, useState } from 'react'
import type { HeldFile } from '../../../../shared/events'
import type { ApprovalReply } from '../../../../shared/ipc'
import type { SessionState } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'
import { DiffView } from './DiffView'
import { Button } from '../../components/Button'
import { DecisionButtons } from './DecisionButtons'

/**
 * The review of a command's held changes (issue 20): the command has run, nothing it changed has landed, and the
 * changes to protected files (or all of them, when the review asked to hold them) wait here, each with its diff
 * and a plain warning. The user accepts or rejects each one; only what is accepted lands (undoable, like every
 * landing). The decisions go in one `approval:reply` for the command's call, as the review's other decisions do.
 */
export function HeldReviews({
  head,
  busy,
  replyApprovals,
}: {
  head: SessionState | undefined
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
  return (
    <>
      {waiting.map((call) => (
        <HeldReview key={call.callId} call={call} busy={busy} replyApprovals={replyApprovals} />
      ))}
    </>
  )
}

type Choice = 'accepted' | 'rejected'

function HeldReview({
  call,
  busy,
  replyApprovals,
}: {
  call: ToolCallState
  busy: boolean
  replyApprovals(decisions: ApprovalReply[]): Promise<boolean>
}) {
  const files = call.held?.review ?? []
  const count = call.held?.count ?? files.length
  const [choices, setChoices] = useState<Record<string, Choice>>({})
  const [sending, setSending] = useState(false)
  const undecided = files.filter((f) => choices[f.relPath] === undefined).length
  const choose = (relPath: string, choice: Choice): void => setChoices((c) => ({ ...c, [relPath]: choice }))
  const send = (all?: Choice): void => {
    setSending(true)
    const decided = files.map((f) => ({
      relPath: f.relPath,
      decision: all ?? choices[f.relPath] ?? 'rejected',
    }))
    void replyApprovals([
      {
        callId: call.callId,
        decision: decided.some((d) => d.decision === 'accepted') ? 'approved' : 'rejected',
        files: decided,
      },
    ]).then((ok) => {
      if (!ok) setSending(false)
    })
  }
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
            The command <code>{commandOf(call)}</code> has run, but none of its changes has been applied yet:{' '}
            {files.some((f) => f.reason !== undefined)
              ? 'it changed protected files.'
              : 'you asked to see them first.'}{' '}
            Accept or reject each change below; only what you accept is applied, and it can be undone like any
            other change.
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
          {files.map((file) => (
            <HeldFileItem
              key={file.relPath}
              file={file}
              choice={choices[file.relPath]}
              disabled={busy || sending}
              onChoose={(choice) => choose(file.relPath, choice)}
            />
          ))}
        </ol>
        {count > files.length && (
          <p className="muted small" data-testid="held-not-shown">
            {count - files.length} more held changes are not shown here; they will not be applied.
          </p>
        )}
        <footer className="approval-footer row">
          <span className="muted small">
            {undecided > 0
              ? `${undecided} of ${files.length} still to decide.`
              : `${files.filter((f) => choices[f.relPath] === 'accepted').length} accepted, ${files.filter((f) => choices[f.relPath] === 'rejected').length} rejected.`}
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

const CHANGE_WORDS: Record<HeldFile['change'], string> = {
  added: 'added',
  changed: 'changed',
  removed: 'removed',
  mode: 'permissions changed',
}

function HeldFileItem({
  file,
  choice,
  disabled,
  onChoose,
}: {
  file: HeldFile
  choice: Choice | undefined
  disabled: boolean
  onChoose(choice: Choice): void
}) {
  return (
    <li
      className={`approval-item ${choice ? `staged ${choice === 'accepted' ? 'approved' : 'rejected'}` : ''}`}
      data-testid="held-file"
      data-path={file.relPath}
      data-choice={choice ?? ''}
    >
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
      {file.diff ? (
        <DiffView preview={file.diff} />
      ) : (
        <p className="muted small" data-testid="held-note">
          {file.note ?? 'No content to show.'}
        </p>
      )}
      <DecisionButtons
        reject={{ value: 'rejected', testId: 'held-reject', label: 'Reject' }}
        approve={{ value: 'accepted', testId: 'held-accept', label: 'Accept' }}
        disabled={disabled}
        chosen={choice ?? null}
        onChoose={onChoose}
      />
    </li>
  )
}

/** The command as the model wrote it (its description is the card's title). */
function commandOf(call: ToolCallState): string {
  const input = call.input as { command?: unknown } | null
  return typeof input?.command === 'string' ? input.command : callTitle(call)
}
