import { afterEach, describe, expect, it } from 'vitest'
import { AgentSession } from './agent-session'
import type { Scenario } from './scenario'
import { byType, cleanUpScriptedRuns, recordedRequests, scriptedRun } from './test-fixtures/scripted-run'

afterEach(cleanUpScriptedRuns)

type Request = { messages: { role: string; content: unknown }[] }

/** The tool_result the model was sent for `callId`, from the scripted model's record. */
async function sentFor(recordFile: string, callId: string): Promise<{ content: string; is_error?: boolean }> {
  for (const request of await recordedRequests<Request>(recordFile))
    for (const message of request.messages)
      if (Array.isArray(message.content))
        for (const block of message.content as { type: string; tool_use_id?: string }[])
          if (block.type === 'tool_result' && block.tool_use_id === callId)
            return block as unknown as { content: string; is_error?: boolean }
  throw new Error(`no tool_result for ${callId}`)
}

describe('a note typed with an approval (DESIGN 5)', () => {
  it('reaches the model with the result of every kind of call, given live in the review', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'read_file', input: { path: 'a.txt' } }] },
        {
          blocks: [
            { tool: 'edit_file', input: { path: 'a.txt', old_string: 'one', new_string: 'two' } },
            { tool: 'write_file', input: { path: 'b.txt', content: 'b\n' } },
            { tool: 'bash', input: { command: 'touch c.txt' } },
          ],
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, {
      files: { 'a.txt': 'one\n' },
      approvals: 'interactive',
      strict: true,
      prefix: 'lanes-notes-',
    })
    const session = await AgentSession.create(run.options)
    const done = session.run('change the files')
    await expect.poll(() => byType(run.events, 'approval.requested').length, { timeout: 20_000 }).toBe(3)
    const ids = byType(run.events, 'approval.requested').map((e) => e.callId)
    const notes = ['keep it short', 'name it better next time', 'fine, once']
    for (const [i, callId] of ids.entries())
      expect(await session.decide(callId, { decision: 'approved', note: `  ${notes[i]}  ` })).toEqual({
        ok: true,
      })
    expect(await done).toEqual({ status: 'finished' })
    await session.close()
    for (const [i, callId] of ids.entries()) {
      const sent = await sentFor(run.recordFile, callId)
      expect(sent.content, callId).toContain(`The user approved this call with a note: ${notes[i]}`)
    }
    expect(byType(run.events, 'approval.decided').map((e) => e.note)).toEqual(notes)
  }, 60_000)

  it('reaches the model when the approved call is then skipped after an earlier call failed', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'bash', input: { command: 'mkdir here' } },
            { tool: 'write_file', input: { path: 'b.txt', content: 'b\n' } },
          ],
        },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, {
      files: { 'here/x': '' },
      approvals: 'interactive',
      strict: true,
      prefix: 'lanes-notes-',
    })
    const session = await AgentSession.create(run.options)
    const done = session.run('write b')
    await expect.poll(() => byType(run.events, 'approval.requested').length, { timeout: 20_000 }).toBe(2)
    const [mkdir, write] = byType(run.events, 'approval.requested').map((e) => e.callId) as [string, string]
    expect(await session.decide(mkdir, { decision: 'approved' })).toEqual({ ok: true })
    expect(await session.decide(write, { decision: 'approved', note: 'use b.md next time' })).toEqual({
      ok: true,
    })
    expect(await done).toEqual({ status: 'finished' })
    await session.close()
    expect(byType(run.events, 'tool.skipped').map((e) => e.callId)).toEqual([write])
    const sent = await sentFor(run.recordFile, write)
    expect(sent.content).toMatch(/^Skipped: not run because bash\(mkdir here\) failed/)
    expect(sent.content).toContain('The user approved this call with a note: use b.md next time')
    // Run nothing: the file was never written.
    expect(byType(run.events, 'tool.started').map((e) => e.callId)).toEqual([mkdir])
  }, 60_000)
})
