import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent, SessionEventDraft } from '../../shared/events'
import { workspaceSecrets } from '../secrets/workspace-secrets'
import { loadBashGrammar } from '../tools/bash/validate'
import { createToolRegistry } from '../tools/index'
import { rulesInBackground, STRICT_RULES } from '../tools/sensitive-paths'
import { makeToolContext } from '../tools/test-fixtures/tool-context'
import type { AgentOptions } from './agent-options'
import { ApprovalGate, type GateHost, type PendingCall } from './approval-gate'
import { AlwaysAllowStore } from './always-allow-store'

const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

/** A gate over a real workspace and the real tools, asking for everything the policy asks (interactive). */
async function gateIn(
  files: Record<string, string>,
  extra: Partial<AgentOptions> = {},
  { scanning = false } = {},
) {
  const workspace = await mkdtemp(join(tmpdir(), 'lanes-gate-'))
  dirs.push(workspace)
  for (const [name, content] of Object.entries(files)) await writeFile(join(workspace, name), content)
  const logged: string[] = []
  const pathRules = rulesInBackground(Promise.resolve(STRICT_RULES))
  await pathRules.ready()
  const secrets = workspaceSecrets(workspace)
  if (!scanning) await secrets.ready()
  const host: GateHost = {
    options: {
      workspace,
      registry: createToolRegistry(),
      approvals: 'interactive',
      autoApproveEdits: false,
      ...extra,
    } as AgentOptions,
    pathRules,
    stopSignal: new AbortController().signal,
    emit: (draft: SessionEventDraft) => {
      logged.push(`${draft.type} ${(draft as { callId?: string }).callId ?? ''}`)
      return Promise.resolve(draft as SessionEvent)
    },
    toolContext: (callId) => ({ ctx: makeToolContext(workspace, { callId }), flush: () => undefined }),
    takePreDecision: () => undefined,
    sessionRules: () => [],
    secrets,
  }
  const gate = new ApprovalGate(host)
  let index = 0
  const call = (name: string, input: Record<string, unknown>, safe: boolean): PendingCall =>
    gate.newCall({ callId: `${name}-${index}`, name, index: index++, input, label: name, safe })
  return { gate, call, logged, workspace }
}

describe('ApprovalGate', () => {
  it('allows a read the moment it is prepared, and answers its verdict without an await', async () => {
    const { gate, call } = await gateIn({ 'a.txt': 'one\n' })
    const read = call('read_file', { path: 'a.txt' }, true)
    const ready = gate.prepare(read, [])
    expect(read.state.kind).toBe('allowed')
    expect(gate.verdict(read, ready, () => undefined)).toEqual({ run: true })
  })

  it("holds a read that arrives before the workspace's first secret scan ends: queued, not started", async () => {
    const { gate, call } = await gateIn({ 'a.txt': 'one\n' }, {}, { scanning: true })
    const read = call('read_file', { path: 'a.txt' }, true)
    const ready = gate.prepare(read, [])
    expect(read.state.kind).toBe('preparing')
    expect(await gate.verdict(read, ready, () => undefined)).toEqual({ run: true })
    expect(read.state.kind).toBe('allowed')
  })

  it("asks about a command without waiting for the turn's earlier reads; a write's preview waits for them", async () => {
    await loadBashGrammar()
    const { gate, call, logged } = await gateIn({ 'a.txt': 'one\n' })
    let readDone!: () => void
    const earlierRead = new Promise<void>((resolve) => (readDone = resolve))
    const bash = call('bash', { command: 'npm install' }, false)
    const write = call('write_file', { path: 'b.txt', content: 'two\n' }, false)
    void gate.prepare(bash, [earlierRead])
    void gate.prepare(write, [earlierRead])
    await expect.poll(() => logged).toContain(`approval.requested ${bash.callId}`)
    expect(bash.state.kind).toBe('asking')
    // A write's preview sees the workspace as the turn's earlier reads left it (their snapshots).
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(logged).not.toContain(`approval.requested ${write.callId}`)
    readDone()
    await expect.poll(() => logged).toContain(`approval.requested ${write.callId}`)
  })

  it('decides a command the folder always allows at once, once the rules were read', async () => {
    await loadBashGrammar()
    const rulesDir = await mkdtemp(join(tmpdir(), 'lanes-gate-rules-'))
    dirs.push(rulesDir)
    const store = new AlwaysAllowStore(join(rulesDir, 'always-allow.json'))
    const { gate, call, workspace } = await gateIn({}, { alwaysAllow: store })
    await store.add(workspace, { tool: 'bash', command: 'npm install' })
    const first = call('bash', { command: 'npm install' }, false)
    const ready = gate.prepare(first, [])
    expect(first.state).toEqual({ kind: 'allowed', byRule: true })
    expect(gate.verdict(first, ready, () => undefined)).toEqual({ run: true })
    // A new store has not read its file yet: the first call waits for it, and is still allowed.
    const fresh = new AlwaysAllowStore(join(rulesDir, 'always-allow.json'))
    const second = await gateIn({}, { alwaysAllow: fresh, workspace })
    const later = second.call('bash', { command: 'npm install' }, false)
    const laterReady = second.gate.prepare(later, [])
    expect(later.state.kind).toBe('preparing')
    await laterReady
    expect(later.state).toEqual({ kind: 'allowed', byRule: true })
  })
})
