import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { getCall, reduceEvents } from '../../shared/reducer'
import { readSession, sessionPaths } from '../session/log'
import { AgentSession } from './agent-session'
import type { Scenario } from './scenario'
import { cleanUpScriptedRuns, recordedRequests, scriptedRun } from './test-fixtures/scripted-run'

// Per-hunk review and rewind through the whole pipeline: the real SDK against the scripted model over HTTP,
// the real tools on a real folder, the real log.

afterEach(cleanUpScriptedRuns)

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`)
const original = lines(30).join('\n') + '\n'
const changedLines = lines(30)
changedLines[1] = 'CHANGED 2'
changedLines[14] = 'CHANGED 15'
changedLines[28] = 'CHANGED 29'
const changed = changedLines.join('\n') + '\n'

const scenario: Scenario = {
  turns: [
    { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }] },
    { blocks: [{ tool: 'write_file', input: { path: 'f.txt', content: changed } }] },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
    { blocks: [{ text: 'Asked again.' }], stop: 'end_turn' },
  ],
}

async function setup() {
  const { workspace, options, recordFile } = await scriptedRun(scenario, {
    files: { 'f.txt': original },
    approvals: 'pause',
    prefix: 'lanes-hunks-',
  })
  const requests = () => recordedRequests(recordFile)
  const log = async (id: string): Promise<SessionEvent[]> =>
    (await readSession(sessionPaths(options.sessionsDir, id).log)).events
  return { workspace, options, requests, log }
}

/** Runs until the write asks for review; returns the session id and the write's call id. */
async function pausedAtWrite(s: Awaited<ReturnType<typeof setup>>) {
  const first = await AgentSession.create(s.options)
  expect(await first.run('change f.txt')).toMatchObject({ status: 'paused' })
  await first.close()
  const events = await s.log(first.sessionId)
  const write = events.find((e) => e.type === 'tool.queued' && e.name === 'write_file')
  if (write?.type !== 'tool.queued') throw new Error('no write queued')
  return { sessionId: first.sessionId, callId: write.callId }
}

describe('per-hunk review', () => {
  it('writes exactly the accepted and edited hunks, tells the model so, and logs each decision', async () => {
    const s = await setup()
    const { sessionId, callId } = await pausedAtWrite(s)
    const { session } = await AgentSession.open(sessionId, s.options)
    const outcome = await session.continue([
      {
        callId,
        decision: 'approved',
        hunks: [
          { index: 1, decision: 'rejected', note: 'line 15 stays' },
          { index: 2, decision: 'edited', text: 'line 26\nline 27\nline 28\nedited 29\nline 30' },
        ],
      },
    ])
    expect(outcome).toEqual({ status: 'finished' })
    await session.close()

    const expected = lines(30)
    expected[1] = 'CHANGED 2'
    expected[28] = 'edited 29'
    expect(await readFile(join(s.workspace, 'f.txt'), 'utf8')).toBe(expected.join('\n') + '\n')

    // The model's next request carries the outcome of each hunk and the resulting lines.
    const sent = JSON.stringify((await s.requests()).at(-1)?.messages.at(-1))
    expect(sent).toContain('2 of 3 hunks were applied')
    expect(sent).toContain('Hunk 2: rejected, not applied; the user wrote: line 15 stays')
    expect(sent).toContain('applied as edited by the user')
    expect(sent).toContain('    29|edited 29')

    const state = reduceEvents(await s.log(sessionId))
    expect(getCall(state, callId)?.approval?.hunks?.map((h) => h.decision)).toEqual(['rejected', 'edited'])
  })

  it('leaves the file as it was when every hunk is rejected, and says so', async () => {
    const s = await setup()
    const { sessionId, callId } = await pausedAtWrite(s)
    const { session } = await AgentSession.open(sessionId, s.options)
    const hunks = [0, 1, 2].map((index) => ({ index, decision: 'rejected' as const }))
    await session.continue([{ callId, decision: 'approved', hunks }])
    await session.close()
    expect(await readFile(join(s.workspace, 'f.txt'), 'utf8')).toBe(original)
    const finished = (await s.log(sessionId)).find((e) => e.type === 'tool.finished' && e.callId === callId)
    expect(finished).toMatchObject({
      isError: true,
      output: expect.stringContaining('every hunk of the change to f.txt was left out'),
    })
  })
})

describe('undo and rewind on a session', () => {
  it('undoes a write, then rewinds the conversation so the next continue asks the model again', async () => {
    const s = await setup()
    const { sessionId, callId } = await pausedAtWrite(s)
    const opened = await AgentSession.open(sessionId, { ...s.options, approvals: 'all' })
    expect(await opened.session.continue()).toEqual({ status: 'finished' })
    expect(await readFile(join(s.workspace, 'f.txt'), 'utf8')).toBe(changed)

    const undone = await opened.session.rewind({ mode: 'undo', callId })
    expect(undone.ok).toBe(true)
    expect(await readFile(join(s.workspace, 'f.txt'), 'utf8')).toBe(original)
    expect(getCall(opened.session.current, callId)?.rewoundBy).toBeDefined()

    const back = await opened.session.rewind({ mode: 'rewind', callId, conversation: true })
    // The files are already as they were; the conversation still goes back.
    expect(back).toMatchObject({ ok: true, changes: [] })
    expect(opened.session.current.status).toBe('paused')
    expect(await opened.session.continue()).toEqual({ status: 'finished' })
    await opened.session.close()

    // The last request ends where the write's turn began: after the read's result, without the write.
    const last = (await s.requests()).at(-1)
    expect(JSON.stringify(last?.messages)).not.toContain('CHANGED 15')
    expect(last?.messages.at(-1)?.role).toBe('user')
  })
})

describe('what the model is told after an undo', () => {
  const afterUndo: Scenario = {
    turns: [
      ...scenario.turns.slice(0, 3),
      // The next task: the model writes f.txt from its stale picture, without reading it again.
      { blocks: [{ tool: 'write_file', input: { path: 'f.txt', content: 'stale\n' } }] },
      { blocks: [{ text: 'Read it first, then.' }], stop: 'end_turn' },
    ],
  }

  async function undoneSession() {
    const run = await scriptedRun(afterUndo, {
      files: { 'f.txt': original },
      approvals: 'all',
      prefix: 'lanes-undo-note-',
    })
    const session = await AgentSession.create(run.options)
    expect(await session.run('change f.txt')).toEqual({ status: 'finished' })
    const events = (await readSession(sessionPaths(run.options.sessionsDir, session.sessionId).log)).events
    const write = events.find((e) => e.type === 'tool.queued' && e.name === 'write_file')
    if (write?.type !== 'tool.queued') throw new Error('no write queued')
    expect(await session.rewind({ mode: 'undo', callId: write.callId })).toMatchObject({ ok: true })
    const note =
      `The user put these files back to earlier versions: f.txt (as before call ${write.callId}). ` +
      'Read them again before changing them.'
    return { run, session, note }
  }

  /** The next request carries the note once, just before the task; the stale write is refused. */
  async function expectToldOnce(run: Awaited<ReturnType<typeof scriptedRun>>, note: string) {
    const requests = await recordedRequests(run.recordFile)
    const next = requests.at(-2)
    const count = (messages: unknown) => JSON.stringify(messages).split(JSON.stringify(note)).length - 1
    expect(count(next?.messages)).toBe(1)
    // (toMatchObject: the loop marks the last block for the prompt cache.)
    expect(next?.messages.at(-1)).toMatchObject({
      role: 'user',
      content: [
        { type: 'text', text: note },
        { type: 'text', text: 'now tidy it' },
      ],
    })
    // Sent once: the request after the refused write still holds it once, where it was.
    expect(count(requests.at(-1)?.messages)).toBe(1)
    expect(await readFile(join(run.workspace, 'f.txt'), 'utf8')).toBe(original)
    const refused = JSON.stringify(requests.at(-1)?.messages.at(-1))
    expect(refused).toContain('has not been read in this session')
  }

  it('tells the model which files went back, once, and refuses a change made without reading them', async () => {
    const { run, session, note } = await undoneSession()
    expect(await session.run('now tidy it')).toEqual({ status: 'finished' })
    await session.close()
    await expectToldOnce(run, note)
  })

  it('tells it the same after a restart, rebuilt from the log', async () => {
    const { run, session, note } = await undoneSession()
    await session.close()
    const reopened = await AgentSession.open(session.sessionId, run.options)
    expect(await reopened.session.run('now tidy it')).toEqual({ status: 'finished' })
    await reopened.session.close()
    await expectToldOnce(run, note)
  })
})

describe('an undo while a run waits for a review', () => {
  it('sends the waiting call its result first, then the note, in one user message', async () => {
    const run = await scriptedRun(
      {
        turns: [
          { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'A\n' } }] },
          { blocks: [{ tool: 'write_file', input: { path: 'b.txt', content: 'B\n' } }] },
          { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
        ],
      },
      { approvals: 'pause', prefix: 'lanes-undo-paused-', strict: true },
    )
    const queued = async (id: string, path: string): Promise<string> => {
      const events = (await readSession(sessionPaths(run.options.sessionsDir, id).log)).events
      const call = events.find(
        (e) => e.type === 'tool.queued' && (e.input as { path?: string }).path === path,
      )
      if (call?.type !== 'tool.queued') throw new Error(`no write of ${path} queued`)
      return call.callId
    }
    const first = await AgentSession.create(run.options)
    expect(await first.run('write both')).toMatchObject({ status: 'paused' })
    const writeA = await queued(first.sessionId, 'a.txt')
    await first.close()
    const second = (await AgentSession.open(first.sessionId, run.options)).session
    expect(await second.continue([{ callId: writeA, decision: 'approved' }])).toMatchObject({
      status: 'paused',
    })
    const writeB = await queued(first.sessionId, 'b.txt')
    await second.close()

    const third = (await AgentSession.open(first.sessionId, run.options)).session
    expect(await third.rewind({ mode: 'undo', callId: writeA })).toMatchObject({ ok: true })
    expect(await third.continue([{ callId: writeB, decision: 'approved' }])).toEqual({ status: 'finished' })
    await third.close()

    const last = (await recordedRequests(run.recordFile)).at(-1)
    const content = last?.messages.at(-1)?.content as { type: string; text?: string }[]
    expect(content.map((b) => b.type)).toEqual(['tool_result', 'text'])
    expect(content[1]?.text).toContain('a.txt (removed)')
    expect(await readFile(join(run.workspace, 'b.txt'), 'utf8')).toBe('B\n')
  })
})
