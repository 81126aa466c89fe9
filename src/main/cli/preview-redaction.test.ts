import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { sessionPaths } from '../session/log'
import { runLanes } from './test-fixtures/run-lanes'

/**
 * Issue 20: what the user reviews is logged through the one redactor, like every tool result. A secret value of
 * the workspace's `.env` that the model put in a write's content and in a command's text shows up in the
 * session log (and so in the review and a replay) only as `[secret from .env hidden]`.
 */
const SECRET = 'sk-test-Zx81mQ7pL2vR'

let base: string
let model: ScriptedModel

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-preview-redaction-')))
})
afterAll(async () => {
  await model?.close()
  await rm(base, { recursive: true, force: true })
})

describe('approval previews in the session log', { timeout: 60_000 }, () => {
  it('hide a secret value of the workspace in a write’s diff and a command’s text', async () => {
    const workspace = join(base, 'ws')
    const sessionsDir = join(base, 'sessions')
    await mkdir(workspace, { recursive: true })
    await writeFile(join(workspace, '.env'), `API_KEY=${SECRET}\nPORT=3000\n`)
    model = await startScriptedModel({
      scenario: {
        turns: [
          {
            blocks: [
              {
                tool: 'write_file',
                input: { path: 'config.js', content: `module.exports = { key: '${SECRET}', port: 3000 }\n` },
              },
              { tool: 'bash', input: { command: `touch ${SECRET}.txt` } },
            ],
          },
        ],
      },
    })
    const ran = await runLanes([
      'run',
      '--workspace',
      workspace,
      '--task',
      'configure it',
      '--sessions-dir',
      sessionsDir,
      '--base-url',
      model.baseUrl,
    ])
    expect(ran.code, ran.stderr).toBe(3) // paused at the review
    const sessionId = ran.events.find((e) => e.type === 'session.created')!.sessionId
    const lines = (await readFile(sessionPaths(sessionsDir, sessionId).log, 'utf8')).trim().split('\n')
    const requested = lines
      .map((l) => JSON.parse(l) as SessionEvent)
      .filter((e) => e.type === 'approval.requested')
    expect(requested).toHaveLength(2)
    const [write, bash] = requested.map((e) => (e.type === 'approval.requested' ? e.preview : undefined))
    expect(write?.kind === 'write' && write.after).toBe(
      "module.exports = { key: '[secret from .env hidden]', port: 3000 }\n",
    )
    expect(write?.kind === 'write' && write.hunks.flatMap((h) => h.lines)).toContain(
      "+module.exports = { key: '[secret from .env hidden]', port: 3000 }",
    )
    expect(bash?.kind === 'bash' && bash.command).toBe('touch [secret from .env hidden].txt')
    for (const line of lines.filter((l) => l.includes('"approval.requested"')))
      expect(line).not.toContain(SECRET)
    // A value too common to be a secret is left as it is.
    expect(write?.kind === 'write' && write.after).toContain('port: 3000')
  })
})
