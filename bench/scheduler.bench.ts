import { TurnScheduler, type SchedulerMode } from '../src/main/agent/scheduler'
import { median, result, sized, type Benchmark } from './harness'

/**
 * Scheduler overhead: turns of fake tools with known durations. The baseline is the ideal critical path of
 * each turn computed from how long each fake tool really took (so timer jitter is not charged to the
 * scheduler): for batch, the longest safe call plus every unsafe call in turn; for streaming, the same per
 * segment between unsafe calls.
 */

type Shape = { name: string; calls: { safe: boolean; ms: number }[] }

const shapes: Shape[] = [
  {
    name: 'reference',
    calls: [
      { safe: true, ms: 20 },
      { safe: true, ms: 15 },
      { safe: false, ms: 10 },
      { safe: true, ms: 12 },
    ],
  },
  {
    name: 'reads',
    calls: [
      { safe: true, ms: 10 },
      { safe: true, ms: 14 },
      { safe: true, ms: 8 },
    ],
  },
  {
    name: 'writes',
    calls: [
      { safe: false, ms: 5 },
      { safe: false, ms: 5 },
      { safe: false, ms: 5 },
    ],
  },
  {
    name: 'mixed-12',
    calls: Array.from({ length: 12 }, (_, i) => ({ safe: i % 4 !== 3, ms: 4 + (i % 3) * 3 })),
  },
]

async function runTurn(mode: SchedulerMode, shape: Shape): Promise<{ wall: number; ideal: number }> {
  const took: number[] = []
  const scheduler = new TurnScheduler({ mode, signal: new AbortController().signal })
  const t0 = performance.now()
  shape.calls.forEach((c, i) =>
    scheduler.add({
      callId: `c${i}`,
      safe: c.safe,
      label: `fake(${i})`,
      execute: () =>
        new Promise((resolve) => {
          const start = performance.now()
          setTimeout(() => {
            took[i] = performance.now() - start
            resolve({ output: 'ok', isError: false })
          }, c.ms)
        }),
    }),
  )
  scheduler.close()
  await scheduler.done()
  const wall = performance.now() - t0
  let ideal = 0
  if (mode === 'batch') {
    ideal = Math.max(0, ...shape.calls.map((c, i) => (c.safe ? (took[i] as number) : 0)))
    ideal += shape.calls.reduce((sum, c, i) => sum + (c.safe ? 0 : (took[i] as number)), 0)
  } else {
    let segment = 0
    shape.calls.forEach((c, i) => {
      if (c.safe) segment = Math.max(segment, took[i] as number)
      else {
        ideal += segment + (took[i] as number)
        segment = 0
      }
    })
    ideal += segment
  }
  return { wall, ideal }
}

export const benchmarks: Benchmark[] = [
  {
    name: 'scheduler-overhead',
    async run() {
      const out = []
      for (const mode of ['batch', 'streaming'] as const) {
        const walls: number[] = []
        const ideals: number[] = []
        const overheads: number[] = []
        for (let round = 0; round < sized(25, 3); round++) {
          for (const shape of shapes) {
            const { wall, ideal } = await runTurn(mode, shape)
            walls.push(wall)
            ideals.push(ideal)
            overheads.push(wall - ideal)
          }
        }
        const ratios = walls.map((w, i) => w / (ideals[i] as number))
        out.push(
          result(`scheduler-${mode}-overhead-per-turn`, median(overheads), median(ideals), 'ms', {
            maxValue: 1,
            text: 'median overhead < 1 ms per turn',
          }),
        )
        out.push(
          result(`scheduler-${mode}-median-turn-ratio`, median(ratios), 1, 'x', {
            maxValue: 1.02,
            text: '<= 1.02',
          }),
        )
      }
      return out
    },
  },
]
