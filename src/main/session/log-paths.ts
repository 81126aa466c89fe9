import { join } from 'node:path'
import { SessionId } from '../../shared/events'

/** Where a session's files are, and the one error type of the session log (lock, reader, writer). */

export type SessionLogErrorCode =
  'invalid-id' | 'not-found' | 'exists' | 'locked' | 'invalid-event' | 'closed' | 'io'

/** Every failure of the session log (lock, reader, writer): a code to branch on and a message a user can read. */
export class SessionLogError extends Error {
  constructor(
    readonly code: SessionLogErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'SessionLogError'
  }
}

export interface SessionPaths {
  log: string
  lock: string
  outputDir: string
}

/** A session's log is `<id>.jsonl`: the session list finds sessions by it. */
export const LOG_SUFFIX = '.jsonl'
/** A live writer's lock is `<id>.lock` beside its log. */
export const LOCK_SUFFIX = '.lock'

/** Throws `invalid-id` for an id that could escape the folder or is not filename-safe. */
export function sessionPaths(sessionsDir: string, sessionId: string): SessionPaths {
  const parsed = SessionId.safeParse(sessionId)
  if (!parsed.success) {
    throw new SessionLogError('invalid-id', `"${String(sessionId).slice(0, 80)}" is not a valid session id.`)
  }
  return {
    log: join(sessionsDir, `${sessionId}${LOG_SUFFIX}`),
    lock: join(sessionsDir, `${sessionId}${LOCK_SUFFIX}`),
    outputDir: join(sessionsDir, sessionId),
  }
}
