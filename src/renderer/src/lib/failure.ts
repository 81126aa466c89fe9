import type { RunState } from '../../../shared/reducer'
import { resultForPeople } from '../../../shared/result-text'
import type { ToolCallState } from '../../../shared/tool-call'

/**
 * Failures in plain words: what a card or a run's end says went wrong, without text meant for the model. The one
 * home of that rule: the transcript's cards and the timeline's tooltips read it from here.
 */

/** A failed call as the user reads it. */
export interface PlainFailure {
  /** What happened, in plain words. */
  what: string
  /** What happens next, or what the user can do. */
  next: string
  /** The words the agent was given (written for the model), kept for the details. */
  forModel: string
  /**
   * Lanes refused the call and the agent, told why, goes on by itself: nothing for the user to fix, so it is
   * not shown as an alarm. False for a call that ran and failed (a test run, a missing file).
   */
  handled: boolean
  /** The status to show instead of "Failed", for a call Lanes refused before running it. */
  label?: string
}

const name = (input: unknown, field: string): string | undefined => {
  if (typeof input !== 'object' || input === null) return undefined
  const value = (input as Record<string, unknown>)[field]
  return typeof value === 'string' ? value : undefined
}

/**
 * The families of refusal the tools write for the model (bash validation in main/tools/bash/lexer.ts and
 * validate*.ts, the read-before-write and conflict checks in snapshots.ts, edit matching in edit-file.ts, argument
 * parsing in args.ts), each with what it means for the user. The model's own text stays in `forModel`.
 */
const REFUSALS: { test: RegExp; what(call: ToolCallState): string; next: string; user?: boolean }[] = [
  {
    test: /sandbox could not start/i,
    what: () => 'Lanes did not run this command: its sandbox could not start on this computer.',
    next: 'Nothing ran. Settings says how to get a working sandbox; the agent was told and will try another way.',
    user: true,
  },
  {
    test: /command lists|`;` is not allowed|pipes \(|background jobs|redirects \(|here-documents|substitution|subshells and groups|shell functions|variable expansion|shell arithmetic|only one simple command/i,
    what: (call) =>
      `Lanes did not run ${quoted(name(call.input, 'command'))}: it runs one plain command at a time, and this combines several or uses shell features.`,
    next: 'Nothing ran. The agent was told and will run the commands one by one.',
  },
  {
    test: /has not been read in this session/i,
    what: (call) =>
      `The agent tried to change ${file(call)} without reading it first, so Lanes stopped it (this keeps your version of the file from being lost).`,
    next: 'Nothing was changed. The agent will read the file and try again.',
  },
  {
    test: /has changed on disk since/i,
    what: (call) =>
      `${capital(file(call))} changed since the agent read it (by you or another program), so Lanes did not overwrite it.`,
    next: 'Nothing was changed. The agent will read the new version and try again.',
  },
  {
    test: /old_string was not found|old_string occurs|old_string is empty|old_string and new_string are identical/i,
    what: (call) => `The agent's edit did not match the text of ${file(call)}, so nothing was changed.`,
    next: 'The agent will look at the file again and retry.',
  },
  {
    test: /too large for the user to review/i,
    what: (call) =>
      `The agent sent ${name(call.input, 'path') ? file(call) : 'a change'} in one piece${sizeIn(call)}, too large for you to review, so Lanes did not run it.`,
    next: 'Nothing was changed. The agent was told to send it in smaller parts.',
  },
  {
    test: /is a binary file|does not look like UTF-8 text|is UTF-16 encoded/i,
    what: (call) =>
      `${file(call)} is not a text file (an image or other binary data), so the agent cannot read it as text.`,
    next: 'Nothing to do: the agent was told its size and type.',
  },
  {
    test: /^Invalid arguments for|arguments are not valid JSON/i,
    what: () => 'The agent’s request came through incomplete or malformed, so Lanes did not run it.',
    next: 'Nothing ran. The agent was told and will send it again.',
  },
  {
    test: /^Unknown tool/i,
    what: (call) => `The agent asked for a tool Lanes does not have (“${call.name}”).`,
    next: 'Nothing ran. The agent was told which tools there are.',
  },
  {
    test: /is not allowed|not allowed here|not allowed before/i,
    what: (call) =>
      `Lanes did not run ${quoted(name(call.input, 'command'))}: the agent may not run this kind of command.`,
    next: 'Nothing ran. The agent was told why and will try another way.',
  },
]

const quoted = (command: string | undefined): string =>
  command === undefined ? 'this command' : `“${command.length > 80 ? command.slice(0, 79) + '…' : command}”`
const file = (call: ToolCallState): string => name(call.input, 'path') ?? 'the file'
const sizeIn = (call: ToolCallState): string => {
  const size = /input is ([\d.]+ [KMG]?B)/.exec(call.output ?? '')?.[1]
  return size ? ` (${size})` : ''
}
const capital = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1)

/** A failed call (status error) in plain words; undefined for other calls. */
export function plainFailure(call: ToolCallState): PlainFailure | undefined {
  if (call.status !== 'error' || call.output === undefined) return undefined
  const forModel = resultForPeople(call.output)
  const ran = call.startedAt !== undefined
  const refusal = REFUSALS.find((r) => r.test.test(forModel))
  if (refusal)
    return {
      what: refusal.what(call),
      next: refusal.next,
      forModel,
      handled: refusal.user !== true,
      ...(ran ? {} : { label: 'Not run' }),
    }
  return {
    what: failureLine(call) ?? 'It failed.',
    next: ran ? 'The agent sees this result and decides what to do next.' : 'The agent was told why.',
    forModel,
    handled: false,
  }
}

/** The first line of a failed or rejected call's reason, for the card's header; undefined for other calls. */
export function failureLine(call: ToolCallState): string | undefined {
  if (call.status !== 'error' && call.status !== 'cancelled') return undefined
  if (call.output === undefined) return undefined
  const lines = resultForPeople(call.output)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
  // A command's output often starts with noise (a stack frame's file name, a progress line): the first line
  // that says what went wrong is the reason; otherwise the first line.
  return (lines.find((line) => REASON.test(line)) ?? lines[0])?.slice(0, 300)
}

const REASON =
  /\b(error|cannot|can't|could not|not found|no such|failed|fails|denied|refused|invalid|missing|not allowed|conflict)\b/i

/**
 * A run's error as the user reads it. The API's request id is for a support ticket (it stays in the session
 * log), not for the person deciding whether to try again.
 */
export function plainRunError(error: string | undefined): string {
  if (!error) return 'an unknown error.'
  const plain = error.replace(/\s*\(request id [^)]*\)/gi, '').trim()
  // A sentence, so what follows it (how long the run took) never reads as part of the message.
  return /[.!?:)”"]$/.test(plain) ? plain : `${plain}.`
}

/**
 * Failures a new attempt can get past: the network, an overloaded or rate-limited model, a conversation that
 * did not fit (Continue compacts it harder), and a refused key or address once Settings are changed (a continued
 * run connects with the settings as they are then).
 */
export function canRetry(run: RunState): boolean {
  return (
    run.status === 'failed' &&
    (run.errorKind === 'model' ||
      run.errorKind === 'network' ||
      run.errorKind === 'context' ||
      run.errorKind === 'auth')
  )
}
