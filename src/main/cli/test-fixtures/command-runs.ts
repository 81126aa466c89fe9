import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { startScriptedModel, type ScriptedModel } from '../../agent/scripted-model'
import { tree } from '../../test-fixtures/tree'
import { runLanes } from './run-lanes'

/**
 * Workspaces whose one `lanes run` call runs an approved command (issue 20: captured, landed, undone), each with
 * its scripted model; made under one folder for the test file (not under /tmp: the sandbox has a private tmpfs
 * there), removed after it with the models.
 */
export function commandRuns(prefix: string) {
  let root: string | undefined
  let n = 0
  const models: ScriptedModel[] = []
  beforeAll(async () => {
    const cache = join(process.cwd(), 'node_modules', '.cache')
    await mkdir(cache, { recursive: true })
    root = await realpath(await mkdtemp(join(cache, prefix)))
  })
  afterAll(async () => {
    for (const model of models) await model.close()
    if (root !== undefined) await rm(root, { recursive: true, force: true })
  })
  const base = (): string => {
    if (root === undefined) throw new Error('commandRuns is read outside a test or hook')
    return root
  }

  /** A workspace, and a scripted model whose one call runs `lines` as a bash script (through node). */
  async function prepare(files: Record<string, string>, lines: string[], sessionsIn?: string) {
    const caseRoot = join(base(), `case-${++n}`)
    const workspace = join(caseRoot, 'ws')
    const sessionsDir = sessionsIn ?? join(caseRoot, 'sessions')
    await mkdir(workspace, { recursive: true })
    for (const [rel, content] of Object.entries(files)) {
      await mkdir(join(workspace, rel, '..'), { recursive: true })
      await writeFile(join(workspace, rel), content)
    }
    const body = JSON.stringify(lines.join('\n'))
    await writeFile(
      join(workspace, 'change.js'),
      `require('node:child_process').execFileSync('/bin/bash', ['-c', ${body}], { stdio: 'inherit' })\n`,
    )
    const model = await startScriptedModel({
      scenario: {
        turns: [
          { blocks: [{ tool: 'bash', input: { command: 'node change.js' } }] },
          { blocks: [{ text: 'Done.' }] },
        ],
      },
    })
    models.push(model)
    const run = (...extra: string[]) =>
      runLanes([
        'run',
        '--workspace',
        workspace,
        '--task',
        'change things',
        '--approve',
        'all',
        '--sessions-dir',
        sessionsDir,
        '--base-url',
        model.baseUrl,
        ...extra,
      ])
    return { root: caseRoot, workspace, sessionsDir, run }
  }
  /**
   * `prepare`, then the run (which must succeed): the workspace before and after it, the session and the call,
   * and the run's events.
   */
  async function landed(files: Record<string, string>, lines: string[], sessionsIn?: string) {
    const t = await prepare(files, lines, sessionsIn)
    const before = await tree(t.workspace)
    const ran = await t.run()
    expect(ran.code, ran.stderr).toBe(0)
    const sessionId = ran.events.find((e) => e.type === 'session.created')?.sessionId ?? ''
    const queued = ran.events.find((e) => e.type === 'tool.queued')
    const callId = queued?.type === 'tool.queued' ? queued.callId : ''
    return { t, ran, before, after: await tree(t.workspace), sessionId, callId }
  }
  return { prepare, landed, base }
}
