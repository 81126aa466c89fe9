import { spawn } from 'node:child_process'
import { access, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { EventOf, SessionEvent } from '../../shared/events'
import { readSession, sessionPaths } from '../session/log'
import { captureSupport, layerDir } from '../tools/bash/capture/overlay'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { loadBashGrammar } from '../tools/bash/validate'
import { AgentSession } from './agent-session'
import { startScriptedModel } from './scripted-model'
import { scriptedAgentOptions } from './test-fixtures/agent-options'

/**
 * Issue 20: a command's held changes wait for the user's review when the app stops (a real process, killed with
 * SIGKILL in the review). On the next start the same review is offered, nothing of the command has landed, and
 * what the user accepts then lands (only that), from what the command's layer kept in the session's folder.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the held-review restart test: ${JSON.stringify(captureSupport())}`)

const child = fileURLToPath(new URL('./test-fixtures/held-child.ts', import.meta.url))
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})
beforeAll(async () => {
  await loadBashGrammar()
})

const CHANGE = `const fs = require('fs')
fs.writeFileSync('.env', 'A=1\\nTOKEN=held-value-8f3a9c27\\n')
fs.writeFileSync('.npmrc', '//registry.example/:_authToken=npm-token-1b2c3d4e\\n')
fs.writeFileSync('out.txt', 'made by the command\\n')
console.log('changed three files')
`

interface Killed {
  base: string
  workspace: string
  sessionsDir: string
  sessionId: string
}

/**
 * A session in a process of its own (as the app runs it) whose one approved command runs over `files`, killed
 * (SIGKILL) at the moment `at` says, given each event line the process prints in turn.
 */
async function killedSession(opts: {
  files: Record<string, string>
  command: string
  at: () => (line: string) => boolean
  what: string
}): Promise<Killed> {
  // Not under /tmp: the sandbox has a private tmpfs there.
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  const base = await realpath(await mkdtemp(join(cache, 'lanes-held-restart-')))
  const workspace = join(base, 'ws')
  const sessionsDir = join(base, 'sessions')
  await mkdir(workspace)
  for (const [name, content] of Object.entries(opts.files)) await writeFile(join(workspace, name), content)
  const first = await startScriptedModel({
    scenario: { turns: [{ blocks: [{ tool: 'bash', input: { command: opts.command } }] }] },
  })
  cleanups.push(async () => {
    await first.close()
    await rm(base, { recursive: true, force: true })
  })

  const proc = spawn(process.execPath, ['--import', 'tsx', child, workspace, sessionsDir, first.baseUrl], {
    cwd: fileURLToPath(new URL('../../../', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  let sessionId = ''
  const at = opts.at()
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (line.startsWith('session ')) sessionId = line.slice('session '.length)
      if (at(line)) resolve()
    })
    proc.once('exit', (code) => reject(new Error(`the run ended (${code}) before ${opts.what}`)))
  })
  proc.kill('SIGKILL')
  await exited
  return { base, workspace, sessionsDir, sessionId }
}

/** A session whose command's held changes wait for review, in a process killed (SIGKILL) right then. */
function killedInReview(): Promise<Killed> {
  return killedSession({
    // Protected files that exist are read-only in the sandbox: the command adds new ones.
    files: { 'out.txt': 'before\n', 'change.js': CHANGE },
    command: 'node change.js',
    at: () => {
      let held = false
      return (line) => {
        if (line === 'event command.held') held = true
        // The run pauses on the review once the review is in the log.
        return held && line === 'event run.paused'
      }
    },
    what: 'the review',
  })
}

/** A session whose approved command is still running (it changed files, then waits) when its process is killed. */
function killedWhileRunning(): Promise<Killed> {
  return killedSession({
    files: {
      'out.txt': 'before\n',
      'slow.js': `require('fs').writeFileSync('out.txt', 'half done\\n')\nrequire('fs').writeFileSync('new.txt', 'new\\n')\nconsole.log('wrote')\nsetTimeout(() => {}, 60000)\n`,
    },
    command: 'node slow.js',
    at: () => (line) => line === 'event tool.output',
    what: 'the command wrote',
  })
}

describe.skipIf(!overlay)('a command cut short by the app’s end', () => {
  it('has what it changed by then reviewed when the session goes on, and only what the user accepts lands', async () => {
    const { workspace, sessionsDir, sessionId } = await killedWhileRunning()
    // The command died with the app; nothing of it landed.
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')
    await expect(access(join(workspace, 'new.txt'))).rejects.toThrow()
    const model = await startScriptedModel({ scenario: { turns: [{ blocks: [{ text: 'Done.' }] }] } })
    cleanups.push(() => model.close())
    const events: SessionEvent[] = []
    const { session } = await AgentSession.open(
      sessionId,
      scriptedAgentOptions({
        workspace,
        sessionsDir,
        baseUrl: model.baseUrl,
        approvals: 'interactive',
        onEvent: (e) => events.push(e),
      }),
    )
    cleanups.push(() => session.close())
    const outcome = session.continue()
    const held = async () => events.find((e): e is EventOf<'command.held'> => e.type === 'command.held')
    for (let i = 0; i < 400 && !(await held()); i++) await new Promise((r) => setTimeout(r, 25))
    const heldEvent = await held()
    const callId = heldEvent!.callId
    // Everything it changed is held, protected or not: the user never saw the command finish.
    expect(heldEvent?.review?.map((f) => f.relPath).sort()).toEqual(['new.txt', 'out.txt'])
    expect(heldEvent?.interrupted).toBe(true)
    for (let i = 0; i < 400 && !session.waitsForHeldReview(callId); i++)
      await new Promise((r) => setTimeout(r, 25))
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')
    expect(
      await session.decide(callId, {
        decision: 'approved',
        files: [
          { relPath: 'new.txt', decision: 'accepted' },
          { relPath: 'out.txt', decision: 'rejected' },
        ],
      }),
    ).toEqual({ ok: true })
    expect(await outcome).toEqual({ status: 'finished' })
    expect(await readFile(join(workspace, 'new.txt'), 'utf8')).toBe('new\n')
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')
    const finished = events.find((e): e is EventOf<'tool.finished'> => e.type === 'tool.finished')
    expect(finished?.isError).toBe(true)
    expect(finished?.output).toMatch(/Interrupted: Lanes stopped while this command was running/)
    expect(finished?.output).toMatch(/1 landed; 1 did not/)
    const outputDir = sessionPaths(sessionsDir, sessionId).outputDir
    await expect(access(layerDir(outputDir, callId))).rejects.toThrow()
    // Undo covers what landed.
    expect((await session.rewind({ mode: 'undo', callId })).ok).toBe(true)
    await expect(access(join(workspace, 'new.txt'))).rejects.toThrow()
  })
})

describe.skipIf(!overlay)('a held review across a restart', () => {
  it('is offered again after the app was killed in it, and only what the user then accepts lands', async () => {
    const { base, workspace, sessionsDir, sessionId } = await killedInReview()
    // Nothing of the command has landed; its layer waits in the session's folder.
    await expect(access(join(workspace, '.env'))).rejects.toThrow()
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')
    await expect(access(join(workspace, '.npmrc'))).rejects.toThrow()
    const outputDir = sessionPaths(sessionsDir, sessionId).outputDir
    const { events: logged } = await readSession(sessionPaths(sessionsDir, sessionId).log)
    const heldEvent = logged.find((e): e is EventOf<'command.held'> => e.type === 'command.held')
    expect(heldEvent?.review?.map((f) => f.relPath).sort()).toEqual(['.env', '.npmrc'])
    expect(heldEvent?.groups).toEqual([
      { folder: '', added: 2, changed: 0, removed: 0, mode: 0, protected: 2 },
    ])
    const callId = heldEvent!.callId
    await access(join(layerDir(outputDir, callId), 'held.json'))

    // The next start: the same review, from the log, and asked again by the continued run.
    const second = await startScriptedModel({
      scenario: { turns: [{ blocks: [{ text: 'Done.' }] }] },
      recordFile: join(base, 'second.jsonl'),
    })
    cleanups.push(() => second.close())
    const events: SessionEvent[] = []
    const { session } = await AgentSession.open(
      sessionId,
      scriptedAgentOptions({
        workspace,
        sessionsDir,
        baseUrl: second.baseUrl,
        approvals: 'interactive',
        onEvent: (e) => events.push(e),
      }),
    )
    cleanups.push(() => session.close())
    const call = session.current.turns.at(-1)?.calls[callId]
    expect(call?.held?.pending).toBe(true)
    expect(call?.held?.review).toEqual(heldEvent?.review)
    const outcome = session.continue()
    for (let i = 0; i < 400 && !session.waitsForHeldReview(callId); i++)
      await new Promise((r) => setTimeout(r, 25))
    expect(session.waitsForHeldReview(callId)).toBe(true)
    expect(events.map((e) => e.type)).toContain('run.paused')
    expect(events.map((e) => e.type)).not.toContain('tool.started')

    // Its files page in, and a diff loads on demand, the held secret's new value hidden.
    const page = await session.heldFiles(callId, '', 0, 50)
    expect(page.ok && page.files.map((f) => f.relPath).sort()).toEqual(['.env', '.npmrc'])
    const diff = await session.heldDiff(callId, '.env')
    const text = JSON.stringify(diff)
    expect(text).toContain('TOKEN')
    expect(text).not.toContain('held-value-8f3a9c27')
    expect(text).toContain('[secret from .env hidden]')
    // Still nothing landed while the review waits.
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')

    expect(
      await session.decide(callId, {
        decision: 'approved',
        files: [
          { relPath: '.env', decision: 'accepted' },
          { relPath: '.npmrc', decision: 'rejected' },
        ],
      }),
    ).toEqual({ ok: true })
    expect(await outcome).toEqual({ status: 'finished' })

    // Only the accepted held change landed, with the command's unprotected change; the layer is gone.
    expect(await readFile(join(workspace, '.env'), 'utf8')).toBe('A=1\nTOKEN=held-value-8f3a9c27\n')
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('made by the command\n')
    await expect(access(join(workspace, '.npmrc'))).rejects.toThrow()
    await expect(access(layerDir(outputDir, callId))).rejects.toThrow()
    const reviewed = events.find((e) => e.type === 'command.reviewed')
    expect(reviewed).toMatchObject({ by: 'user', accepted: ['.env'], acceptedCount: 1, rejectedCount: 1 })
    const finished = events.find((e): e is EventOf<'tool.finished'> => e.type === 'tool.finished')
    expect(finished?.callId).toBe(callId)
    // The call is answered as it would have been without the restart: the command's output and what landed.
    expect(finished?.output).toContain('changed three files')
    expect(finished?.output).toMatch(/reviewed the 2 held change\(s\).*1 landed; 1 did not/)
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['command.landing', 'command.landed', 'run.finished']),
    )
    // Undo covers it like any landing.
    const undone = await session.rewind({ mode: 'undo', callId })
    expect(undone.ok).toBe(true)
    await expect(access(join(workspace, '.env'))).rejects.toThrow()
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')
  })

  it('is finished headless (as by `lanes run --continue --approve all`): the held changes are discarded and reported, the rest lands', async () => {
    const { workspace, sessionsDir, sessionId } = await killedInReview()
    const model = await startScriptedModel({ scenario: { turns: [{ blocks: [{ text: 'Done.' }] }] } })
    cleanups.push(() => model.close())
    const events: SessionEvent[] = []
    const { session } = await AgentSession.open(
      sessionId,
      scriptedAgentOptions({
        workspace,
        sessionsDir,
        baseUrl: model.baseUrl,
        approvals: 'all',
        onEvent: (e) => events.push(e),
      }),
    )
    cleanups.push(() => session.close())
    expect(await session.continue()).toEqual({ status: 'finished' })
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('made by the command\n')
    await expect(access(join(workspace, '.env'))).rejects.toThrow()
    await expect(access(join(workspace, '.npmrc'))).rejects.toThrow()
    expect(events.find((e) => e.type === 'command.reviewed')).toMatchObject({
      by: 'cli',
      acceptedCount: 0,
      rejectedCount: 2,
    })
    const finished = events.find((e): e is EventOf<'tool.finished'> => e.type === 'tool.finished')
    expect(finished?.output).toMatch(/finished by `lanes run`, which cannot ask: 0 landed; 2 did not/)
    const outputDir = sessionPaths(sessionsDir, sessionId).outputDir
    await expect(access(layerDir(outputDir, finished!.callId))).rejects.toThrow()
  })
})
