import { writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ScenarioTurn } from '../../agent/scenario'
import { startScriptedModel } from '../../agent/scripted-model'
import type { SessionEvent } from '../../../shared/events'
import { runLanes } from './run-lanes'

/** The test server of this folder, and the registry's servers as installed by `npm ci`. */
export const TEST_SERVER = fileURLToPath(new URL('../../mcp/test-fixtures/test-server.mjs', import.meta.url))
const require = createRequire(import.meta.url)
export const FILESYSTEM_SERVER = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js')
export const EVERYTHING_SERVER = require.resolve('@modelcontextprotocol/server-everything/dist/index.js')

/**
 * The first model answer waits this long before it streams, so the servers (started with the session, in
 * the background) are up when its calls are dispatched; the request itself is sent at once.
 */
export const SERVER_START_MS = 3000

export type ScriptedTurn = ScenarioTurn

/** Runs `lanes run` against a scripted model and returns its events, stderr, exit code and the requests. */
export async function runWithMcp(opts: {
  workspace: string
  sessionsDir: string
  turns: ScenarioTurn[]
  config?: unknown
  args?: string[]
  /** Continue this session instead of starting one. */
  continueSession?: string
}): Promise<{
  code: number
  events: SessionEvent[]
  stderr: string
  requests: { tools?: { name: string }[]; messages: { role: string; content: unknown }[] }[]
}> {
  const model = await startScriptedModel({ scenario: { turns: opts.turns } })
  const args =
    opts.continueSession !== undefined
      ? ['run', '--continue', opts.continueSession]
      : ['run', '--workspace', opts.workspace, '--task', 'use the servers']
  args.push('--sessions-dir', opts.sessionsDir, '--base-url', model.baseUrl)
  if (opts.config !== undefined) {
    const file = join(opts.sessionsDir, `mcp-${Math.random().toString(36).slice(2)}.json`)
    await writeFile(file, JSON.stringify(opts.config))
    args.push('--mcp-config', file)
  }
  try {
    const result = await runLanes([...args, ...(opts.args ?? [])])
    return { ...result, requests: model.requests as never }
  } finally {
    await model.close()
  }
}

export function finished(events: SessionEvent[], callId: string) {
  const event = events.find((e) => e.type === 'tool.finished' && e.callId === callId)
  return event?.type === 'tool.finished' ? event : undefined
}

export function queued(events: SessionEvent[], callId: string) {
  const event = events.find((e) => e.type === 'tool.queued' && e.callId === callId)
  return event?.type === 'tool.queued' ? event : undefined
}
