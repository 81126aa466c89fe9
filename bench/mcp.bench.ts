import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { DEFAULT_CONTEXT_WINDOW } from '../src/shared/models'
import { TurnScheduler } from '../src/main/agent/scheduler'
import { startScriptedModel } from '../src/main/agent/scripted-model'
import { launchSession, prepareEngine, DEFAULT_ENGINE_SETTINGS } from '../src/main/app/engine'
import { McpHub } from '../src/main/mcp/hub'
import { openMcp } from '../src/main/mcp/index'
import { stdioServer, TEST_SERVER } from '../src/main/mcp/test-fixtures/servers'
import { parseToolArgs } from '../src/main/tools/args'
import { formatForModel } from '../src/main/tools/result-format'
import { makeToolContext } from '../src/main/tools/test-fixtures/tool-context'
import type { Tool } from '../src/main/tools/tool'
import { median, result, type Benchmark, type BenchResult } from './harness'

/**
 * MCP (issue 22). (1) One read-only call's round trip through Lanes' pipeline (arguments parsed and checked
 * against the server's schema, the scheduler, the connection, the result converted and formatted for the model)
 * against the SDK's own client calling the same server program directly, calls interleaved. (2) Ten read-only
 * calls of 200 ms in one turn against the slowest of them: they really run side by side. (3) The first model
 * request of a session with a server that takes its time to start, against a session without one.
 */

async function readyHub(workspace: string): Promise<McpHub> {
  const hub = new McpHub({
    workspace,
    servers: [stdioServer('t', { source: 'bench' })],
    trust: (server) => server.permissions,
    reserved: new Set(),
    contextWindowTokens: DEFAULT_CONTEXT_WINDOW,
  })
  hub.start()
  await hub.settled()
  return hub
}

/** One call as a turn runs it: parse, check, schedule, execute, format. */
async function pipelineCall(tool: Tool, raw: string, workspace: string, outputDir: string): Promise<number> {
  const t0 = performance.now()
  const parsed = parseToolArgs(raw, tool.input, { toolName: tool.name })
  if (!parsed.ok) throw new Error(parsed.error)
  const scheduler = new TurnScheduler({ mode: 'streaming', signal: new AbortController().signal })
  let text = ''
  scheduler.add({
    callId: 'c1',
    safe: tool.concurrencySafe,
    label: tool.name,
    execute: async (signal) => {
      const r = await tool.execute(parsed.value, makeToolContext(workspace, { signal, outputDir }))
      text = formatForModel(r)
      return r
    },
  })
  scheduler.close()
  await scheduler.done()
  if (!text.startsWith('waited')) throw new Error(`unexpected result: ${text}`)
  return performance.now() - t0
}

async function roundTrip(workspace: string): Promise<BenchResult[]> {
  const hub = await readyHub(workspace)
  const tool = hub.tools().find((t) => t.name === 'mcp__t__wait') as Tool
  const direct = new Client({ name: 'bench', version: '1' })
  await direct.connect(new StdioClientTransport({ command: process.execPath, args: [TEST_SERVER] }))
  const ours: number[] = []
  const sdk: number[] = []
  try {
    for (let i = 0; i < 300; i++) {
      const viaLanes = await pipelineCall(tool, '{"ms":0}', workspace, workspace)
      const t0 = performance.now()
      await direct.callTool({ name: 'wait', arguments: { ms: 0 } })
      const viaSdk = performance.now() - t0
      // The first calls warm both paths up.
      if (i >= 50) {
        ours.push(viaLanes)
        sdk.push(viaSdk)
      }
    }
  } finally {
    await direct.close()
    await hub.close()
  }
  const added = median(ours) - median(sdk)
  return [
    result('mcp-read-call-round-trip', median(ours), median(sdk), 'ms', {
      maxRatio: 1.2,
      text: 'ratio <= 1.2 vs the SDK client alone',
    }),
    result('mcp-read-call-added-ms', added, median(sdk), 'ms', { maxValue: 2, text: '< 2 ms added' }),
  ]
}

async function tenInParallel(workspace: string): Promise<BenchResult[]> {
  const hub = await readyHub(workspace)
  const tool = hub.tools().find((t) => t.name === 'mcp__t__wait') as Tool
  const walls: number[] = []
  const slowest: number[] = []
  try {
    for (let round = 0; round < 5; round++) {
      const took: number[] = []
      const scheduler = new TurnScheduler({ mode: 'streaming', signal: new AbortController().signal })
      const t0 = performance.now()
      for (let i = 0; i < 10; i++) {
        scheduler.add({
          callId: `c${i}`,
          safe: tool.concurrencySafe,
          label: tool.name,
          execute: async (signal) => {
            const start = performance.now()
            const r = await tool.execute(
              { ms: 200 },
              makeToolContext(workspace, { signal, outputDir: workspace }),
            )
            took[i] = performance.now() - start
            return r
          },
        })
      }
      scheduler.close()
      await scheduler.done()
      walls.push(performance.now() - t0)
      slowest.push(Math.max(...took))
    }
  } finally {
    await hub.close()
  }
  return [
    result('mcp-ten-read-calls-one-turn', median(walls), median(slowest), 'ms', {
      maxRatio: 1.2,
      text: 'within 1.2x of the slowest call',
    }),
  ]
}

/**
 * From the session's start to its first model request (the moment the model has its body: `respond` is asked
 * for the answer then), and to the end of that request's answer, with or without a server that is slow to start.
 * The servers start once the request is on the wire, so their start shares the event loop with the answer (this
 * model runs in the same process; the API does not): the second figure shows that, the first is the target's.
 */
async function firstRequest(
  workspace: string,
  sessionsDir: string,
  slow: { command: string; args: string[] } | null,
): Promise<{ request: number; answered: number }> {
  let arrived = 0
  let answered = 0
  const model = await startScriptedModel({
    scenario: { turns: [] },
    respond: async () => {
      arrived ||= performance.now()
      return { blocks: [{ text: 'ok' }] }
    },
    onRequest: () => (answered ||= performance.now()),
  })
  const { registry: shared } = await prepareEngine()
  const config = join(sessionsDir, 'slow.json')
  if (slow) writeFileSync(config, JSON.stringify({ mcpServers: { slow } }))
  const t0 = performance.now()
  const mcp = slow
    ? await openMcp({
        workspace,
        registry: shared,
        userFiles: [config],
        trust: (server) => server.permissions,
      })
    : null
  const launched = await launchSession({
    workspace,
    registry: mcp?.registry ?? shared,
    model: { baseUrl: model.baseUrl, apiKey: 'bench' },
    settings: { ...DEFAULT_ENGINE_SETTINGS, sessionsDir },
    approvals: 'none',
    from: { task: 'hello' },
  })
  mcp?.hub.attach((d) => void launched.session.emit(d))
  await launched.session.run('hello')
  const took = { request: arrived - t0, answered: answered - t0 }
  await mcp?.hub.close()
  await launched.session.close()
  await launched.model.close()
  await model.close()
  return took
}

/**
 * Two slow servers: `sleep`, which never answers and costs nothing to start (what Lanes itself adds before the
 * first request: reading the configuration, preparing the sandbox, spawning), and the test server that never
 * answers `initialize`, a Node process whose own start competes for the CPU (on a loaded two-core machine that
 * shows; it is not waiting, which the figure without a target lets you compare).
 */
async function startDoesNotDelay(workspace: string, sessionsDir: string): Promise<BenchResult[]> {
  const without: { request: number; answered: number }[] = []
  const withSleep: { request: number; answered: number }[] = []
  const withNode: { request: number; answered: number }[] = []
  const sleep = { command: 'sleep', args: ['3600'] }
  const node = { command: process.execPath, args: [TEST_SERVER, 'silent'] }
  for (let i = 0; i < 9; i++) {
    without.push(await firstRequest(workspace, sessionsDir, null))
    withSleep.push(await firstRequest(workspace, sessionsDir, sleep))
    withNode.push(await firstRequest(workspace, sessionsDir, node))
  }
  const at = (runs: { request: number; answered: number }[], key: 'request' | 'answered') =>
    median(runs.map((r) => r[key]))
  return [
    result('mcp-first-request-server-never-answers', at(withSleep, 'request'), at(without, 'request'), 'ms', {
      maxValue: at(without, 'request') + 20,
      text: 'at most 20 ms later than without the server',
    }),
    result('mcp-first-request-node-server-starting', at(withNode, 'request'), at(without, 'request'), 'ms'),
    result('mcp-first-answer-server-never-answers', at(withSleep, 'answered'), at(without, 'answered'), 'ms'),
    result('mcp-first-answer-node-server-starting', at(withNode, 'answered'), at(without, 'answered'), 'ms'),
  ]
}

export const benchmarks: Benchmark[] = [
  {
    name: 'mcp',
    async run() {
      const base = realpathSync(mkdtempSync(join(tmpdir(), 'lanes-bench-mcp-')))
      const workspace = join(base, 'ws')
      const sessionsDir = join(base, 'sessions')
      mkdirSync(workspace)
      mkdirSync(sessionsDir)
      try {
        return [
          ...(await roundTrip(workspace)),
          ...(await tenInParallel(workspace)),
          ...(await startDoesNotDelay(workspace, sessionsDir)),
        ]
      } finally {
        rmSync(base, { recursive: true, force: true })
      }
    },
  },
]
