import { execFileSync } from 'node:child_process'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { loadSensitivePathRules } from '../tools/sensitive-paths'
import { AgentSession, type AgentOptions } from './agent-session'
import type { Scenario } from './scenario'
import { byType, cleanUpScriptedRuns, scriptedRun, type ScriptedRun } from './test-fixtures/scripted-run'

// The workspace's sensitive-path rules load in the background from the session's start (reading a large
// repository's history takes most of a second): the session starts and talks to the model without them, and a
// call is judged only once they are loaded. The load is held back here until the test lets it go, so the
// order of things is certain whatever the machine's speed; what it loads is the real rules of a real repository.

afterEach(cleanUpScriptedRuns)

const git = (cwd: string, ...args: string[]): string =>
  execFileSync(
    'git',
    ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', ...args],
    { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  )

/** A repository with one commit; with `leak`, a `.env` committed and deleted since (only its history holds it). */
async function repository(s: ScriptedRun, leak: boolean): Promise<void> {
  git(s.workspace, 'init', '-q')
  if (leak) {
    await writeFile(join(s.workspace, '.env'), 'TOKEN=hunter2\n')
    git(s.workspace, 'add', '-A')
    git(s.workspace, 'commit', '-qm', 'add .env')
    await rm(join(s.workspace, '.env'))
  }
  git(s.workspace, 'add', '-A')
  git(s.workspace, 'commit', '-qm', 'first')
}

/**
 * Options whose rules start loading only once a tool call is queued (its policy then waits for them), and a list
 * of what happened in order: the events of `types`, the queued call (with the model requests sent by then) and
 * `rules.loaded`.
 */
function heldRules(s: ScriptedRun, types: readonly SessionEvent['type'][]) {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const order: string[] = []
  const options: AgentOptions = {
    ...s.options,
    loadPathRules: async (workspace) => {
      await released
      const rules = await loadSensitivePathRules(workspace)
      order.push('rules.loaded')
      return rules
    },
    onEvent: (event, sessionId) => {
      if (types.includes(event.type)) order.push(event.type)
      if (event.type === 'tool.queued') {
        order.push(`tool.queued after ${s.server.requests.length} request(s)`)
        release()
      }
      s.options.onEvent?.(event, sessionId)
    },
  }
  return { options, order }
}

const gitDiff: Scenario = {
  turns: [
    { blocks: [{ tool: 'bash', input: { command: 'git diff', description: 'What changed' } }] },
    { blocks: [{ text: 'Nothing changed.' }] },
  ],
}

describe("the workspace's path rules", () => {
  it('are not waited for by a session that calls no tool: it starts, asks the model and finishes, also when continued', async () => {
    const s = await scriptedRun(
      { turns: [{ blocks: [{ text: 'Hello.' }] }, { blocks: [{ text: 'Again.' }] }] },
      { files: { 'README.md': '# demo\n' }, prefix: 'lanes-rules-' },
    )
    await repository(s, false)
    // No call is ever queued, so the rules never load: everything below happens without them.
    const { options, order } = heldRules(s, ['session.created', 'run.finished'])
    const first = await AgentSession.create(options)
    expect(await first.run('say hello')).toEqual({ status: 'finished' })
    expect(first.pathRules.isReady()).toBe(false)
    await first.close()
    const { session } = await AgentSession.open(first.sessionId, options)
    expect(await session.run('again')).toEqual({ status: 'finished' })
    await session.close()
    expect(order).toEqual(['session.created', 'run.finished', 'run.finished'])
    expect(s.server.requests).toHaveLength(2)
    // Read before they are loaded, the rules are the strict ones (fail closed).
    expect(session.pathRules).toMatchObject({ bareRepoAtRoot: true, gitTracksSecrets: true })
  })

  it.skipIf(!sandboxSupport().available)(
    'judge a call that arrives before they are loaded once they are: git diff of a clean history runs unasked',
    async () => {
      const s = await scriptedRun(gitDiff, {
        files: { 'README.md': '# demo\n' },
        approvals: 'pause',
        prefix: 'lanes-rules-',
      })
      await repository(s, false)
      const { options, order } = heldRules(s, [
        'session.created',
        'approval.requested',
        'tool.started',
        'tool.finished',
      ])
      const session = await AgentSession.create(options)
      expect(await session.run('what changed?')).toEqual({ status: 'finished' })
      await session.close()
      expect(order).toEqual([
        'session.created',
        'tool.queued after 1 request(s)',
        'rules.loaded',
        'tool.started',
        'tool.finished',
      ])
      expect(byType(s.events, 'tool.finished')[0]).toMatchObject({
        isError: false,
        metadata: { sandbox: 'read-only' },
      })
    },
  )

  it('judge a call that arrives before they are loaded once they are: git diff asks where the history holds a .env', async () => {
    const s = await scriptedRun(gitDiff, {
      files: { 'README.md': '# demo\n' },
      approvals: 'pause',
      prefix: 'lanes-rules-',
    })
    await repository(s, true)
    const { options, order } = heldRules(s, ['session.created', 'approval.requested', 'tool.started'])
    const session = await AgentSession.create(options)
    expect(await session.run('what changed?')).toMatchObject({ status: 'paused' })
    await session.close()
    expect(order).toEqual([
      'session.created',
      'tool.queued after 1 request(s)',
      'rules.loaded',
      'approval.requested',
    ])
    expect(session.pathRules).toMatchObject({ bareRepoAtRoot: false, gitTracksSecrets: true })
  })
})
