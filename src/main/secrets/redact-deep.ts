import type { SessionEventDraft } from '../../shared/events'
import type { Redactor } from './redactor'

/** Every string in `value` (plain JSON: a result's metadata, a preview) with the redactor's secret values hidden. */
export function redactDeep<T>(redactor: Pick<Redactor, 'redactText'>, value: T): T {
  if (typeof value === 'string') return redactor.redactText(value) as T
  if (Array.isArray(value)) return value.map((v: unknown) => redactDeep(redactor, v)) as T
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactDeep(redactor, v)]),
    ) as T
  return value
}

/**
 * What the user reviews before something runs or lands, as it goes into the session log (issue 20): an
 * approval's preview (a command's text, a write's diff and texts) and a command's held changes (their diffs).
 * The one place such an event passes the redactor, so the log and every view of it (the review, a replay)
 * never show a known secret value. The tools' results pass it where they are recorded (turn-calls.ts).
 */
export function redactPreviewEvent(
  redactor: Pick<Redactor, 'redactText'>,
  draft: SessionEventDraft,
): SessionEventDraft {
  switch (draft.type) {
    case 'approval.requested':
      return { ...draft, preview: redactDeep(redactor, draft.preview) }
    case 'command.held':
      return draft.review ? { ...draft, review: redactDeep(redactor, draft.review) } : draft
    default:
      return draft
  }
}
