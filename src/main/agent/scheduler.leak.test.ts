import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { TurnScheduler } from './scheduler'

describe('TurnScheduler and the run’s signal', () => {
  it('a 1000-turn run leaves no listener behind and never warns MaxListenersExceededWarning', async () => {
    const warnings: Error[] = []
    const onWarning = (w: Error): void => {
      warnings.push(w)
    }
    process.on('warning', onWarning)
    try {
      const run = new AbortController()
      for (let turn = 0; turn < 1000; turn++) {
        const scheduler = new TurnScheduler({ mode: turn % 2 ? 'batch' : 'streaming', signal: run.signal })
        scheduler.add({
          callId: `c${turn}`,
          safe: true,
          label: 'read_file(a.txt)',
          execute: () => Promise.resolve({ output: 'ok', isError: false }),
        })
        scheduler.close()
        const [outcome] = await scheduler.done()
        expect(outcome?.kind).toBe('finished')
        // The turn's listener is gone as soon as the turn settles.
        expect(getEventListeners(run.signal, 'abort')).toHaveLength(0)
      }
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('a stop still reaches a turn that is running', async () => {
    const run = new AbortController()
    const scheduler = new TurnScheduler({ mode: 'streaming', signal: run.signal })
    scheduler.add({
      callId: 'slow',
      safe: false,
      label: 'bash(sleep)',
      execute: (signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => resolve({ output: 'killed', isError: true }), {
            once: true,
          }),
        ),
    })
    scheduler.close()
    run.abort()
    const [outcome] = await scheduler.done()
    expect(outcome?.kind).toBe('cancelled')
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0)
  })
})
