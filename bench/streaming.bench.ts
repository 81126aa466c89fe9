import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EventOf, SessionEvent } from '../src/shared/events'
import { AgentSession } from '../src/main/agent/loop'
import { createModelClient } from '../src/main/agent/model'
import type { SchedulerMode } from '../src/main/agent/scheduler'
import type { Scenario } from '../src/main/agent/scenario'
import { startScriptedModel } from '../src/main/agent/scripted-model'
import { loadBashGrammar } from '../src/main/tools/bash/validate'
import { createToolRegistry } from '../src/main/tools/index'
import { median, percentile, result, type Benchmark, type BenchResult } from './harness'

/**
 * Streaming vs batch through the whole pipeline: the real SDK streaming from the scripted model at 60
 * tokens/s, real tools. The analytic prediction of the saving uses the turn's own measured block-close times
 * and tool durations: batch runs everything after the stream ends (safe calls together, then unsafe ones in
 * order), streaming starts each call at its block close under the order-preserving gate.
 */

const TOKENS_PER_SECOND = 60
type Block = Scenario['turns'][number]['blocks'][number]

const read = (path: string): Block => ({ tool: 'read_file', input: { path } })
const shapes: { name: string; blocks: Block[] }[] = [
  { name: '3 quick reads', blocks: [read('a.ts'), read('b.ts'), read('c.ts')] },
  {
    name: 'slow grep then reads',
    blocks: [{ tool: 'grep', input: { pattern: 'needle[0-9]+x', path: 'tree' } }, read('a.ts'), read('b.ts')],
  },
  {
    name: 'slow command then reads',
    blocks: [{ tool: 'bash', input: { command: 'sleep 0.4' } }, read('a.ts'), read('b.ts')],
  },
  {
    name: 'reads then slow command',
    blocks: [read('a.ts'), read('b.ts'), { tool: 'bash', input: { command: 'sleep 0.4' } }],
  },
]

interface Measured {
  wall: number
  predictedBatch: number
  predictedStreaming: number
  closeToStart: number[]
}

async function runShape(
  workspace: string,
  sessionsDir: string,
  blocks: Block[],
  mode: SchedulerMode,
): Promise<Measured> {
  const scenario: Scenario = {
    turns: [
      { blocks, tokensPerSecond: TOKENS_PER_SECOND, firstTokenMs: 100 },
      { blocks: [{ text: 'done' }] },
    ],
  }
  const model = await startScriptedModel({ scenario })
  const events: SessionEvent[] = []
  const session = await AgentSession.create({
    workspace,
    sessionsDir,
    registry: createToolRegistry(),
    model: createModelClient({ baseUrl: model.baseUrl, apiKey: 'bench', maxRetries: 0 }),
    modelName: 'scripted',
    demo: false,
    scheduler: mode,
    siblingSkip: true,
    maxTurns: 3,
    autoApproveEdits: true,
    approvals: 'all',
    onEvent: (e) => events.push(e),
  })
  await session.run('bench')
  await session.close()
  await model.close()

  const of = <T extends SessionEvent['type']>(type: T) =>
    events.filter((e): e is EventOf<T> => e.type === type)
  const turns = of('turn.started')
  const t0 = turns[0]!.at
  const wall = turns[1]!.at - t0
  const streamEnd = of('assistant.message')[0]!.at - t0
  const queued = of('tool.queued')
  const calls = queued.map((q) => ({
    close: q.at - t0,
    safe: q.safe,
    duration: of('tool.finished').find((f) => f.callId === q.callId)!.durationMs,
    startedAt: of('tool.started').find((s) => s.callId === q.callId)!.at - t0,
    endedAt: of('tool.finished').find((f) => f.callId === q.callId)!.at - t0,
  }))
  // Batch: nothing before the end of the stream; safe calls together, then unsafe ones one by one.
  let predictedBatch = streamEnd + Math.max(0, ...calls.filter((c) => c.safe).map((c) => c.duration))
  for (const c of calls) if (!c.safe) predictedBatch += c.duration
  // Streaming: each call at its block close, unsafe after everything before it, safe after earlier unsafe.
  const ends: number[] = []
  calls.forEach((c, i) => {
    const before = calls.slice(0, i).map((_, k) => ends[k] as number)
    const gate = c.safe
      ? Math.max(0, ...calls.slice(0, i).flatMap((p, k) => (p.safe ? [] : [ends[k] as number])))
      : Math.max(0, ...before)
    ends.push(Math.max(c.close, gate) + c.duration)
  })
  const predictedStreaming = Math.max(streamEnd, ...ends)
  // Dispatch latency: from the moment a call could start (its block closed and the gate was free) to its start.
  const closeToStart =
    mode === 'streaming'
      ? calls.map((c, i) => {
          const earlier = calls.slice(0, i).filter((p) => !c.safe || !p.safe)
          return c.startedAt - Math.max(c.close, 0, ...earlier.map((p) => p.endedAt))
        })
      : []
  return { wall, predictedBatch, predictedStreaming, closeToStart }
}

export const benchmarks: Benchmark[] = [
  {
    name: 'streaming-vs-batch',
    async run() {
      await loadBashGrammar()
      const base = await mkdtemp(join(tmpdir(), 'lanes-bench-stream-'))
      const workspace = join(base, 'ws')
      await mkdir(join(workspace, 'tree'), { recursive: true })
      for (const f of ['a.ts', 'b.ts', 'c.ts'])
        await writeFile(join(workspace, f), 'export const x = 1\n'.repeat(200))
      // A tree big enough for grep to take a noticeable while.
      const line = 'const value = compute(input) // ordinary source line\n'.repeat(80)
      for (let d = 0; d < 40; d++) {
        await mkdir(join(workspace, 'tree', `d${d}`))
        for (let f = 0; f < 100; f++) await writeFile(join(workspace, 'tree', `d${d}`, `f${f}.ts`), line)
      }
      const out: BenchResult[] = []
      const allCloseToStart: number[] = []
      try {
        for (const shape of shapes) {
          const achieved: number[] = []
          const predicted: number[] = []
          for (let rep = 0; rep < 3; rep++) {
            const batch = await runShape(workspace, join(base, 'sessions'), shape.blocks, 'batch')
            const streaming = await runShape(workspace, join(base, 'sessions'), shape.blocks, 'streaming')
            achieved.push(batch.wall - streaming.wall)
            predicted.push(streaming.predictedBatch - streaming.predictedStreaming)
            allCloseToStart.push(...streaming.closeToStart)
          }
          out.push(
            result(
              `streaming saving vs prediction: ${shape.name}`,
              median(achieved),
              median(predicted),
              'ms',
              {
                minValue: 0.9 * median(predicted),
                text: 'achieved >= 90% of predicted',
              },
            ),
          )
        }
        out.push(
          result('streaming: block close to tool start p95', percentile(allCloseToStart, 95), 1, 'ms', {
            maxValue: 2,
            text: 'p95 < 2 ms (ms-resolution event times)',
          }),
        )
      } finally {
        await rm(base, { recursive: true, force: true })
      }
      return out
    },
  },
]
