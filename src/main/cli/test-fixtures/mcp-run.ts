import { readdir, readFile, writeFile } from 'node:fs/promises'
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
 * Waits until the session logs show each server ready at least that many times (a number), or in that status
 * (a string).
 */
async function readyInLog(sessionsDir: string, wanted: Record<string, number | string>): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const logs = (await readdir(sessionsDir)).filter((f) => f.endsWith('.jsonl'))
    const texts = await Promise.all(logs.map((f) => readFile(join(sessionsDir, f), 'utf8').catch(() => '')))
    const lines = texts.flatMap((t) => t.split('\n')).filter((l) => l.includes('"mcp.server"'))
    const times = (server: string, status: string) =>
      lines.filter(
        (l) =>
          l.includes(`"status":${JSON.stringify(status)}`) &&
          l.includes(`"server":${JSON.stringify(server)}`),
      ).length
    const reached = ([server, n]: [string, number | string]): boolean =>
      typeof n === 'number' ? times(server, 'ready') >= n : times(server, n) > 0
    if (Object.entries(wanted).every(reached)) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`the MCP servers ${JSON.stringify(wanted)} were not there within a minute`)
}

/** Runs `lanes run` against a scripted model and returns its events, stderr, exit code and the requests. */
export async function runWithMcp(opts: {
  workspace: string
  sessionsDir: string
  /** A turn is played once its servers were ready that many times (`afterReady`) or reached a status. */
  turns: (ScenarioTurn & { afterReady?: Record<string, number>; afterStatus?: Record<string, string> })[]
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
  // Each turn is played once the servers it names have been ready that many times (the session log says so):
  // the servers start in the background, and a loaded machine may take seconds to start one.
  let played = 0
  const model = await startScriptedModel({
    scenario: { turns: [] },
    respond: async () => {
      const turn = opts.turns[played++]
      if (!turn) return { blocks: [{ text: 'The scripted conversation has no more turns.' }] }
      const { afterReady, afterStatus, ...rest } = turn
      if (afterReady || afterStatus) await readyInLog(opts.sessionsDir, { ...afterReady, ...afterStatus })
      return rest
    },
  })
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
