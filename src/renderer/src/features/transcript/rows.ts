import type { ThinkingBlock, Usage } from '../../../../shared/events'
import type {
  CompactionState,
  RetryState,
  RewindState,
  RunState,
  SessionState,
  TurnState,
} from '../../../../shared/reducer'
import type { ToolCallState } from '../../../../shared/tool-call'
import { callTitle } from '../../lib/format'
import { rewindRowKey, rewoundToTurn } from '../rewind/rewind-summary'
import { sumUsage } from '../../lib/usage'

/**
 * The transcript as a flat list of rows for the virtualized view: each run's task, then per turn its text and
 * tool calls in the model's block order, then how the run ended. Rows of a turn are cached by the turn object
 * (the reducer replaces only turns that changed), so a new event costs the rows of one turn, not the session.
 * Undos and rewinds sit among them at the moment they happened (between runs: the engine never rewinds while
 * a run works).
 *
 * `rewoundBy` on a turn's rows: a rewind took the conversation back to before that turn (Claude no longer
 * sees it); the rows stay, dimmed.
 */

export type TranscriptRow =
  | { kind: 'task'; key: string; run: RunState; number: number }
  /** A turn with tool calls (it can be rewound to) or one a rewind took back: its number, before its rows. */
  | { kind: 'turn'; key: string; turn: number; firstCallId?: string; rewoundBy?: string }
  | { kind: 'text'; key: string; text: string; rewoundBy?: string }
  /**
   * A thinking block. Before anything else in the turn it is the model's reasoning (a collapsed "Thinking"
   * section); after text or a call it is the model's narration between calls, shown like its text.
   */
  | { kind: 'thinking'; key: string; block: ThinkingBlock; narration: boolean; rewoundBy?: string }
  /** `cause`: the sibling whose failure skipped this call (from the same turn). */
  | { kind: 'call'; key: string; call: ToolCallState; cause?: ToolCallState; rewoundBy?: string }
  /** An undo or rewind, where it happened. */
  | { kind: 'rewind'; key: string; rewind: RewindState }
  /** The conversation was compacted (issue 21): between the turns it happened between. */
  | { kind: 'compaction'; key: string; compaction: CompactionState }
  /** `failedCalls`: calls of the run that failed (a run can finish with some); `usage`: the run's tokens. */
  | { kind: 'run-end'; key: string; run: RunState; failedCalls: number; usage?: Usage }
  /** `wait`: what a live run is waiting on and since when (absent while paused or retrying). */
  | { kind: 'working'; key: string; paused: boolean; retry?: RetryState; wait?: Wait }

/** What the working row waits on: calls running (since the first started) or the model (since the last event). */
export interface Wait {
  label: string
  since: number
}

function waitOf(state: SessionState): Wait | undefined {
  const turn = state.turns.at(-1)
  const running = turn ? Object.values(turn.calls).filter((c) => c.status === 'running') : []
  if (running.length > 0) {
    const since = Math.min(...running.map((c) => c.startedAt ?? c.queuedAt))
    const label =
      running.length === 1 ? `Running ${callTitle(running[0]!)}` : `Running ${running.length} calls`
    return { label, since }
  }
  return state.lastEventAt === undefined
    ? undefined
    : { label: 'Waiting for Claude', since: state.lastEventAt }
}

const turnCache = new WeakMap<TurnState, TranscriptRow[]>()

function turnRows(turn: TurnState): TranscriptRow[] {
  const cached = turnCache.get(turn)
  if (cached) return cached
  const rows: TranscriptRow[] = []
  const rewound = turn.rewoundBy === undefined ? {} : { rewoundBy: turn.rewoundBy }
  // Rewinding to a turn goes back to before its first call, so a turn without calls has nothing to offer.
  const firstCallId = turn.callIds[0]
  if (firstCallId !== undefined || turn.rewoundBy !== undefined)
    rows.push({
      kind: 'turn',
      key: `turn-${turn.turn}`,
      turn: turn.turn,
      ...(firstCallId === undefined ? {} : { firstCallId }),
      ...rewound,
    })
  const heads = rows.length
  for (const block of turn.blocks) {
    if (block.kind === 'thinking') {
      const key = `t${turn.turn}b${block.index}`
      rows.push({ kind: 'thinking', key, block: block.block, narration: rows.length > heads, ...rewound })
    } else if (block.kind === 'text') {
      if (block.text.trim() !== '')
        rows.push({ kind: 'text', key: `t${turn.turn}b${block.index}`, text: block.text, ...rewound })
    } else {
      const call = turn.calls[block.callId]
      if (!call) continue
      const cause = call.causeCallId === undefined ? undefined : turn.calls[call.causeCallId]
      rows.push({ kind: 'call', key: call.callId, call, cause, ...rewound })
    }
  }
  turnCache.set(turn, rows)
  return rows
}

/** Kept per rewind object (replaced by the reducer only when it changes), so the row keeps its identity. */
const rewindCache = new WeakMap<RewindState, TranscriptRow>()

function rewindRow(rewind: RewindState): TranscriptRow {
  let row = rewindCache.get(rewind)
  if (!row) rewindCache.set(rewind, (row = { kind: 'rewind', key: rewindRowKey(rewind.rewindId), rewind }))
  return row
}

const compactionCache = new WeakMap<CompactionState, TranscriptRow>()

function compactionRow(compaction: CompactionState): TranscriptRow {
  let row = compactionCache.get(compaction)
  if (!row) {
    row = { kind: 'compaction', key: `compaction-${compaction.at}-${compaction.turn}`, compaction }
    compactionCache.set(compaction, row)
  }
  return row
}

export function transcriptRows(state: SessionState): TranscriptRow[] {
  // Sized up front: this runs on every replay position, and a list of thousands grown by push is garbage.
  let count = 1 + state.rewinds.length + state.compactions.length
  const byRun = new Map<string | undefined, TurnState[]>()
  for (const turn of state.turns) {
    count += turnRows(turn).length
    const list = byRun.get(turn.runId)
    if (list) list.push(turn)
    else byRun.set(turn.runId, [turn])
  }
  const rows = new Array<TranscriptRow>(count + state.runs.length * 2)
  let n = 0
  // Rewinds (in the order they started) go in before the first row that comes after them in time.
  // Compactions likewise; both are marks between turns.
  let w = 0
  let c = 0
  const rewindsBefore = (at: number): void => {
    for (; w < state.rewinds.length && (state.rewinds[w] as RewindState).startedAt < at; w++)
      rows[n++] = rewindRow(state.rewinds[w] as RewindState)
    for (; c < state.compactions.length && (state.compactions[c] as CompactionState).at < at; c++)
      rows[n++] = compactionRow(state.compactions[c] as CompactionState)
  }
  state.runs.forEach((run, i) => {
    rewindsBefore(run.startedAt)
    rows[n++] = { kind: 'task', key: `run-${run.runId}`, run, number: i + 1 }
    let failedCalls = 0
    const turns = byRun.get(run.runId) ?? []
    for (const turn of turns) {
      rewindsBefore(turn.startedAt)
      for (const row of turnRows(turn)) {
        rows[n++] = row
        if (row.kind === 'call' && row.call.status === 'error') failedCalls++
      }
    }
    byRun.delete(run.runId)
    if (run.status !== 'running' && run.status !== 'paused') {
      rewindsBefore(run.endedAt ?? Number.POSITIVE_INFINITY)
      const usage = run.usage ?? sumUsage(turns.map((t) => t.usage))
      rows[n++] = { kind: 'run-end', key: `end-${run.runId}`, run, failedCalls, ...(usage ? { usage } : {}) }
    }
  })
  // Turns whose run start was lost (a damaged log) still show, after the rest.
  for (const turns of byRun.values())
    for (const turn of turns) for (const row of turnRows(turn)) rows[n++] = row
  rewindsBefore(Number.POSITIVE_INFINITY)
  // Paused after a rewind took the conversation back waits for nobody's review (the session's banner offers to
  // continue).
  if (state.status === 'running' || (state.status === 'paused' && rewoundToTurn(state) === undefined)) {
    const retry = state.turns.at(-1)?.retry
    const wait = state.status === 'running' && !retry ? waitOf(state) : undefined
    rows[n++] = {
      kind: 'working',
      key: 'working',
      paused: state.status === 'paused',
      ...(retry && state.status === 'running' ? { retry } : {}),
      ...(wait ? { wait } : {}),
    }
  }
  rows.length = n
  return rows
}
