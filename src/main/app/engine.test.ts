import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { SessionLogError } from '../session/log'
import {
  connectModel,
  DEFAULT_ENGINE_SETTINGS,
  launchSession,
  prepareEngine,
  readSessionStart,
  type LaunchOptions,
} from './engine'

describe('launchSession', () => {
  let base: string
  let workspace: string
  let sessionsDir: string
  let shared: Omit<LaunchOptions, 'from' | 'approvals'>
  beforeAll(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-launch-')))
    workspace = join(base, 'ws')
    sessionsDir = join(base, 'sessions')
    await mkdir(workspace)
    await writeFile(join(workspace, 'README.md'), '# tiny\n\nA tiny project.\n')
    const { registry } = await prepareEngine()
    shared = { workspace, registry, model: {}, settings: { ...DEFAULT_ENGINE_SETTINGS, sessionsDir } }
  })
  afterEach(() => {
    vi.unstubAllEnvs()
  })
  afterAll(async () => {
    await rm(base, { recursive: true, force: true })
  })

  it('continues a demo session where its log stopped: the script resumes after the turns already answered', async () => {
    // No key and no base URL: the built-in demo answers (offline, scripted).
    vi.stubEnv('ANTHROPIC_API_KEY', '')
    vi.stubEnv('ANTHROPIC_BASE_URL', '')
    const task = `${'Look around this project and leave a note. '.repeat(6)}\nsecond line`
    const first = await launchSession({ ...shared, approvals: 'pause', from: { task } })
    expect(first.model.demo).toBe(true)
    // The demo's second turn writes a note, which asks: `pause` stops the run there.
    expect(await first.session.run(task)).toMatchObject({ status: 'paused' })
    await first.session.close()
    await first.model.close()

    const start = await readSessionStart(sessionsDir, first.session.sessionId)
    expect(start.created.workspace).toBe(workspace)
    // The title is the task's first line, cut to fit a list row.
    expect(start.created.title).toBe(task.split('\n')[0]!.slice(0, 120))
    expect(start.turnsDone).toBe(2)

    const again = await launchSession({ ...shared, approvals: 'all', from: { resume: start } })
    expect(again.warnings).toEqual([])
    expect(await again.session.continue()).toEqual({ status: 'finished' })
    await again.session.close()
    await again.model.close()
    // Had the script started over, the model would have answered more than the demo's three turns.
    expect((await readSessionStart(sessionsDir, first.session.sessionId)).turnsDone).toBe(3)
    expect(await readFile(join(workspace, 'LANES_DEMO.md'), 'utf8')).toContain('tiny')
  })

  it('fails, leaving nothing open, when the session is open elsewhere', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', '')
    vi.stubEnv('ANTHROPIC_BASE_URL', '')
    const open = await launchSession({ ...shared, approvals: 'none', from: { task: 'hold it open' } })
    const start = await readSessionStart(sessionsDir, open.session.sessionId)
    await expect(
      launchSession({ ...shared, approvals: 'none', from: { resume: start } }),
    ).rejects.toMatchObject({
      code: 'locked',
    })
    await open.session.close()
    await open.model.close()
    // Once closed, it opens.
    const reopened = await launchSession({ ...shared, approvals: 'none', from: { resume: start } })
    await reopened.session.close()
    await reopened.model.close()
  })

  it('readSessionStart names a missing session and refuses an id that is not a file name', async () => {
    await expect(readSessionStart(sessionsDir, 'no-such-session')).rejects.toMatchObject({
      code: 'not-found',
    })
    const bad = await readSessionStart(sessionsDir, '../escape').catch((e: unknown) => e)
    expect(bad).toBeInstanceOf(SessionLogError)
    expect((bad as SessionLogError).code).toBe('invalid-id')
  })
})

describe('connectModel', () => {
  afterEach(() => {
    vi.unstubAllEnvs()
  })

  it("a base URL set back to the default in Settings (null) wins over ANTHROPIC_BASE_URL; absent, the environment's is used", async () => {
    vi.stubEnv('ANTHROPIC_BASE_URL', 'http://127.0.0.1:9/dead')
    const chosen = await connectModel({ apiKey: 'sk-ant-test', baseUrl: null }, tmpdir())
    expect(chosen.baseUrl).toBeUndefined()
    expect(chosen.demo).toBe(false)
    const fromEnv = await connectModel({ apiKey: 'sk-ant-test' }, tmpdir())
    expect(fromEnv.baseUrl).toBe('http://127.0.0.1:9/dead')
    const saved = await connectModel({ apiKey: 'sk-ant-test', baseUrl: 'http://127.0.0.1:8/new' }, tmpdir())
    expect(saved.baseUrl).toBe('http://127.0.0.1:8/new')
  })
})
