/**
 * The session log (DESIGN 6): `<sessionsDir>/<id>.jsonl`, one event per line, append-only, plus
 * `<sessionsDir>/<id>/` for full command outputs and `<sessionsDir>/<id>.lock` while a writer has it open.
 *
 * Durability model: `append` hands the line to the OS (it survives the app being killed); `sync` makes
 * everything appended so far survive a power loss, and the engine calls it once per turn and at pauses and
 * ends. A crash can therefore cost at most the line being written, which the reader skips with a warning and
 * the next writer terminates, so no later line is ever glued to it.
 */

export { isSessionLocked } from './log-lock'
export {
  LOCK_SUFFIX,
  LOG_SUFFIX,
  SessionLogError,
  sessionPaths,
  type SessionLogErrorCode,
  type SessionPaths,
} from './log-paths'
export {
  LF,
  parseLine,
  readSession,
  readSessionPreview,
  readSessionTail,
  scanLinesBackward,
  type ParsedLine,
  type SessionRead,
} from './log-reader'
export { openSessionWriter, type OpenSessionWriterOptions, type SessionWriter } from './log-writer'
