import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { runLanes } from './test-fixtures/run-lanes'
import { useTempDir } from '../test-fixtures/temp-dir'

describe('lanes run', () => {
  const base = useTempDir('lanes-cli-', 'all')
  let workspace: string
  let sessionsDir: string
  let model: ScriptedModel
  beforeAll(async () => {
    workspace = join(base(), 'ws')
    sessionsDir = join(base(), 'sessions')
    await mkdir(workspace)
    model = await startScriptedModel({
      scenario: {
        turns: [
          { blocks: [{ tool: 'write_file', input: { path: 'note.md', content: 'hello\n' } }] },
          { blocks: [{ text: 'Wrote the note.' }] },
        ],
      },
    })
  })
  afterAll(async () => {
    await model.close()
  })

  it('pauses at an approval (exit 3), then --continue --approve all finishes it (exit 0)', async () => {
    const task = `${'write a note '.repeat(12)}\nwith details on a second line`
    const common = ['--sessions-dir', sessionsDir, '--base-url', model.baseUrl]
    const first = await runLanes(['run', '--workspace', workspace, '--task', task, ...common])
    expect(first.code).toBe(3)
    const created = first.events.find((e) => e.type === 'session.created')
    expect(created).toMatchObject({ workspace, title: task.split('\n')[0]!.slice(0, 120) })
    const sessionId = created!.sessionId
    expect(first.stderr).toContain(`lanes run --continue ${sessionId} --approve all|none`)

    const second = await runLanes(['run', '--continue', sessionId, '--approve', 'all', ...common])
    expect(second.stderr).toBe('')
    expect(second.code).toBe(0)
    expect(second.events.map((e) => e.type)).toContain('run.resumed')
    expect(await readFile(join(workspace, 'note.md'), 'utf8')).toBe('hello\n')
  })

  it('names the folder when --continue finds no such session (exit 1)', async () => {
    const result = await runLanes(['run', '--continue', 'no-such-session', '--sessions-dir', sessionsDir])
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(`lanes run: no session "no-such-session" in ${sessionsDir}.\n`)
  })
})
