import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { EventOf, SessionEvent } from '../../shared/events'
import type { Scenario } from '../agent/scenario'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { runLanes } from './test-fixtures/run-lanes'

// How retries, refusals and long waits appear in `lanes run`'s JSON lines and exit codes (issue 11).

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function lanesRun(
  scenario: Scenario,
): Promise<{ code: number; events: SessionEvent[]; stderr: string }> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-cli-protocol-')))
  await mkdir(join(base, 'ws'))
  const model: ScriptedModel = await startScriptedModel({ scenario, strict: true })
  cleanups.push(async () => {
    await model.close()
    await rm(base, { recursive: true, force: true })
  })
  return runLanes([
    'run',
    '--workspace',
    join(base, 'ws'),
    '--task',
    'go',
    '--base-url',
    model.baseUrl,
    '--sessions-dir',
    join(base, 'sessions'),
    '--model',
    'claude-sonnet-5-5',
  ])
}

describe('lanes run and the API’s hard cases', () => {
  it('prints each retry as a JSON line with attempt, of how many, delay and reason', async () => {
    const { code, events } = await lanesRun({
      turns: [{ blocks: [{ text: 'back' }], http: { status: 529 } }],
    })
    expect(code).toBe(0)
    const retry = events.find((e): e is EventOf<'model.retrying'> => e.type === 'model.retrying')
    expect(retry).toMatchObject({ attempt: 2, of: 6, reason: 'overloaded' })
    expect(retry!.delayMs).toBeGreaterThan(0)
  })

  it('a long retry-after fails the run (exit 1) with the time to try again, in the event and on stderr', async () => {
    const { code, events, stderr } = await lanesRun({
      turns: [{ blocks: [{ text: 'later' }], http: { status: 429, retryAfter: 5400 } }],
    })
    expect(code).toBe(1)
    const failed = events.find((e): e is EventOf<'run.failed'> => e.type === 'run.failed')
    expect(failed?.retryAt).toBeGreaterThan(Date.now() + 5_000_000)
    expect(stderr).toMatch(/try again after \d\d:\d\d/)
  })

  it('a refusal finishes the run (exit 0) as refused, with the API’s explanation', async () => {
    const { code, events } = await lanesRun({
      turns: [
        {
          blocks: [{ text: 'No.' }],
          stop: 'refusal',
          stopDetails: { category: null, explanation: 'This request was declined.' },
        },
      ],
    })
    expect(code).toBe(0)
    const finished = events.find((e): e is EventOf<'run.finished'> => e.type === 'run.finished')
    expect(finished).toMatchObject({
      reason: 'refusal',
      stopDetails: { explanation: 'This request was declined.' },
    })
  })
})
