import { readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { appendRevocation } from '../session/session-rules'
import { AgentSession } from './agent-session'
import type { Scenario } from './scenario'
import { byType, cleanUpScriptedRuns, scriptedRun } from './test-fixtures/scripted-run'

afterEach(cleanUpScriptedRuns)

/** The ids of the calls that asked, in order. */
function asked(events: Parameters<typeof byType>[0]): string[] {
  return byType(events, 'approval.requested').map((e) => e.callId)
}

function callIdOf(events: Parameters<typeof byType>[0], turnIndex: number): string {
  const queued = byType(events, 'tool.queued')[turnIndex]
  if (!queued) throw new Error(`no call #${turnIndex}`)
  return queued.callId
}

describe('"allow for the rest of this session" (issue 21 §3)', () => {
  it('lets later edits run unasked, never one to a protected path, also through a link, and survives a reopen', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'a\n' } }] },
        { blocks: [{ tool: 'write_file', input: { path: 'src/b.txt', content: 'b\n' } }] },
        { blocks: [{ tool: 'write_file', input: { path: '.env.local', content: 'TOKEN=x\n' } }] },
        { blocks: [{ tool: 'write_file', input: { path: 'looks-harmless', content: 'TOKEN=y\n' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
        // The second run, after a reopen.
        { blocks: [{ tool: 'write_file', input: { path: 'c.txt', content: 'c\n' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, {
      files: { '.env': 'TOKEN=secret\n' },
      approvals: 'interactive',
      strict: true,
      prefix: 'lanes-session-rules-',
    })
    await symlink(join(run.workspace, '.env'), join(run.workspace, 'looks-harmless'))
    const session = await AgentSession.create(run.options)
    const done = session.run('write the files')
    await expect.poll(() => asked(run.events).length, { timeout: 20_000 }).toBe(1)
    const first = byType(run.events, 'approval.requested')[0]
    expect(first?.sessionRule).toEqual({ kind: 'edits' })
    expect(await session.decide(first!.callId, { decision: 'approved', forSession: true })).toEqual({
      ok: true,
    })
    // A new .env.local asks, and is offered no rule: none would ever cover it.
    await expect.poll(() => asked(run.events).length, { timeout: 20_000 }).toBe(2)
    const envAsk = byType(run.events, 'approval.requested')[1]!
    expect(envAsk.callId).toBe(callIdOf(run.events, 2))
    expect(envAsk.sessionRule).toBeUndefined()
    expect(envAsk.preview).toMatchObject({ kind: 'write', protected: true })
    expect(await session.decide(envAsk.callId, { decision: 'rejected', forSession: true })).toEqual({
      ok: true,
    })
    expect(await done).toEqual({ status: 'finished' })

    // One rule, logged before the decision that granted it.
    const granted = byType(run.events, 'rule.granted')
    expect(granted).toMatchObject([{ rule: { kind: 'edits' }, callId: first!.callId }])
    const decided = byType(run.events, 'approval.decided').find((e) => e.callId === first!.callId)!
    expect(granted[0]!.seq).toBeLessThan(decided.seq)
    // src/b.txt ran without asking; the link to .env was allowed by the rule's policy but refused at write.
    expect(asked(run.events)).not.toContain(callIdOf(run.events, 1))
    expect(await readFile(join(run.workspace, 'src/b.txt'), 'utf8')).toBe('b\n')
    const viaLink = byType(run.events, 'tool.finished').find((e) => e.callId === callIdOf(run.events, 3))
    expect(viaLink?.isError).toBe(true)
    expect(await readFile(join(run.workspace, '.env'), 'utf8')).toBe('TOKEN=secret\n')
    expect(session.current.sessionRules.map((g) => g.rule)).toEqual([{ kind: 'edits' }])
    await session.close()

    // Reopened (a restart): the rule is read back from the log and still holds.
    const { session: reopened } = await AgentSession.open(session.sessionId, run.options)
    expect(reopened.sessionRules()).toEqual([{ kind: 'edits' }])
    expect(await reopened.run('one more')).toEqual({ status: 'finished' })
    await reopened.close()
    expect(asked(run.events)).toHaveLength(2)
    expect(await readFile(join(run.workspace, 'c.txt'), 'utf8')).toBe('c\n')
  }, 60_000)

  it.skipIf(!sandboxSupport().available)(
    'matches a command on its parsed words, never a longer word or a refused command, and asks again once revoked',
    async () => {
      const scenario: Scenario = {
        turns: [
          { blocks: [{ tool: 'bash', input: { command: 'touch marker one' } }] },
          { blocks: [{ tool: 'bash', input: { command: "touch 'marker' two" } }] },
          { blocks: [{ tool: 'bash', input: { command: 'touch markerx' } }] },
          { blocks: [{ tool: 'bash', input: { command: 'touch marker three; rm -rf src' } }] },
          { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
          // After the revocation (live), then after a reopen.
          { blocks: [{ tool: 'bash', input: { command: 'touch marker four' } }] },
          { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
        ],
      }
      const run = await scriptedRun(scenario, {
        files: { 'src/keep.txt': 'keep\n' },
        approvals: 'interactive',
        strict: true,
        prefix: 'lanes-session-rules-',
      })
      const session = await AgentSession.create(run.options)
      const done = session.run('touch things')
      await expect.poll(() => asked(run.events).length, { timeout: 20_000 }).toBe(1)
      const first = byType(run.events, 'approval.requested')[0]!
      expect(first.sessionRule).toEqual({ kind: 'command', words: ['touch', 'marker'] })
      expect(await session.decide(first.callId, { decision: 'approved', forSession: true })).toEqual({
        ok: true,
      })
      await expect.poll(() => asked(run.events).length, { timeout: 20_000 }).toBe(2)
      // `touch markerx` is not `touch marker ...`: it asks.
      expect(asked(run.events)[1]).toBe(callIdOf(run.events, 2))
      expect(await session.decide(callIdOf(run.events, 2), { decision: 'rejected' })).toEqual({ ok: true })
      expect(await done).toEqual({ status: 'finished' })
      // `touch 'marker' two` is the same words once quotes are removed: it ran unasked, in the sandbox.
      const second = byType(run.events, 'tool.finished').find((e) => e.callId === callIdOf(run.events, 1))
      expect(second?.isError).toBe(false)
      await expect(readFile(join(run.workspace, 'two'), 'utf8')).resolves.toBe('')
      // The list is refused by the validator whatever the rule says, and never asked about.
      const listed = byType(run.events, 'tool.finished').find((e) => e.callId === callIdOf(run.events, 3))
      expect(listed).toMatchObject({ isError: true })
      expect(asked(run.events)).not.toContain(callIdOf(run.events, 3))
      await expect(readFile(join(run.workspace, 'src/keep.txt'), 'utf8')).resolves.toBe('keep\n')

      const [rule] = session.current.sessionRules
      expect(await session.revokeRule(rule!.ruleId)).toBe(true)
      expect(await session.revokeRule(rule!.ruleId)).toBe(false)
      expect(session.sessionRules()).toEqual([])
      await session.close()

      // Reopened: still revoked, so the same kind of command asks again.
      const { session: reopened } = await AgentSession.open(session.sessionId, run.options)
      expect(reopened.sessionRules()).toEqual([])
      const again = reopened.run('touch one more')
      await expect.poll(() => asked(run.events).length, { timeout: 20_000 }).toBe(3)
      expect(asked(run.events)[2]).toBe(callIdOf(run.events, 4))
      expect(await reopened.decide(callIdOf(run.events, 4), { decision: 'rejected' })).toEqual({ ok: true })
      expect(await again).toEqual({ status: 'finished' })
      await reopened.close()
      expect(byType(run.events, 'rule.revoked')).toMatchObject([{ ruleId: rule!.ruleId }])
    },
    60_000,
  )

  it('is revoked in a session no run holds, under its lock, and an unknown rule is refused', async () => {
    const scenario: Scenario = {
      turns: [
        { blocks: [{ tool: 'write_file', input: { path: 'a.txt', content: 'a\n' } }] },
        { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
      ],
    }
    const run = await scriptedRun(scenario, { approvals: 'interactive', prefix: 'lanes-session-rules-' })
    const session = await AgentSession.create(run.options)
    const done = session.run('write a')
    await expect.poll(() => asked(run.events).length, { timeout: 20_000 }).toBe(1)
    expect(await session.decide(asked(run.events)[0]!, { decision: 'approved', forSession: true })).toEqual({
      ok: true,
    })
    expect(await done).toEqual({ status: 'finished' })
    const ruleId = session.current.sessionRules[0]!.ruleId
    // The session's own writer holds the lock: a second writer is refused rather than interleaving lines.
    await expect(appendRevocation(run.sessionsDir, session.sessionId, ruleId)).rejects.toThrow()
    await session.close()
    expect(await appendRevocation(run.sessionsDir, session.sessionId, 'rule-nope')).toBe(false)
    expect(await appendRevocation(run.sessionsDir, session.sessionId, ruleId)).toBe(true)
    const { session: reopened } = await AgentSession.open(session.sessionId, run.options)
    expect(reopened.sessionRules()).toEqual([])
    expect(reopened.current.counts.anomalies).toBe(0)
    await reopened.close()
    await writeFile(join(run.base, 'done'), '')
  }, 60_000)
})
