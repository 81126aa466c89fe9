import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import type { Scenario } from '../src/main/agent/scenario'
import { startScriptedModel, type ScriptedModel } from '../src/main/agent/scripted-model'

/**
 * The scripted model on a thread of its own, as the real API is in another place: a benchmark whose engine keeps
 * its main thread busy (a tool starting while the model streams) must not slow the model's stream down with it.
 * It tells when it finished answering each request, in absolute high-resolution time
 * (`performance.timeOrigin + performance.now()`, comparable across threads).
 */

type ToWorker = { type: 'start'; scenario: Scenario } | { type: 'close' }
type FromWorker =
  | { type: 'started'; baseUrl: string }
  | { type: 'answered'; at: number }
  | { type: 'closed' }
  | { type: 'failed'; error: string }

export interface ModelThread {
  /** Serves `scenario` (one model at a time); resolves with its base URL. */
  start(scenario: Scenario): Promise<string>
  /** When the current model finished answering each request so far, in this thread's `performance.now()`. */
  answered(): number[]
  /** Closes the current model. */
  close(): Promise<void>
  terminate(): Promise<void>
}

export function startModelThread(): ModelThread {
  // tsx's loader is registered in the thread first: workers do not inherit it from the main thread.
  const worker = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(require('node:worker_threads').workerData) })`,
    { eval: true, workerData: import.meta.url },
  )
  let answered: number[] = []
  let waiting: { resolve: (m: FromWorker) => void; reject: (e: Error) => void } | null = null
  worker.on('message', (m: FromWorker) => {
    if (m.type === 'answered') return void answered.push(m.at - performance.timeOrigin)
    const w = waiting
    waiting = null
    if (m.type === 'failed') w?.reject(new Error(m.error))
    else w?.resolve(m)
  })
  // A thread that failed or ended answers nothing more: what waits for it, and every later ask, fails.
  let dead: Error | undefined
  const die = (e: Error): void => {
    dead ??= e
    waiting?.reject(dead)
    waiting = null
  }
  worker.on('error', die)
  worker.on('exit', (code) => die(new Error(`the scripted model's thread ended (exit code ${code})`)))
  const ask = (msg: ToWorker): Promise<FromWorker> =>
    new Promise((resolve, reject) => {
      if (dead) return reject(dead)
      waiting = { resolve, reject }
      worker.postMessage(msg)
    })
  return {
    async start(scenario) {
      answered = []
      const m = await ask({ type: 'start', scenario })
      return m.type === 'started' ? m.baseUrl : ''
    },
    answered: () => [...answered],
    async close() {
      await ask({ type: 'close' })
    },
    async terminate() {
      await worker.terminate()
    },
  }
}

// In the worker started above (and nowhere else): one scripted model at a time, as the main thread asks.
if (!isMainThread && parentPort && workerData === import.meta.url) {
  const port = parentPort
  let model: ScriptedModel | undefined
  const tell = (m: FromWorker): void => port.postMessage(m)
  port.on('message', (msg: ToWorker) => {
    void (async () => {
      try {
        if (msg.type === 'start') {
          model = await startScriptedModel({
            scenario: msg.scenario,
            onRequest: () => tell({ type: 'answered', at: performance.timeOrigin + performance.now() }),
          })
          tell({ type: 'started', baseUrl: model.baseUrl })
        } else {
          await model?.close()
          model = undefined
          tell({ type: 'closed' })
        }
      } catch (e) {
        tell({ type: 'failed', error: e instanceof Error ? e.message : String(e) })
      }
    })()
  })
}
