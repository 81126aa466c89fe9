import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { AlwaysAllowStore } from './always-allow-store'
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

describe.skipIf(!sandboxSupport().available)('"always allow" given with an approval', () => {
  it('records the rule the tool defines, which its policy then honours; the switches stay with a sandboxed tool', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'bash', input: { command: 'touch made.txt' } }] },
        { blocks: [{ tool: 'bash', input: { command: 'touch made.txt' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, {
      approvals: 'interactive',
      strict: true,
      prefix: 'lanes-always-',
    })
    const store = new AlwaysAllowStore(join(run.base, 'always-allow.json'))
    const session = await AgentSession.create({ ...run.options, alwaysAllow: store })
    const done = session.run('touch it twice')
    await expect.poll(() => byType(run.events, 'approval.requested').length, { timeout: 20_000 }).toBe(1)
    const [first] = byType(run.events, 'approval.requested').map((e) => e.callId) as [string]
    expect(await session.decide(first, { decision: 'approved', always: true, network: true })).toEqual({
      ok: true,
    })
    expect(await done).toEqual({ status: 'finished' })
    await session.close()
    expect(await store.rules(run.workspace)).toEqual([{ tool: 'bash', command: 'touch made.txt' }])
    expect(byType(run.events, 'approval.decided')).toMatchObject([
      { callId: first, always: true, network: true },
    ])
    // The second, identical command ran without asking.
    expect(byType(run.events, 'approval.requested')).toHaveLength(1)
    expect(byType(run.events, 'tool.finished').map((e) => e.isError)).toEqual([false, false])
  }, 60_000)
})
