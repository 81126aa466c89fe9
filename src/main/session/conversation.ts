import type {
  ContentBlockParam,
  MessageParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages'
import type { EventOf, SessionEvent } from '../../shared/events'
import { reduceEvents, type SessionState, type TurnState } from '../../shared/reducer'
import type { ToolCallState } from '../../shared/tool-call'
import { withoutRewoundTurns } from './rewind-history'

/**
 * Rebuilds, from a session's events, what the model is sent to continue it (DESIGN 6: a paused session
 * survives an app restart and continues from its log).
 */

/**
 * A call of the last turn that has no result yet: awaiting approval, approved or rejected but not finished,
 * or started when the app died. The loop decides (ask again, run, send the rejection, report the
 * interruption).
 */
export interface PendingCall {
  callId: string
  name: string
  /** As in the tool_use block the model sent. */
  input: unknown
  turn: number
  /** Content block index. */
  index: number
  /** What the log says about it; absent when the tool_use block was never queued (the app died first). */
  state?: ToolCallState
}

export interface Conversation {
  /**
   * The messages in order: each run's task as a user message, each turn's assistant message, and after it a
   * user message with one tool_result per tool_use, in call order. When `pendingCalls` is not empty the list
   * ends with the assistant message that issued them, and that turn's results are left for the loop to send
   * at once.
   */
  messages: MessageParam[]
  pendingCalls: PendingCall[]
  /** Results already logged for the turn with pending calls, in call order. */
  recordedResults: ToolResultBlockParam[]
}

/** The result a call whose outcome never reached the log gets, when a later turn or task followed it. */
const LOST_RESULT =
  'This call has no recorded result: the session was interrupted before it finished. ' +
  'Check its effect before issuing it again.'

export function buildConversation(allEvents: readonly SessionEvent[]): Conversation {
  // Turns a rewind took back are not part of the conversation (issue 14).
  const events = withoutRewoundTurns(allEvents)
  const state = reduceEvents(events)
  const turnsByNumber = new Map<number, TurnState>()
  for (const turn of state.turns) turnsByNumber.set(turn.turn, turn)

  // The order of tasks and turns as they happened; a turn whose turn.started was lost still counts.
  const sequence: ({ kind: 'task' | 'note'; text: string } | { kind: 'turn'; turn: TurnState })[] = []
  const seen = new Set<number>()
  const rewinds = new Map<string, EventOf<'rewind.started'>>()
  // Compactions (issue 21): notes told after a turn's results (server-side), and the results cleared.
  const afterTurn = new Map<number, string[]>()
  const tellAfter = (turn: number, text: string): void => {
    const list = afterTurn.get(turn)
    if (list) list.push(text)
    else afterTurn.set(turn, [text])
  }
  let clearedBefore = 0
  let task = ''
  for (const event of events) {
    if (event.type === 'run.started') {
      task = event.task
      sequence.push({ kind: 'task', text: event.task })
    } else if (event.type === 'context.compacted') {
      if (event.strategy === 'cleared_tool_results') {
        clearedBefore = Math.max(clearedBefore, event.clearedBeforeTurn ?? 0)
      } else if (event.mode === 'server') {
        // The compaction block is in the turn's message and goes back with it; the API drops what it covers.
        const note = serverCompactionNote(event.readFiles)
        if (note) tellAfter(event.turn, note)
      } else {
        // The turns before `keptFromTurn` (all, when it is absent) give way to the summary.
        const from = event.keptFromTurn
        const cut =
          from === undefined
            ? -1
            : sequence.findIndex((item) => item.kind === 'turn' && item.turn.turn >= from)
        sequence.splice(0, cut === -1 ? sequence.length : cut, {
          kind: 'note',
          text: summaryNote(event, task),
        })
      }
    } else if (event.type === 'instructions.loaded') {
      // A folder's own instructions, told after the results of the turn that first reached it.
      if (event.scope === 'nested' && event.turn !== undefined && event.text !== '')
        tellAfter(event.turn, event.text)
    } else if (event.type === 'rewind.started') {
      rewinds.set(event.rewindId, event)
    } else if (event.type === 'rewind.finished') {
      const started = rewinds.get(event.rewindId)
      const note = event.outcome === 'done' && started ? rewindNote(started) : undefined
      if (note) sequence.push({ kind: 'note', text: note })
    } else if (
      event.type === 'turn.started' ||
      event.type === 'assistant.delta' ||
      event.type === 'assistant.message' ||
      event.type === 'tool.queued'
    ) {
      const turn = turnsByNumber.get(event.turn)
      if (turn && !seen.has(turn.turn)) {
        seen.add(turn.turn)
        sequence.push({ kind: 'turn', turn })
      }
    }
  }

  const messages: MessageParam[] = []
  const addUserBlocks = (blocks: ContentBlockParam[]): void => {
    const previous = messages[messages.length - 1]
    // Consecutive user content (results, then the next task) is one message: roles must alternate.
    if (previous?.role === 'user' && Array.isArray(previous.content)) previous.content.push(...blocks)
    else messages.push({ role: 'user', content: blocks })
  }

  let pendingCalls: PendingCall[] = []
  let recordedResults: ToolResultBlockParam[] = []
  // A note after the last turn does not make its calls answered: the loop still sends their results (first).
  const lastExchange = sequence.findLastIndex((item) => item.kind !== 'note')
  sequence.forEach((item, position) => {
    if (item.kind !== 'turn') {
      addUserBlocks([{ type: 'text', text: item.text }])
      return
    }
    const turn = item.turn
    // A refused answer is never sent back (stop-reasons.ts): the conversation goes on as if it had not come.
    if (turn.stopReason === 'refusal') return
    // Copies: the caller may decorate the messages (cache_control) without touching the events they came from.
    const recorded = turn.message?.content as ContentBlockParam[] | undefined
    const content = recorded ? recorded.map((block) => ({ ...block })) : turnContent(turn)
    // Thinking alone (the app died before the answer itself) is not an answer the API takes back.
    if (content.every((block) => block.type === 'thinking' || block.type === 'redacted_thinking')) return
    messages.push({ role: 'assistant', content })

    const results: ToolResultBlockParam[] = []
    const missing: PendingCall[] = []
    for (const block of content) {
      if (block.type !== 'tool_use') continue
      const call = Object.hasOwn(turn.calls, block.id) ? turn.calls[block.id] : undefined
      const result = call && resultOf(call, turn.turn < clearedBefore)
      if (result) {
        results.push(result)
      } else {
        const index = call?.index ?? content.indexOf(block)
        missing.push({
          callId: block.id,
          name: block.name,
          input: block.input,
          turn: turn.turn,
          index,
          state: call,
        })
        results.push({ type: 'tool_result', tool_use_id: block.id, content: LOST_RESULT, is_error: true })
      }
    }
    const isLast = position === lastExchange
    if (isLast && missing.length > 0) {
      pendingCalls = missing
      recordedResults = results.filter((r) => !missing.some((m) => m.callId === r.tool_use_id))
      return
    }
    if (results.length > 0) addUserBlocks(results)
    const notes = afterTurn.get(turn.turn)
    if (notes && results.length > 0) addUserBlocks(notes.map((text) => ({ type: 'text' as const, text })))
  })
  return { messages, pendingCalls, recordedResults }
}

/**
 * What the model is told of an undo or rewind it did not see (issue 14), so it does not change a file from a
 * stale picture: the files put back (a conversation rewind went back with them, so those match what it
 * remembers) and the files a rewind left as they were. Undefined: nothing to say.
 */
export function rewindNote(rewind: EventOf<'rewind.started'>): string | undefined {
  const parts: string[] = []
  if (rewind.turn === undefined && rewind.changes.length > 0) {
    const files = rewind.changes.map(
      (c) => `${c.relPath} (${c.to === null ? 'removed' : `as before call ${rewind.callId}`})`,
    )
    parts.push(`The user put these files back to earlier versions: ${files.join(', ')}.`)
  }
  if (rewind.turn !== undefined && rewind.skipped.length > 0) {
    const files = rewind.skipped.map((s) => s.relPath)
    parts.push(`These files were not put back and keep the changes made since: ${files.join(', ')}.`)
  }
  if (parts.length === 0) return undefined
  return `${parts.join(' ')} Read them again before changing them.`
}

/** What a result cleared to save context says instead (the model can run the call again). */
export const CLEARED_RESULT =
  '[This result was cleared to keep the conversation within the context window. Run the tool again if you need it.]'

/**
 * The user message that replaces the turns a client-side compaction summarized: the summary, the task it serves,
 * and the files the model had read (it remembers them only through the summary, so it reads them again).
 */
export function summaryNote(event: EventOf<'context.compacted'>, task: string): string {
  const parts = [
    'This conversation was compacted to stay within the context window. A summary of the earlier part:',
    `<summary>\n${event.summary ?? ''}\n</summary>`,
  ]
  if (task.trim() !== '') parts.push(`The user's task: ${task}`)
  const files = readFilesNote(event.readFiles)
  if (files) parts.push(files)
  parts.push('Go on from where the summary leaves off.')
  return parts.join('\n\n')
}

/** Told after the results of a turn in which the API compacted: the files to read again. */
export function serverCompactionNote(readFiles: readonly string[] | undefined): string | undefined {
  const files = readFilesNote(readFiles)
  return files ? `The conversation was compacted. ${files}` : undefined
}

function readFilesNote(readFiles: readonly string[] | undefined): string | undefined {
  const files = readFiles ?? []
  if (files.length === 0) return undefined
  return `Files you had read or changed before (read them again before relying on their contents or changing them): ${files.join(', ')}.`
}

function resultOf(call: ToolCallState, cleared = false): ToolResultBlockParam | undefined {
  if (call.finishedAt === undefined || call.output === undefined) return undefined
  const result: ToolResultBlockParam = { type: 'tool_result', tool_use_id: call.callId }
  // The API refuses empty text; an empty output is sent as a result without content.
  if (cleared) result.content = CLEARED_RESULT
  else if (call.output !== '') result.content = call.output
  if (call.isError === true || call.status !== 'ok') result.is_error = true
  return result
}

/**
 * The assistant message of a turn whose assistant.message never reached the log (the stream failed, or the
 * app died while the streaming scheduler already ran its calls): its thinking blocks as they closed, its text
 * from the deltas and its tool calls as queued, in block order, so the model sees what it did and the API
 * finds the thinking blocks it requires in front of the calls.
 */
export function turnContent(turn: TurnState): ContentBlockParam[] {
  const content: ContentBlockParam[] = []
  for (const block of turn.blocks) {
    if (block.kind === 'thinking') {
      content.push({ ...block.block })
      continue
    }
    if (block.kind === 'text') {
      if (block.text.trim() !== '') content.push({ type: 'text', text: block.text })
      continue
    }
    const call = turn.calls[block.callId]
    if (!call) continue
    const input =
      typeof call.input === 'object' && call.input !== null && !Array.isArray(call.input) ? call.input : {}
    content.push({ type: 'tool_use', id: call.callId, name: call.name, input })
  }
  return content
}

export type SnapshotRecord = Pick<EventOf<'file.snapshot'>, 'path' | 'mtimeMs' | 'hash'>

/**
 * The latest file.snapshot per path, to restore the conflict checks of a continued session; the reducer keeps
 * them (a file a rewind put back has none: the model must read it again before changing it).
 */
export function snapshotsFrom(events: readonly SessionEvent[]): SnapshotRecord[] {
  return snapshotsOf(reduceEvents(events))
}

export function snapshotsOf(state: SessionState): SnapshotRecord[] {
  return Object.entries(state.snapshots).map(([path, s]) => ({ path, mtimeMs: s.mtimeMs, hash: s.hash }))
}
