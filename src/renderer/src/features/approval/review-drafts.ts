import { useCallback, useEffect, useState } from 'react'
import { own, setOwn } from '../../../../shared/own'
import type { HunkChoices } from '../rewind/HunkReview'
import type { SandboxChoice } from './SandboxSwitches'

/**
 * What the user has put into the review and not yet sent: per call, the note being typed, the "always allow"
 * box, the sandbox switches, the per-hunk choices of a write and a staged decision. Kept per session in localStorage, so neither new calls streaming into the review
 * (which change the list it shows) nor a reload of the page loses a word of it. A session's drafts go once
 * their decisions are sent.
 */

export interface Draft {
  decision?: 'approved' | 'rejected'
  note: string
  always: boolean
  /** "Allow for the rest of this session" (the rule the review offers with the call). */
  forSession?: boolean
  /** For a command: the sandbox switches of the review (network, outside the sandbox). */
  sandbox?: SandboxChoice
  /** For a write: the hunks left out or edited (HunkReview). */
  hunks?: HunkChoices
}

export type Drafts = Readonly<Record<string, Draft>>

const EMPTY: Draft = { note: '', always: false }
const storageKey = (sessionId: string): string => `lanes.review.${sessionId}`

function read(sessionId: string): Drafts {
  try {
    const parsed = JSON.parse(localStorage.getItem(storageKey(sessionId)) ?? '{}') as unknown
    return typeof parsed === 'object' && parsed !== null ? (parsed as Drafts) : {}
  } catch {
    // A damaged entry is a lost draft, not a broken review.
    return {}
  }
}

export function draftOf(drafts: Drafts, callId: string): Draft {
  return own(drafts, callId) ?? EMPTY
}

export function useReviewDrafts(sessionId: string): {
  drafts: Drafts
  update(callIds: readonly string[], patch: (draft: Draft) => Draft): void
  forget(callIds: readonly string[]): void
} {
  const [drafts, setDrafts] = useState<Drafts>(() => read(sessionId))
  useEffect(() => {
    if (Object.keys(drafts).length === 0) localStorage.removeItem(storageKey(sessionId))
    else localStorage.setItem(storageKey(sessionId), JSON.stringify(drafts))
  }, [sessionId, drafts])
  const update = useCallback((callIds: readonly string[], patch: (draft: Draft) => Draft) => {
    setDrafts((prev) => {
      const next = { ...prev }
      for (const id of callIds) setOwn(next, id, patch(draftOf(prev, id)))
      return next
    })
  }, [])
  const forget = useCallback((callIds: readonly string[]) => {
    setDrafts((prev) => {
      const next = { ...prev }
      for (const id of callIds) delete next[id]
      return next
    })
  }, [])
  return { drafts, update, forget }
}
