import { spawn } from 'node:child_process'
import { lstat, mkdir, mkdtemp, opendir, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../shared/events'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { readSession, sessionPaths } from '../session/log'
import { captureSupport } from '../tools/bash/capture/overlay'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { runLanes } from './test-fixtures/run-lanes'

/**
 * Issue 20: a crash during a command's landing, for real. `lanes run` in a process of its own approves a command
 * that adds 20,000 files and changes 200; the process is killed (SIGKILL) the moment its `command.landing` line
 * is out, while the files are being moved in. The next start (`lanes run --continue`) must leave the workspace
 * either as before the command or with every change landed, never in between, and the log consistent: every line
 * readable, the landing closed once, the call reported as interrupted, the layer gone.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the landing crash test: ${JSON.stringify(captureSupport())}`)

const child = fileURLToPath(new URL('./test-fixtures/lanes-child.ts', import.meta.url))
const root = fileURLToPath(new URL('../../../', import.meta.url))
const ADDED = 20_000
const CHANGED = 200

let base: string
let model: ScriptedModel | undefined
beforeAll(async () => {
  // Not under /tmp: the sandbox has a private tmpfs there.
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  base = await realpath(await mkdtemp(join(cache, 'lanes-landing-crash-')))
})
afterAll(async () => {
  await model?.close()
  await rm(base, { recursive: true, force: true })
})

async function snapshot(workspace: string): Promise<{ added: number; changed: number; original: number }> {
  const added = (await readdir(join(workspace, 'gen')).catch(() => [])).length
  let changed = 0
  let original = 0
  for (let i = 0; i < CHANGED; i++) {
    const text = await readFile(join(workspace, 'src', `f${i}.txt`), 'utf8')
    if (text === `changed ${i}\n`) changed++
    else if (text === `original ${i}\n`) original++
  }
  return { added, changed, original }
}

/** Resolves once the command's new folder has an entry in the workspace. */
async function landingBegun(workspace: string): Promise<void> {
  for (;;) {
    const dir = await opendir(join(workspace, 'gen')).catch(() => null)
    const first = dir ? await dir.read() : null
    await dir?.close()
    if (first) return
    await new Promise((r) => setTimeout(r, 1))
  }
}

describe.skipIf(!overlay)('a crash while a command’s changes land', () => {
  it(
    'is finished or rolled back on the next start, never left half-landed',
    { timeout: 240_000 },
    async () => {
      const workspace = join(base, 'ws')
      const sessionsDir = join(base, 'sessions')
      await mkdir(join(workspace, 'src'), { recursive: true })
      // The files are added to a folder the workspace already has: each lands by a rename of its own (a new folder
      // lands whole, by one rename, leaving no moment to be killed in).
      await mkdir(join(workspace, 'gen'))
      for (let i = 0; i < CHANGED; i++)
        await writeFile(join(workspace, 'src', `f${i}.txt`), `original ${i}\n`)
      await writeFile(
        join(workspace, 'make.js'),
        [
          "const fs = require('fs')",
          `for (let i = 0; i < ${ADDED}; i++) fs.writeFileSync('gen/' + i + '.js', 'module.exports = ' + i + '\\n')`,
          `for (let i = 0; i < ${CHANGED}; i++) fs.writeFileSync('src/f' + i + '.txt', 'changed ' + i + '\\n')`,
        ].join('\n'),
      )
      model = await startScriptedModel({
        scenario: {
          turns: [
            { blocks: [{ tool: 'bash', input: { command: 'node make.js', timeout: 300 } }] },
            { blocks: [{ text: 'Done.' }] },
          ],
        },
      })
      const args = ['--sessions-dir', sessionsDir, '--base-url', model.baseUrl, '--approve', 'all']

      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', child, 'run', '--workspace', workspace, '--task', 'generate', ...args],
        { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
      )
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      let sessionId = ''
      let callId = ''
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: proc.stdout! }).on('line', (line) => {
          const event = JSON.parse(line) as SessionEvent
          if (event.type === 'session.created') sessionId = event.sessionId
          if (event.type === 'command.landing') {
            callId = event.callId
            // Killed once the first of its files is in: the landing is under way.
            void landingBegun(workspace).then(() => {
              proc.kill('SIGKILL')
              resolve()
            })
          }
        })
        proc.once('exit', (code) => reject(new Error(`lanes run ended (${code}) before its landing began`)))
      })
      await exited
      const log = sessionPaths(sessionsDir, sessionId).log
      const cut = await readSession(log)
      // Killed mid-landing: the intent is in the log, its outcome is not; part of the change set may be in.
      expect(cut.events.some((e) => e.type === 'command.landing')).toBe(true)
      expect(cut.events.some((e) => e.type === 'command.landed')).toBe(false)
      const killed = await snapshot(workspace)
      expect(killed.added, JSON.stringify(killed)).toBeGreaterThan(0)
      expect(killed.added + killed.changed, JSON.stringify(killed)).toBeLessThan(ADDED + CHANGED)
      console.log(`killed mid-landing with ${killed.added} added and ${killed.changed} changed files in`)

      // The next start.
      const next = await runLanes(['run', '--continue', sessionId, ...args])
      expect(next.code, next.stderr).toBe(0)

      const after = await snapshot(workspace)
      const untouched = { added: 0, changed: 0, original: CHANGED }
      const landed = { added: ADDED, changed: CHANGED, original: 0 }
      expect([untouched, landed], `killed at ${JSON.stringify(killed)}`).toContainEqual(after)
      // Rolled back: the folder the workspace had is still there, empty.
      if (after.added === 0) expect((await lstat(join(workspace, 'gen'))).isDirectory()).toBe(true)

      const { events, warnings } = await readSession(log)
      expect(warnings).toEqual([])
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
      const closed = events.filter((e) => e.type === 'command.landed')
      expect(closed).toEqual([
        expect.objectContaining({
          callId,
          recovered: true,
          outcome: after.added === 0 ? 'rolled-back' : 'done',
        }),
      ])
      const finished = events.find((e) => e.type === 'tool.finished' && e.callId === callId)
      expect(finished?.type === 'tool.finished' && finished.output).toMatch(/^Interrupted: Lanes stopped/)
      expect(events.at(-1)?.type).toBe('run.finished')
      // The layer that held what was still to land is gone with the landing.
      const capture = join(sessionPaths(sessionsDir, sessionId).outputDir, 'capture')
      expect(await readdir(capture).catch(() => [])).toEqual([])
    },
  )
})
