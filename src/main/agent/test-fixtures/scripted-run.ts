import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { EventOf, SessionEvent } from '../../../shared/events'
import { loadBashGrammar } from '../../tools/bash/validate'
import { expect } from 'vitest'
import { AgentSession, type AgentOptions, type ApprovalMode } from '../agent-session'
import type { SchedulerMode } from '../scheduler'
import type { Scenario } from '../scenario'
import { startScriptedModel, type ScriptedModel } from '../scripted-model'
import { scriptedAgentOptions } from './agent-options'

/**
 * An agent session's world for a test, all real: a temp workspace holding `files`, a sessions folder, the
 * scripted model over HTTP recording every request, and AgentOptions wired to them with the real tools.
 * `cleanUpScriptedRuns` (in afterEach) closes the servers and removes the folders.
 */

export interface ScriptedRun {
  base: string
  workspace: string
  sessionsDir: string
  /** Every request the model received, one JSON line each. */
  recordFile: string
  server: ScriptedModel
  /** Every event the session emitted, in order. */
  events: SessionEvent[]
  options: AgentOptions
}

export interface ScriptedRunOptions {
  files?: Record<string, string>
  scheduler?: SchedulerMode
  approvals?: ApprovalMode
  siblingSkip?: boolean
  /** The model name the client sends (a strict server checks it); by default the client's own. */
  model?: string
  maxRetries?: number
  /** The scripted server answers 400 exactly where the real API would. */
  strict?: boolean
  /** Runs in this folder, kept afterwards (a second process on the same session), instead of a new one. */
  base?: string
  /** Names the new temp folder, so a leftover says which test made it. */
  prefix?: string
}

const cleanups: (() => Promise<void>)[] = []

export async function scriptedRun(scenario: Scenario, opts: ScriptedRunOptions = {}): Promise<ScriptedRun> {
  await loadBashGrammar()
  const base = opts.base ?? (await realpath(await mkdtemp(join(tmpdir(), opts.prefix ?? 'lanes-run-'))))
  const workspace = join(base, 'ws')
  const sessionsDir = join(base, 'sessions')
  await mkdir(workspace, { recursive: true })
  for (const [name, content] of Object.entries(opts.files ?? {})) {
    await mkdir(dirname(join(workspace, name)), { recursive: true })
    await writeFile(join(workspace, name), content)
  }
  const recordFile = join(base, 'requests.jsonl')
  const server = await startScriptedModel({ scenario, recordFile, ...(opts.strict ? { strict: true } : {}) })
  cleanups.push(async () => {
    await server.close()
    if (!opts.base) await rm(base, { recursive: true, force: true })
  })
  const events: SessionEvent[] = []
  const { files: _files, strict: _strict, base: _base, prefix: _prefix, ...choices } = opts
  const options = scriptedAgentOptions({
    ...choices,
    workspace,
    sessionsDir,
    baseUrl: server.baseUrl,
    onEvent: (e) => events.push(e),
  })
  return { base, workspace, sessionsDir, recordFile, server, events, options }
}

/** Closes every run's server (newest first) and removes its folder. */
export async function cleanUpScriptedRuns(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c()
}

/** The requests the scripted model received, in order. */
export async function recordedRequests<T = { messages: { role: string; content: unknown }[] }>(
  recordFile: string,
): Promise<T[]> {
  return (await readFile(recordFile, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as T)
}

/** The events of one type, typed. */
export function byType<T extends SessionEvent['type']>(events: SessionEvent[], type: T): EventOf<T>[] {
  return events.filter((e): e is EventOf<T> => e.type === type)
}

/** Runs `task` in a new session of `s` and expects it to finish; returns the session, closed. */
export async function runToFinish(s: ScriptedRun, task: string): Promise<AgentSession> {
  const session = await AgentSession.create(s.options)
  expect(await session.run(task)).toEqual({ status: 'finished' })
  await session.close()
  return session
}
