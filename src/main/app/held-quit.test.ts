import { spawn } from 'node:child_process'
import { access, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { startScriptedModel } from '../agent/scripted-model'
import { readSession, sessionPaths } from '../session/log'
import { captureSupport } from '../tools/bash/capture/overlay'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { createAppApi, dispatchRequest } from './app-api'

/**
 * Issue 20: quitting the app while a command's held changes wait for review leaves the review as it stands
 * (stopping the run would discard them); the next start offers it through the app's API, pages it, and lands
 * only what the folder decisions accept.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the held-review quit test: ${JSON.stringify(captureSupport())}`)

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

describe.skipIf(!overlay)('a held review when the app quits', () => {
  it('is left as it stands, and the next start pages it, takes folder decisions and lands only what they accept', async () => {
    const cache = join(process.cwd(), 'node_modules', '.cache')
    await mkdir(cache, { recursive: true })
    const base = await realpath(await mkdtemp(join(cache, 'lanes-held-quit-')))
    const workspace = join(base, 'ws')
    const sessionsDir = join(base, 'sessions')
    await mkdir(workspace)
    await writeFile(join(workspace, 'out.txt'), 'before\n')
    await writeFile(
      join(workspace, 'change.js'),
      `const fs = require('fs')
fs.mkdirSync('.husky')
fs.writeFileSync('.husky/pre-commit', 'echo hook\\n')
fs.writeFileSync('.env', 'A=1\\n')
fs.writeFileSync('out.txt', 'made by the command\\n')
`,
    )
    cleanups.push(() => rm(base, { recursive: true, force: true }))
    const quitChild = fileURLToPath(new URL('./test-fixtures/held-quit-child.ts', import.meta.url))
    const proc = spawn(process.execPath, ['--import', 'tsx', quitChild, workspace, sessionsDir], {
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const lines: string[] = []
    createInterface({ input: proc.stdout! }).on('line', (line) => lines.push(line))
    // The quit does not wait for the review (it would wait forever): the process ends by itself.
    const code = await new Promise((resolve) => proc.once('exit', resolve))
    expect(code).toBe(0)
    expect(lines).toContain('quit')
    const sessionId = lines.find((l) => l.startsWith('session '))!.slice('session '.length)
    const callId = lines.find((l) => l.startsWith('call '))!.slice('call '.length)
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('before\n')
    const { events: logged } = await readSession(sessionPaths(sessionsDir, sessionId).log)
    // Not stopped: no review outcome, no result for the call.
    expect(logged.map((e) => e.type)).not.toContain('command.reviewed')
    expect(logged.map((e) => e.type)).not.toContain('tool.finished')

    // The next start: the app's API, as the review screen uses it.
    const model = await startScriptedModel({ scenario: { turns: [{ blocks: [{ text: 'Done.' }] }] } })
    cleanups.push(() => model.close())
    const api = await createAppApi({ sessionsDir, name: 'Lanes', version: '1', transport: 'web', workspace })
    cleanups.push(() => api.shutdown())
    await dispatchRequest(api, 'settings:set', { baseUrl: model.baseUrl })
    const events: SessionEvent[] = []
    api.subscribe((channel, payload) => {
      if (channel === 'session:events') events.push(...(payload as { events: SessionEvent[] }).events)
    })
    // Opening a folder of the review continues the session, which asks the review again.
    const page = await dispatchRequest(api, 'held:files', {
      sessionId,
      callId,
      folder: '',
      offset: 0,
      limit: 10,
    })
    expect(
      page.ok && (page.value as { files: { relPath: string }[] }).files.map((f) => f.relPath).sort(),
    ).toEqual(['.env', '.husky'])
    const inFolder = await dispatchRequest(api, 'held:files', {
      sessionId,
      callId,
      folder: '.husky',
      offset: 0,
      limit: 10,
    })
    expect(inFolder.ok && (inFolder.value as { total: number }).total).toBe(1)
    const replied = await dispatchRequest(api, 'approval:reply', {
      sessionId,
      decisions: [
        {
          callId,
          decision: 'approved',
          folders: [
            { folder: '', decision: 'accepted' },
            { folder: '.husky', decision: 'rejected' },
          ],
        },
      ],
    })
    expect(replied.ok).toBe(true)
    for (let i = 0; i < 500 && !events.some((e) => e.type === 'run.finished'); i++)
      await new Promise((r) => setTimeout(r, 20))
    expect(events.some((e) => e.type === 'run.finished')).toBe(true)
    expect(await readFile(join(workspace, '.env'), 'utf8')).toBe('A=1\n')
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('made by the command\n')
    await expect(access(join(workspace, '.husky'))).rejects.toThrow()
  })
})
