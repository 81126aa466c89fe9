import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { HunkDecision, SessionEvent } from '../../shared/events'
import { getCall, reduceEvents } from '../../shared/reducer'
import { readSession, sessionPaths } from '../session/log'
import type { Decision } from './approval-gate'
import { AgentSession } from './agent-session'
import type { Scenario } from './scenario'
import { hunkDecisionError } from '../tools/reviewed-change'
import { byType, cleanUpScriptedRuns, recordedRequests, scriptedRun } from './test-fixtures/scripted-run'

// Per-hunk review under attack, through the whole pipeline: the real SDK against the scripted model over HTTP
// (strict, so every request must be one the real API accepts), the real tools on a real folder, the real log.

afterEach(cleanUpScriptedRuns)

const lines = (n: number, tag = 'line') => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`)
const original = lines(30).join('\n') + '\n'
/** Lines 2, 15 and 29 changed: three hunks. */
const changed = original
  .replace('line 2\n', 'CHANGED 2\n')
  .replace('line 15\n', 'CHANGED 15\n')
  .replace('line 29\n', 'CHANGED 29\n')
const rejectAll = (n: number): HunkDecision[] =>
  Array.from({ length: n }, (_, index) => ({ index, decision: 'rejected' as const }))

interface Reviewed {
  workspace: string
  events: SessionEvent[]
  /** The tool_result blocks of the request that followed the review, by tool_use id. */
  results: Map<string, { content: unknown; is_error?: boolean }>
  requests: { messages: { role: string; content: unknown }[] }[]
  callIds: string[]
}

/**
 * Runs `scenario` until its calls ask for review, lets `between` touch the disk, then continues with the
 * decisions `decide` gives for the queued calls (in call order).
 */
async function review(
  scenario: Scenario,
  files: Record<string, string>,
  decide: (callIds: string[]) => (Decision & { callId: string })[],
  between?: (workspace: string) => Promise<void>,
  prepare?: (workspace: string) => Promise<void>,
): Promise<Reviewed> {
  const run = await scriptedRun(scenario, {
    files,
    approvals: 'pause',
    prefix: 'lanes-hunk-attack-',
    strict: true,
  })
  await prepare?.(run.workspace)
  const first = await AgentSession.create(run.options)
  expect(await first.run('change the files')).toMatchObject({ status: 'paused' })
  await first.close()
  const log = async () =>
    (await readSession(sessionPaths(run.options.sessionsDir, first.sessionId).log)).events
  // The changes of the paused turn, in call order (a later call's approval request may not be logged yet when
  // the run pauses at the first one: its decision is given all the same, and used when it asks).
  const asked = byType(await log(), 'tool.queued')
    .filter((e) => e.name === 'write_file' || e.name === 'edit_file')
    .map((e) => e.callId)
  await between?.(run.workspace)
  // Calls after the reviewed turn are approved as they come (a headless run's --approve all).
  const { session } = await AgentSession.open(first.sessionId, { ...run.options, approvals: 'all' })
  expect(await session.continue(decide(asked))).toEqual({ status: 'finished' })
  await session.close()
  const requests = await recordedRequests(run.recordFile)
  const results = new Map<string, { content: unknown; is_error?: boolean }>()
  for (const request of requests)
    for (const m of request.messages)
      if (Array.isArray(m.content))
        for (const b of m.content as { type: string; tool_use_id?: string }[])
          if (b.type === 'tool_result') results.set(b.tool_use_id as string, b as never)
  return { workspace: run.workspace, events: await log(), results, requests, callIds: asked }
}

const textOf = (r: Reviewed, callId: string): string => JSON.stringify(r.results.get(callId)?.content)
const readThenWrite = (path: string, content: string, more: Scenario['turns'] = []): Scenario => ({
  turns: [
    { blocks: [{ tool: 'read_file', input: { path } }] },
    { blocks: [{ tool: 'write_file', input: { path, content } }] },
    ...more,
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
})

describe('per-hunk review: what lands on disk', () => {
  it('refuses to write when the file changed between the review and the write, keeping the change', async () => {
    const r = await review(
      readThenWrite('f.txt', changed),
      { 'f.txt': original },
      ([id]) => [{ callId: id as string, decision: 'approved', hunks: [{ index: 1, decision: 'rejected' }] }],
      async (ws) => {
        await writeFile(join(ws, 'f.txt'), original.replace('line 20\n', 'the user typed this\n'))
      },
    )
    expect(await readFile(join(r.workspace, 'f.txt'), 'utf8')).toContain('the user typed this')
    expect(await readFile(join(r.workspace, 'f.txt'), 'utf8')).not.toContain('CHANGED')
    const id = r.callIds[0] as string
    expect(r.results.get(id)?.is_error).toBe(true)
    expect(textOf(r, id)).toMatch(/Read (it|the file) again/)
  })

  it('refuses when a new file reviewed by hunk was created by someone else before the write', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'new.txt', content: 'a\nb\nc\n' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const r = await review(
      scenario,
      {},
      ([id]) => [
        {
          callId: id as string,
          decision: 'approved',
          hunks: [{ index: 0, decision: 'edited', text: 'a\nB\nc' }],
        },
      ],
      async (ws) => {
        await writeFile(join(ws, 'new.txt'), 'theirs\n')
      },
    )
    expect(await readFile(join(r.workspace, 'new.txt'), 'utf8')).toBe('theirs\n')
    expect(r.results.get(r.callIds[0] as string)?.is_error).toBe(true)
  })

  it('creates a new file with the user’s edit of its one hunk, and creates nothing when it is left out', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'write_file', input: { path: 'kept.txt', content: 'a\nb\nc\n' } },
            { tool: 'write_file', input: { path: 'dropped.txt', content: 'x\n' } },
          ],
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const r = await review(scenario, {}, ([kept, dropped]) => [
      {
        callId: kept as string,
        decision: 'approved',
        hunks: [{ index: 0, decision: 'edited', text: 'a\nB by hand\nc' }],
      },
      { callId: dropped as string, decision: 'approved', hunks: rejectAll(1) },
    ])
    expect(await readFile(join(r.workspace, 'kept.txt'), 'utf8')).toBe('a\nB by hand\nc\n')
    await expect(stat(join(r.workspace, 'dropped.txt'))).rejects.toThrow(/ENOENT/)
    expect(textOf(r, r.callIds[0] as string)).toContain('     2|B by hand')
  })

  it('treats every hunk left out as a rejection: nothing written, later calls of the turn still run', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }] },
        {
          blocks: [
            { tool: 'write_file', input: { path: 'f.txt', content: changed } },
            { tool: 'write_file', input: { path: 'g.txt', content: 'after\n' } },
          ],
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const r = await review(scenario, { 'f.txt': original }, ([f, g]) => [
      {
        callId: f as string,
        decision: 'approved',
        note: 'not today',
        hunks: [...rejectAll(3).slice(0, 2), { index: 2, decision: 'rejected', note: 'keep 29' }],
      },
      { callId: g as string, decision: 'approved' },
    ])
    const [f, g] = r.callIds as [string, string]
    expect(await readFile(join(r.workspace, 'f.txt'), 'utf8')).toBe(original)
    expect(await readFile(join(r.workspace, 'g.txt'), 'utf8')).toBe('after\n')
    expect(textOf(r, f)).toContain('every hunk of the change to f.txt was left out')
    expect(textOf(r, f)).toContain('not today; hunk 3: keep 29')
    const state = reduceEvents(r.events)
    expect(getCall(state, f)?.status).toBe('rejected')
    expect(getCall(state, g)?.status).toBe('ok')
  })

  it('applies hunks of an edit_file with replace_all on a CRLF file without a final newline, byte for byte', async () => {
    const crlf = [
      'let x = 1',
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
      'g',
      'let x = 2',
      'h',
      'i',
      'j',
      'k',
      'l',
      'm',
      'n',
      'let x = 3',
    ].join('\r\n')
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'w.txt' } }] },
        {
          blocks: [
            {
              tool: 'edit_file',
              input: { path: 'w.txt', old_string: 'let x', new_string: 'const y', replace_all: true },
            },
          ],
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const r = await review(scenario, { 'w.txt': crlf }, ([id]) => [
      {
        callId: id as string,
        decision: 'approved',
        hunks: [
          { index: 1, decision: 'rejected', note: 'x stays there' },
          { index: 2, decision: 'edited', text: 'l\nm\nn\nconst z = 3' },
        ],
      },
    ])
    const expected = crlf.replace('let x = 1', 'const y = 1').replace('let x = 3', 'const z = 3')
    expect(await readFile(join(r.workspace, 'w.txt'), 'utf8')).toBe(expected)
    const told = textOf(r, r.callIds[0] as string)
    expect(told).toContain('2 of 3 hunks were applied')
    expect(told).toContain('x stays there')
    expect(told).toContain('    17|const z = 3')
  })

  it('keeps a UTF-8 BOM and CRLF endings when a write_file given LF text is applied in part', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf])
    const crlfOriginal = original.replace(/\n/g, '\r\n')
    const r = await review(
      readThenWrite('bom.txt', changed),
      {},
      ([id]) => [{ callId: id as string, decision: 'approved', hunks: [{ index: 2, decision: 'rejected' }] }],
      undefined,
      (ws) => writeFile(join(ws, 'bom.txt'), Buffer.concat([bom, Buffer.from(crlfOriginal)])),
    )
    const expected = crlfOriginal
      .replace('line 2\r\n', 'CHANGED 2\r\n')
      .replace('line 15\r\n', 'CHANGED 15\r\n')
    expect(
      (await readFile(join(r.workspace, 'bom.txt'))).equals(Buffer.concat([bom, Buffer.from(expected)])),
    ).toBe(true)
    expect(textOf(r, r.callIds[0] as string)).toContain('2 of 3 hunks were applied')
  })

  it('shows a change to a file holding bytes that are not UTF-8 as binary: no parts to pick over those bytes, and the whole change lands exactly', async () => {
    const bytes = Buffer.concat([Buffer.from('a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n'), Buffer.from([0xe9, 0x0a])])
    const content = 'A\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n\ufffd\n'
    const r = await review(
      readThenWrite('latin1.txt', content),
      {},
      ([id]) => [{ callId: id as string, decision: 'approved' }],
      undefined,
      (ws) => writeFile(join(ws, 'latin1.txt'), bytes),
    )
    const requested = byType(r.events, 'approval.requested')[0]?.preview
    expect(requested).toMatchObject({ kind: 'write', show: 'binary', hunks: [] })
    // With no hunks in the review, a per-hunk decision is refused when given, before anything runs.
    expect(hunkDecisionError(requested!, [{ index: 0, decision: 'rejected' }])).toContain(
      'approve or reject it whole',
    )
    expect(await readFile(join(r.workspace, 'latin1.txt'), 'utf8')).toBe(content)
  })
})

describe('per-hunk review: what the model is told', () => {
  it('gets the regions as they are, so its next edit of the file succeeds without reading it again', async () => {
    const r = await review(
      readThenWrite('f.txt', changed, [
        // Built on what the review told it: line 15 kept its old text, line 2 changed.
        {
          blocks: [
            {
              tool: 'edit_file',
              input: { path: 'f.txt', old_string: 'CHANGED 2\nline 3', new_string: 'CHANGED 2\nthree' },
            },
          ],
        },
        {
          blocks: [
            { tool: 'edit_file', input: { path: 'f.txt', old_string: 'line 15', new_string: 'fifteen' } },
          ],
        },
      ]),
      { 'f.txt': original },
      ([id]) => [
        {
          callId: id as string,
          decision: 'approved',
          hunks: [{ index: 1, decision: 'rejected', note: 'not 15' }],
        },
      ],
    )
    const id = r.callIds[0] as string
    const told = textOf(r, id)
    expect(told).toContain('2 of 3 hunks were applied')
    expect(told).toContain('Hunk 2: rejected, not applied; the user wrote: not 15')
    expect(told).toContain('    15|line 15')
    expect(told).toContain('     2|CHANGED 2')
    const editIds = byType(r.events, 'tool.queued')
      .filter((e) => e.name === 'edit_file')
      .map((e) => e.callId)
    expect(editIds).toHaveLength(2)
    const edits = byType(r.events, 'tool.finished').filter((e) => editIds.includes(e.callId))
    expect(edits.map((e) => e.isError)).toEqual([false, false])
    const expected = changed.replace('CHANGED 15', 'fifteen').replace('line 3\n', 'three\n')
    expect(await readFile(join(r.workspace, 'f.txt'), 'utf8')).toBe(expected)
  })
})

describe('notes given with an approval', () => {
  it('reach the model with the result, for a whole call and for one reviewed by hunk', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'f.txt' } }] },
        {
          blocks: [
            { tool: 'write_file', input: { path: 'f.txt', content: changed } },
            { tool: 'write_file', input: { path: 'g.txt', content: 'g\n' } },
          ],
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const r = await review(scenario, { 'f.txt': original }, ([f, g]) => [
      {
        callId: f as string,
        decision: 'approved',
        note: 'fine, but use tabs',
        hunks: [{ index: 0, decision: 'rejected' }],
      },
      { callId: g as string, decision: 'approved', note: 'name it better next time' },
    ])
    const [f, g] = r.callIds as [string, string]
    expect(textOf(r, f)).toContain('2 of 3 hunks were applied')
    expect(textOf(r, f)).toContain('The user approved this call with a note: fine, but use tabs')
    expect(textOf(r, g)).toContain('Created g.txt')
    expect(textOf(r, g)).toContain('The user approved this call with a note: name it better next time')
  })
})

describe('a change of 500 hunks', () => {
  it('is reviewed by hunk, written exactly, and told to the model in a bounded answer', async () => {
    const big = lines(10_000, 'row')
    const changedRows = big.map((l, i) => (i % 20 === 10 ? `${l} changed` : l))
    const r = await review(
      readThenWrite('big.txt', changedRows.join('\n') + '\n'),
      { 'big.txt': big.join('\n') + '\n' },
      ([id]) => [
        {
          callId: id as string,
          decision: 'approved',
          // Every other hunk left out; one with a note.
          hunks: Array.from({ length: 250 }, (_, k) => ({
            index: 2 * k + 1,
            decision: 'rejected' as const,
            ...(k === 100 ? { note: 'keep row 4031' } : {}),
          })),
        },
      ],
    )
    const requested = byType(r.events, 'approval.requested')[0]?.preview
    expect(requested?.kind === 'write' && requested.hunks.length).toBe(500)
    const expected = big.map((l, i) => (i % 20 === 10 && ((i - 10) / 20) % 2 === 0 ? `${l} changed` : l))
    expect(await readFile(join(r.workspace, 'big.txt'), 'utf8')).toBe(expected.join('\n') + '\n')
    const told = textOf(r, r.callIds[0] as string)
    expect(told).toContain('250 of 500 hunks were applied')
    expect(told).toContain('Hunk 202: rejected, not applied; the user wrote: keep row 4031')
    expect(told.length).toBeLessThan(40_000)
  })
})

describe('per-hunk decisions that do not fit the change', () => {
  it('are refused when given, and the call keeps waiting for a decision that fits', async () => {
    const run = await scriptedRun(readThenWrite('f.txt', changed), {
      files: { 'f.txt': original },
      approvals: 'interactive',
      prefix: 'lanes-hunk-bad-',
    })
    const session = await AgentSession.create(run.options)
    const done = session.run('change f.txt')
    await expect.poll(() => byType(run.events, 'approval.requested').length).toBe(1)
    const callId = byType(run.events, 'approval.requested')[0]?.callId as string
    const refused = async (hunks: HunkDecision[]) =>
      (await session.decide(callId, { decision: 'approved', hunks })) as { ok: boolean; error?: string }
    expect(await refused([{ index: 3, decision: 'rejected' }])).toEqual({
      ok: false,
      error: 'There is no hunk 4: the change to f.txt has 3.',
    })
    expect(
      await refused([
        { index: 1, decision: 'rejected' },
        { index: 1, decision: 'accepted' },
      ]),
    ).toMatchObject({ ok: false, error: 'Hunk 2 is decided twice.' })
    expect(await refused([{ index: 0, decision: 'edited' }])).toMatchObject({ ok: false })
    expect(byType(run.events, 'approval.decided')).toHaveLength(0)
    expect(await refused([{ index: 0, decision: 'rejected' }])).toEqual({ ok: true })
    expect(await done).toEqual({ status: 'finished' })
    await session.close()
    expect(await readFile(join(run.workspace, 'f.txt'), 'utf8')).toBe(
      changed.replace('CHANGED 2\n', 'line 2\n'),
    )
  })
})

describe('undo of a change applied in part', () => {
  it('puts the file back as it was before the reviewed write', async () => {
    const run = await scriptedRun(readThenWrite('f.txt', changed), {
      files: { 'f.txt': original },
      approvals: 'interactive',
      prefix: 'lanes-hunk-undo-',
    })
    const session = await AgentSession.create(run.options)
    const done = session.run('change f.txt')
    await expect.poll(() => byType(run.events, 'approval.requested').length).toBe(1)
    const callId = byType(run.events, 'approval.requested')[0]?.callId as string
    await session.decide(callId, { decision: 'approved', hunks: [{ index: 1, decision: 'rejected' }] })
    expect(await done).toEqual({ status: 'finished' })
    expect(await readFile(join(run.workspace, 'f.txt'), 'utf8')).toBe(
      changed.replace('CHANGED 15\n', 'line 15\n'),
    )
    expect(await session.rewind({ mode: 'undo', callId })).toMatchObject({ ok: true })
    expect(await readFile(join(run.workspace, 'f.txt'), 'utf8')).toBe(original)
    await session.close()
  })
})
