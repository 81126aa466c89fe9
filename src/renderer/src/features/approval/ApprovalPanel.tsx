import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import { describeSessionRule, rejectsEveryHunk } from '../../../../shared/events'
import type { ApprovalPreview, HunkDecision, WritePreview } from '../../../../shared/events'
import type { ApprovalReply, AppInfo } from '../../../../shared/ipc'
import { getCall } from '../../../../shared/reducer'
import { reviewKind } from '../../../../shared/call-naming'
import { own, setOwn } from '../../../../shared/own'
import type { ToolCallState } from '../../../../shared/tool-call'
import { focusedElement } from '../../lib/editable'
import { callTitle } from '../../lib/format'
import { useAppStore } from '../../store/app-store'
import { decisionsOf, HunkReview, type HunkChoices } from '../rewind/HunkReview'
import { ChangeSummary } from './ChangeSummary'
import { DiffView, isSummarized } from './DiffView'
import { HeldReviews } from './HeldReview'
import { SANDBOX_DEFAULT, SandboxSwitches } from './SandboxSwitches'
import { draftOf, useReviewDrafts, type Draft, type Drafts } from './review-drafts'
import { ReviewAnnouncer, siblingSkips, useReviewKeys } from './review-support'
import { Checkbox } from '../../components/Checkbox'
import { Button } from '../../components/Button'
import { DecisionButtons } from './DecisionButtons'

/**
 * The review screen for a turn: every call waiting for approval, with its diff or command. Each decision is
 * staged until every call of the turn has one, then all are sent in one `approval:reply`: a run paused in an
 * earlier process continues with exactly the decisions it was given, so a half-reviewed turn must not go out.
 * Notes, per-hunk choices and staged decisions are drafts kept per session (review-drafts.ts): calls still streaming in extend
 * the list without touching them, and a reload brings them back.
 */

export function ApprovalPanel() {
  const { head, busy, replyApprovals, sessionId, sandbox, capture } = useAppStore(
    useShallow((s) => ({
      head: s.timeline?.head,
      busy: s.busy,
      replyApprovals: s.replyApprovals,
      sandbox: s.info?.sandbox,
      capture: s.info?.capture,
      sessionId: s.openSessionId,
      version: s.version,
    })),
  )
  const pending = useMemo(() => {
    if (!head) return []
    return head.pendingApprovals
      .map((id) => getCall(head, id))
      .filter((c): c is ToolCallState => c !== undefined && c.status === 'awaiting-approval')
  }, [head])
  return (
    <>
      <ReviewAnnouncer pending={pending.length} />
      <HeldReviews head={head} sessionId={sessionId} busy={busy} replyApprovals={replyApprovals} />
      {pending.length > 0 && sessionId !== null && (
        // Remounted only for another session: a call streaming in joins the same review.
        <Review
          key={sessionId}
          sessionId={sessionId}
          pending={pending}
          skips={siblingSkips(head, pending)}
          busy={busy}
          replyApprovals={replyApprovals}
          sandbox={sandbox}
          capture={capture}
        />
      )}
    </>
  )
}

interface ReviewProps {
  sessionId: string
  pending: ToolCallState[]
  /** Per pending call: the titles of the calls its failure would skip. */
  skips: ReadonlyMap<string, string[]>
  busy: boolean
  replyApprovals(decisions: ApprovalReply[]): Promise<boolean>
  sandbox: AppInfo['sandbox'] | undefined
  capture: AppInfo['capture'] | undefined
}

function Review({ sessionId, pending, skips, busy, replyApprovals, sandbox, capture }: ReviewProps) {
  const { drafts, update, forget } = useReviewDrafts(sessionId)
  const [focus, setFocus] = useState(0)
  /** The calls an approval by key waits to confirm for (ConfirmApproval), if any. */
  const [confirming, setConfirming] = useState<string[] | null>(null)
  const panelRef = useRef<HTMLElement>(null)
  /** The set of calls whose decisions are on their way, so a second key press does not send them twice. */
  const sentFor = useRef<string | null>(null)

  const submit = useCallback(
    (all: Drafts) => {
      if (pending.length === 0 || pending.some((c) => !draftOf(all, c.callId).decision)) return
      const ids = pending.map((c) => c.callId)
      const key = ids.join(',')
      if (sentFor.current === key) return
      sentFor.current = key
      const decisions: ApprovalReply[] = pending.map((c) => {
        const d = draftOf(all, c.callId) as Draft & { decision: 'approved' | 'rejected' }
        const reply: ApprovalReply = { callId: c.callId, decision: d.decision }
        if (d.note.trim() !== '') reply.note = d.note.trim()
        if (d.always && d.decision === 'approved') reply.always = true
        if (d.forSession && d.decision === 'approved' && c.approval?.sessionRule) reply.forSession = true
        if (d.decision === 'approved' && d.sandbox?.network) reply.network = true
        if (d.decision === 'approved' && d.sandbox?.outsideSandbox) reply.outsideSandbox = true
        else if (d.decision === 'approved' && d.sandbox?.hold) reply.hold = true
        const reviewed = hunkDecisions(c, d)
        if (d.decision === 'approved' && reviewed && reviewed.length > 0) reply.hunks = reviewed
        return reply
      })
      void replyApprovals(decisions).then((ok) => {
        if (ok) forget(ids)
        else sentFor.current = null
      })
    },
    [pending, replyApprovals, forget],
  )

  const decide = useCallback(
    (callIds: string[], decision: 'approved' | 'rejected') => {
      setConfirming(null)
      const next: Record<string, Draft> = { ...drafts }
      for (const id of callIds) setOwn(next, id, { ...draftOf(drafts, id), decision })
      update(callIds, (d) => ({ ...d, decision }))
      submit(next)
      // Move on to the next call still waiting for a decision.
      const nextOpen = pending.findIndex(
        (c, i) => i > focus && !draftOf(drafts, c.callId).decision && !callIds.includes(c.callId),
      )
      if (nextOpen >= 0) setFocus(nextOpen)
    },
    [drafts, update, submit, pending, focus],
  )

  const decideAll = (decision: 'approved' | 'rejected'): void =>
    decide(
      pending.map((c) => c.callId),
      decision,
    )

  const undo = (callId: string): void =>
    update([callId], (d) => ({
      note: d.note,
      always: d.always,
      forSession: d.forSession,
      sandbox: d.sandbox,
      hunks: d.hunks,
    }))

  // An approval by key of calls with a note typed (and perhaps not finished: the user may have pressed Esc and A
  // meaning to come back) waits for a confirmation; a click on Approve is deliberate and does not.
  const decideByKey = useCallback(
    (callIds: string[], decision: 'approved' | 'rejected') => {
      if (decision === 'approved' && callIds.some((id) => startedNote(drafts[id]) !== undefined))
        setConfirming(callIds)
      else decide(callIds, decision)
    },
    [drafts, decide],
  )
  useReviewKeys(pending, focus, setFocus, decideByKey, confirming !== null)

  // When the review opens it takes the focus only from nothing (the page itself): never from a field or a
  // control the user is in, where a letter meant as text would otherwise act as a review key.
  useEffect(() => {
    if (focusedElement() === null) panelRef.current?.focus({ preventScroll: true })
  }, [])

  useEffect(() => {
    panelRef.current
      ?.querySelector<HTMLElement>(`[data-review-index="${focus}"]`)
      ?.scrollIntoView({ block: 'nearest', behavior: 'smooth' })
  }, [focus])

  const remaining = pending.filter((c) => !draftOf(drafts, c.callId).decision).length
  return (
    <section
      className="approval-panel"
      data-testid="approval-panel"
      aria-label="Review before it runs"
      ref={panelRef}
      tabIndex={-1}
    >
      <header className="approval-header">
        <div>
          <h2>Review before it runs</h2>
          <p className="muted small">
            <span className="approval-what">
              {pending.length === 1
                ? 'The agent wants to make one change.'
                : `The agent wants to make ${pending.length} changes in this step.`}
            </span>{' '}
            Nothing happens until you decide
            {pending.length === 1 ? '' : <span className="approval-each"> on each</span>}.
          </p>
        </div>
        <div className="approval-actions">
          <Button testId="approval-reject-all" disabled={busy} onClick={() => decideAll('rejected')}>
            Reject all <kbd>⇧R</kbd>
          </Button>
          <Button
            look="primary"
            testId="approval-approve-all"
            disabled={busy}
            onClick={() => decideAll('approved')}
          >
            Approve all <kbd>⇧A</kbd>
          </Button>
        </div>
      </header>
      {confirming && (
        <ConfirmApproval
          calls={pending.filter((c) => confirming.includes(c.callId))}
          drafts={drafts}
          onConfirm={() => {
            setConfirming(null)
            decide(confirming, 'approved')
          }}
          onBack={(callId) => {
            setConfirming(null)
            const note = panelRef.current?.querySelector<HTMLElement>(
              `[data-call-id="${CSS.escape(callId)}"] [data-testid=approval-note]`,
            )
            ;(note ?? panelRef.current)?.focus()
          }}
        />
      )}
      {/* The calls scroll under the header, not behind it: a call scrolled into view shows its name and buttons. */}
      <div className="approval-body">
        <ol className="approval-list">
          {pending.map((call, i) => {
            const draft = draftOf(drafts, call.callId)
            const decision = draft.decision ? draft : undefined
            const preview = call.approval?.preview as ApprovalPreview
            const words = actionWords(preview)
            const skipped = skips.get(call.callId) ?? []
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
                  <span className="approval-kind">{reviewKind(call.name, preview)}</span>
                  <span className="approval-title">{callTitle(call)}</span>
                  {preview.kind === 'write' && preview.protected && (
                    <span className="badge danger" data-testid="protected-badge">
                      protected path
                    </span>
                  )}
                </div>
                {preview.kind === 'write' && isSummarized(preview) ? (
                  // Too large or binary for parts: its facts, and the whole diff on request.
                  <ChangeSummary preview={preview} fullDiff={{ sessionId, callId: call.callId }} />
                ) : preview.kind === 'write' && !decision ? (
                  // The diff with its parts in it: tick, leave out, edit, note, all where the lines are.
                  <HunkReview
                    preview={preview}
                    value={draft.hunks ?? NO_CHOICES}
                    onChange={(next) => update([call.callId], (d) => ({ ...d, hunks: next }))}
                  />
                ) : (
                  <PreviewBody preview={preview} choices={draft.hunks} />
                )}
                {buildsOnPartial(pending, i, drafts) && (
                  <p className="sibling-skip-note" data-testid="builds-on-partial">
                    This change was made on top of the change to the same file above, which you are leaving
                    out in whole or in part: as shown here it will not apply. Approve that one whole, or
                    reject this one.
                  </p>
                )}
                {skipped.length > 0 && (
                  <p className="sibling-skip-note" data-testid="sibling-skip-note">
                    If this fails,{' '}
                    {skipped.length === 1 ? 'the change after it is' : 'the changes after it are'} skipped:{' '}
                    {skipped.map((t) => `'${t}'`).join(', ')}.
                  </p>
                )}
                {decision ? (
                  <div className="approval-staged" role="status">
                    {decision.decision === 'rejected'
                      ? 'Will reject'
                      : rejectsEveryHunk(preview, hunkDecisions(call, decision))
                        ? 'Will reject: every part is left out'
                        : 'Will approve'}
                    {decision.decision === 'approved' && decision.sandbox?.outsideSandbox
                      ? ' (outside the sandbox)'
                      : decision.decision === 'approved' && decision.sandbox?.network
                        ? ' (with the internet)'
                        : ''}
                    {decision.decision === 'approved' &&
                    hunkDecisions(call, decision).length > 0 &&
                    !rejectsEveryHunk(preview, hunkDecisions(call, decision))
                      ? ' the parts you kept'
                      : ''}
                    {decision.note ? ` with note “${decision.note}”` : ''}
                    {remaining > 0
                      ? ` once the other ${remaining === 1 ? 'call is' : `${remaining} calls are`} decided`
                      : '…'}
                    <Button look="link" onClick={() => undo(call.callId)} disabled={busy}>
                      Undo
                    </Button>
                  </div>
                ) : (
                  <div className="approval-controls">
                    <textarea
                      className="text-input note-input"
                      data-testid="approval-note"
                      rows={1}
                      placeholder="Optional note for the agent, sent with your decision (e.g. why you reject it)"
                      aria-label={`Note for the agent about: ${callTitle(call)}`}
                      value={draft.note}
                      onChange={(e) => {
                        const note = e.target.value
                        update([call.callId], (d) => ({ ...d, note }))
                      }}
                      onKeyDown={(e) => {
                        if (e.key === 'Escape') (e.target as HTMLTextAreaElement).blur()
                      }}
                    />
                    {(preview.kind === 'bash' || (preview.kind === 'other' && preview.alwaysAllow)) && (
                      <Checkbox
                        testId="approval-always"
                        checked={draft.always}
                        onChange={(checked) => update([call.callId], (d) => ({ ...d, always: checked }))}
                      >
                        {preview.kind === 'bash'
                          ? 'Always allow this command in this folder'
                          : `Always allow ${preview.alwaysAllow}`}
                      </Checkbox>
                    )}
                    {call.approval?.sessionRule && (
                      <Checkbox
                        testId="approval-for-session"
                        checked={draft.forSession === true}
                        onChange={(checked) => update([call.callId], (d) => ({ ...d, forSession: checked }))}
                      >
                        Allow for the rest of this session: {describeSessionRule(call.approval.sessionRule)}
                      </Checkbox>
                    )}
                    {preview.kind === 'bash' && (
                      <SandboxSwitches
                        sandbox={sandbox}
                        capture={capture}
                        value={draft.sandbox ?? SANDBOX_DEFAULT}
                        onChange={(next) => update([call.callId], (d) => ({ ...d, sandbox: next }))}
                      />
                    )}
                    <DecisionButtons
                      reject={{ value: 'rejected', testId: 'approval-reject', label: words.reject, kbd: 'R' }}
                      approve={{
                        value: 'approved',
                        testId: 'approval-approve',
                        label: words.approve,
                        kbd: 'A',
                      }}
                      disabled={busy}
                      onChoose={(decision) => decide([call.callId], decision)}
                    />
                  </div>
                )}
              </li>
            )
          })}
        </ol>
        <footer className="approval-footer muted small">
          Keys: <kbd>A</kbd> approve · <kbd>R</kbd> reject · <kbd>⇧A</kbd> approve all · <kbd>⇧R</kbd> reject
          all · <kbd>J</kbd>/<kbd>K</kbd> next/previous · <kbd>H</kbd> choose parts of a change · keys do
          nothing while you type in a field: <kbd>Esc</kbd> leaves it · a note is sent to the agent with your
          decision
        </footer>
      </div>
    </section>
  )
}

const NO_CHOICES: HunkChoices = {}

/** A binary file is replaced or kept (created or not), never edited: its buttons say which. */
function actionWords(preview: ApprovalPreview): { approve: string; reject: string } {
  if (preview.kind !== 'write' || preview.show !== 'binary') return { approve: 'Approve', reject: 'Reject' }
  return preview.files?.before === null
    ? { approve: 'Create it', reject: 'Do not create' }
    : { approve: 'Replace', reject: 'Keep' }
}

/** The per-hunk decisions of a write's draft; none means the whole change as proposed. */
function hunkDecisions(call: ToolCallState, draft: Draft): HunkDecision[] {
  const preview = call.approval?.preview
  return preview?.kind === 'write' && draft.hunks ? decisionsOf(preview.hunks, draft.hunks) : []
}

/**
 * Whether the call at `index` changes a file that an earlier call of the review changes too, and that earlier
 * change is being rejected or applied only in part: the later diff was made on the earlier one's whole result, and only
 * the change the user saw may land (the engine refuses it then).
 */
function buildsOnPartial(pending: readonly ToolCallState[], index: number, drafts: Drafts): boolean {
  const path = writePath(pending[index])
  if (path === undefined) return false
  return pending.slice(0, index).some((earlier) => {
    const draft = own(drafts, earlier.callId)
    return (
      writePath(earlier) === path &&
      draft !== undefined &&
      (draft.decision === 'rejected' || hunkDecisions(earlier, draft).length > 0)
    )
  })
}

function writePath(call: ToolCallState | undefined): string | undefined {
  const preview = call?.approval?.preview
  return preview?.kind === 'write' ? preview.path : undefined
}

/** The diff as the per-hunk choices leave it: parts left out struck through, edited ones named. */
function ReviewedDiff({ preview, choices }: { preview: WritePreview; choices: HunkChoices | undefined }) {
  // Recomputed only when the choices change, so typing a note does not redraw the diff.
  const decisions = useMemo(
    () => (choices ? decisionsOf(preview.hunks, choices) : undefined),
    [preview.hunks, choices],
  )
  return <DiffView preview={preview} decisions={decisions} />
}

function PreviewBody({ preview, choices }: { preview: ApprovalPreview; choices: HunkChoices | undefined }) {
  switch (preview.kind) {
    case 'write':
      return <ReviewedDiff preview={preview} choices={choices} />
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

/** The note of a call's draft as typed so far, or of its parts left out, when there is one. */
function startedNote(draft: Draft | undefined): string | undefined {
  if (!draft) return undefined
  if (draft.note.trim() !== '') return draft.note.trim()
  const partNote = Object.values(draft.hunks ?? {}).find((h) => !h.apply && h.note.trim() !== '')
  return partNote?.note.trim()
}

/**
 * "Approve with this note?": shown when A (or Shift+A) would send a note that may be half-typed. It takes the focus
 * because the user's key asked for it; Enter (or its button) approves, Esc goes back to the note with what was
 * typed. Letters do nothing here (the review keys are held), so a word typed on would not get past it.
 */
function ConfirmApproval({
  calls,
  drafts,
  onConfirm,
  onBack,
}: {
  calls: ToolCallState[]
  drafts: Drafts
  onConfirm(): void
  onBack(callId: string): void
}) {
  const confirmRef = useRef<HTMLButtonElement>(null)
  useEffect(() => confirmRef.current?.focus({ preventScroll: true }), [])
  const noted = calls.flatMap((c) => {
    const note = startedNote(drafts[c.callId])
    return note === undefined ? [] : [{ call: c, note }]
  })
  const first = noted[0]?.call.callId ?? calls[0]?.callId ?? ''
  return (
    <div
      className="approval-confirm"
      data-testid="approval-confirm"
      role="alertdialog"
      aria-label="Approve with this note?"
      aria-describedby="approval-confirm-text"
      onKeyDown={(e) => {
        if (e.key !== 'Escape') return
        e.preventDefault()
        e.stopPropagation()
        onBack(first)
      }}
    >
      <div id="approval-confirm-text">
        <strong>Approve with {noted.length === 1 ? 'this note' : 'these notes'}?</strong>{' '}
        <span className="muted small">
          The agent gets {noted.length === 1 ? 'it' : 'them'} exactly as{' '}
          {noted.length === 1 ? 'it is' : 'they are'}:
        </span>
        <ul className="approval-confirm-notes">
          {noted.map(({ call, note }) => (
            <li key={call.callId}>
              <span className="muted small">{callTitle(call)}:</span> “{note}”
            </li>
          ))}
        </ul>
      </div>
      <div className="row">
        <Button testId="approval-confirm-back" onClick={() => onBack(first)}>
          Back to the note <kbd>Esc</kbd>
        </Button>
        <Button look="primary" testId="approval-confirm-approve" ref={confirmRef} onClick={onConfirm}>
          Approve with the note <kbd>Enter</kbd>
        </Button>
      </div>
    </div>
  )
}
