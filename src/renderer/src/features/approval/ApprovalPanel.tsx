import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { ApprovalPreview, HunkDecision } from '../../../../shared/events'
import type { ApprovalReply, AppInfo } from '../../../../shared/ipc'
import { getCall } from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'
import { useAppStore } from '../../store/app-store'
import { HunkReview } from '../rewind/HunkReview'
import { DiffView } from './DiffView'
import { SANDBOX_DEFAULT, SandboxSwitches, type SandboxChoice } from './SandboxSwitches'

/**
 * The review screen for a turn: every call waiting for approval, with its diff or command. Each decision is
 * staged until every call of the turn has one, then all are sent in one `approval:reply`: a run paused in an
 * earlier process continues with exactly the decisions it was given, so a half-reviewed turn must not go out.
 */

interface Staged {
  decision: 'approved' | 'rejected'
  note: string
  always: boolean
  sandbox: SandboxChoice
}

export function ApprovalPanel() {
  const { head, busy, replyApprovals, sandbox } = useAppStore(
    useShallow((s) => ({
      head: s.timeline?.head,
      busy: s.busy,
      replyApprovals: s.replyApprovals,
      sandbox: s.info?.sandbox,
      version: s.version,
    })),
  )
  const pending = useMemo(() => {
    if (!head) return []
    return head.pendingApprovals
      .map((id) => getCall(head, id))
      .filter((c): c is ToolCallState => c !== undefined && c.status === 'awaiting-approval')
  }, [head])
  if (pending.length === 0) return null
  // A new set of calls starts a fresh review: the previous turn's staged decisions no longer apply.
  return (
    <Review
      key={pending.map((c) => c.callId).join(',')}
      pending={pending}
      busy={busy}
      replyApprovals={replyApprovals}
      sandbox={sandbox}
    />
  )
}

interface ReviewProps {
  pending: ToolCallState[]
  busy: boolean
  replyApprovals(decisions: ApprovalReply[]): Promise<boolean>
  sandbox: AppInfo['sandbox'] | undefined
}

function Review({ pending, busy, replyApprovals, sandbox }: ReviewProps) {
  const [staged, setStaged] = useState<Record<string, Staged>>({})
  const [notes, setNotes] = useState<Record<string, string>>({})
  const [always, setAlways] = useState<Record<string, boolean>>({})
  const [choices, setChoices] = useState<Record<string, SandboxChoice>>({})
  const [hunks, setHunks] = useState<Record<string, HunkDecision[]>>({})
  const [focus, setFocus] = useState(0)
  const panelRef = useRef<HTMLElement>(null)
  const sent = useRef(false)

  const submit = useCallback(
    (all: Record<string, Staged>) => {
      if (pending.length === 0 || pending.some((c) => !all[c.callId])) return
      if (sent.current) return
      sent.current = true
      const decisions: ApprovalReply[] = pending.map((c) => {
        const d = all[c.callId] as Staged
        const reply: ApprovalReply = { callId: c.callId, decision: d.decision }
        if (d.note.trim() !== '') reply.note = d.note.trim()
        if (d.always && d.decision === 'approved') reply.always = true
        if (d.decision === 'approved' && d.sandbox.network) reply.network = true
        if (d.decision === 'approved' && d.sandbox.outsideSandbox) reply.outsideSandbox = true
        const reviewed = hunks[c.callId]
        if (d.decision === 'approved' && reviewed && reviewed.length > 0) reply.hunks = reviewed
        return reply
      })
      void replyApprovals(decisions).then((ok) => {
        if (!ok) sent.current = false
      })
    },
    [pending, replyApprovals, hunks],
  )

  const decide = useCallback(
    (callIds: string[], decision: 'approved' | 'rejected') => {
      const next = { ...staged }
      for (const id of callIds)
        next[id] = {
          decision,
          note: notes[id] ?? '',
          always: always[id] ?? false,
          sandbox: choices[id] ?? SANDBOX_DEFAULT,
        }
      setStaged(next)
      submit(next)
      // Move on to the next call still waiting for a decision.
      const nextOpen = pending.findIndex(
        (c, i) => i > focus && !staged[c.callId] && !callIds.includes(c.callId),
      )
      if (nextOpen >= 0) setFocus(nextOpen)
    },
    [notes, always, choices, submit, pending, focus, staged],
  )

  const undo = (callId: string): void => {
    setStaged((prev) => {
      const next = { ...prev }
      delete next[callId]
      return next
    })
  }

  useEffect(() => {
    const onKey = (event: KeyboardEvent): void => {
      const target = event.target as HTMLElement | null
      if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.isContentEditable))
        return
      if (event.ctrlKey || event.metaKey || event.altKey) return
      const current = pending[focus]
      switch (event.key) {
        case 'A':
          if (!event.shiftKey) return
          decide(
            pending.map((c) => c.callId),
            'approved',
          )
          break
        case 'R':
          if (!event.shiftKey) return
          decide(
            pending.map((c) => c.callId),
            'rejected',
          )
          break
        case 'a':
          if (current) decide([current.callId], 'approved')
          break
        case 'r':
          if (current) decide([current.callId], 'rejected')
          break
        case 'j':
        case 'ArrowDown':
          setFocus((f) => Math.min(pending.length - 1, f + 1))
          break
        case 'k':
        case 'ArrowUp':
          setFocus((f) => Math.max(0, f - 1))
          break
        default:
          return
      }
      event.preventDefault()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [pending, focus, decide])

  useEffect(() => {
    panelRef.current
      ?.querySelector<HTMLElement>(`[data-review-index="${focus}"]`)
      ?.scrollIntoView({ block: 'nearest', behavior: 'smooth' })
  }, [focus])

  const remaining = pending.filter((c) => !staged[c.callId]).length
  return (
    <section
      className="approval-panel"
      data-testid="approval-panel"
      aria-label="Review before it runs"
      ref={panelRef}
    >
      <header className="approval-header">
        <div>
          <h2>Review before it runs</h2>
          <p className="muted small">
            {pending.length === 1
              ? 'The agent wants to make one change. Nothing happens until you decide.'
              : `The agent wants to make ${pending.length} changes in this step. Nothing happens until you decide on each.`}
          </p>
        </div>
        <div className="approval-actions">
          <button
            type="button"
            className="button"
            data-testid="approval-reject-all"
            disabled={busy}
            onClick={() =>
              decide(
                pending.map((c) => c.callId),
                'rejected',
              )
            }
          >
            Reject all <kbd>⇧R</kbd>
          </button>
          <button
            type="button"
            className="button primary"
            data-testid="approval-approve-all"
            disabled={busy}
            onClick={() =>
              decide(
                pending.map((c) => c.callId),
                'approved',
              )
            }
          >
            Approve all <kbd>⇧A</kbd>
          </button>
        </div>
      </header>
      <ol className="approval-list">
        {pending.map((call, i) => {
          const decision = staged[call.callId]
          const preview = call.approval?.preview as ApprovalPreview
          return (
            <li
              key={call.callId}
              className={`approval-item ${i === focus ? 'focused' : ''} ${decision ? `staged ${decision.decision}` : ''}`}
              data-testid="approval-item"
              data-call-id={call.callId}
              data-review-index={i}
              onFocusCapture={() => setFocus(i)}
              onClick={() => setFocus(i)}
            >
              <div className="approval-item-head">
                <span className="approval-kind">{kindLabel(call, preview)}</span>
                <span className="approval-title">{callTitle(call)}</span>
                {preview.kind === 'write' && preview.protected && (
                  <span className="badge danger" data-testid="protected-badge">
                    protected path
                  </span>
                )}
              </div>
              <PreviewBody preview={preview} />
              {preview.kind === 'write' && !decision && (
                <HunkReview
                  preview={preview}
                  onChange={(d) => setHunks((prev) => ({ ...prev, [call.callId]: d }))}
                />
              )}
              {decision ? (
                <div className="approval-staged" role="status">
                  {decision.decision === 'approved' ? 'Will approve' : 'Will reject'}
                  {decision.decision === 'approved' && decision.sandbox.outsideSandbox
                    ? ' (outside the sandbox)'
                    : decision.decision === 'approved' && decision.sandbox.network
                      ? ' (with the internet)'
                      : ''}
                  {decision.decision === 'approved' && (hunks[call.callId]?.length ?? 0) > 0
                    ? ' as reviewed by hunk'
                    : ''}
                  {decision.note ? ` with note “${decision.note}”` : ''}
                  {remaining > 0
                    ? ` once the other ${remaining === 1 ? 'call is' : `${remaining} calls are`} decided`
                    : '…'}
                  <button
                    type="button"
                    className="link-button"
                    onClick={() => undo(call.callId)}
                    disabled={busy}
                  >
                    Undo
                  </button>
                </div>
              ) : (
                <div className="approval-controls">
                  <textarea
                    className="text-input note-input"
                    data-testid="approval-note"
                    rows={1}
                    placeholder="Optional note for the agent (e.g. why you reject it)"
                    aria-label={`Note for the agent about: ${callTitle(call)}`}
                    value={notes[call.callId] ?? ''}
                    onChange={(e) => setNotes((prev) => ({ ...prev, [call.callId]: e.target.value }))}
                    onKeyDown={(e) => {
                      if (e.key === 'Escape') (e.target as HTMLTextAreaElement).blur()
                    }}
                  />
                  {preview.kind === 'bash' && (
                    <label className="checkbox">
                      <input
                        type="checkbox"
                        data-testid="approval-always"
                        checked={always[call.callId] ?? false}
                        onChange={(e) => setAlways((prev) => ({ ...prev, [call.callId]: e.target.checked }))}
                      />
                      Always allow this command in this folder
                    </label>
                  )}
                  {preview.kind === 'bash' && (
                    <SandboxSwitches
                      sandbox={sandbox}
                      value={choices[call.callId] ?? SANDBOX_DEFAULT}
                      onChange={(next) => setChoices((prev) => ({ ...prev, [call.callId]: next }))}
                    />
                  )}
                  <div className="row">
                    <button
                      type="button"
                      className="button danger-outline"
                      data-testid="approval-reject"
                      disabled={busy}
                      onClick={() => decide([call.callId], 'rejected')}
                    >
                      Reject <kbd>R</kbd>
                    </button>
                    <button
                      type="button"
                      className="button primary"
                      data-testid="approval-approve"
                      disabled={busy}
                      onClick={() => decide([call.callId], 'approved')}
                    >
                      Approve <kbd>A</kbd>
                    </button>
                  </div>
                </div>
              )}
            </li>
          )
        })}
      </ol>
      <footer className="approval-footer muted small">
        Keys: <kbd>A</kbd> approve · <kbd>R</kbd> reject · <kbd>⇧A</kbd> approve all · <kbd>⇧R</kbd> reject
        all · <kbd>J</kbd>/<kbd>K</kbd> next/previous · a note is sent to the agent with your decision
      </footer>
    </section>
  )
}

function kindLabel(call: ToolCallState, preview: ApprovalPreview): string {
  switch (preview.kind) {
    case 'write':
      return call.name === 'edit_file' ? 'Edit' : preview.before === null ? 'New file' : 'Write'
    case 'bash':
      return 'Command'
    case 'other':
      return call.name
  }
}

function PreviewBody({ preview }: { preview: ApprovalPreview }) {
  switch (preview.kind) {
    case 'write':
      return <DiffView preview={preview} />
    case 'bash':
      return (
        <div className="bash-preview" data-testid="bash-preview">
          {preview.description && <div className="bash-description">{preview.description}</div>}
          <code className="bash-command">
            <span className="prompt" aria-hidden="true">
              ${' '}
            </span>
            {preview.command}
          </code>
          <div className="muted small">
            in <span className="mono">{preview.cwd}</span>
          </div>
        </div>
      )
    case 'other':
      return <div className="other-preview">{preview.summary}</div>
  }
}
