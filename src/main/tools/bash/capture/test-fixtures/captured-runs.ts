import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import type { SessionEventDraft } from '../../../../../shared/events'
import { PreimageStore } from '../../../../session/preimages'
import { GIT_WORKSPACE_RULES } from '../../../sensitive-paths'
import { makeToolContext } from '../../../test-fixtures/tool-context'
import { bashTool } from '../../bash'
import { loadBashGrammar } from '../../validate'
import type { CommandChanges } from '../capture'
import type { CaptureHost } from '../land'

/**
 * Workspaces in which the bash tool runs approved commands on a copy-on-write layer (issue 20), each with its
 * session's store and a log kept in memory; made under one folder for the test file (not under /tmp: the sandbox
 * has a private tmpfs there), removed after it.
 */
export function capturedRuns(prefix: string) {
  let base: string | undefined
  let n = 0
  beforeAll(async () => {
    await loadBashGrammar()
    const cache = join(process.cwd(), 'node_modules', '.cache')
    await mkdir(cache, { recursive: true })
    base = await realpath(await mkdtemp(join(cache, prefix)))
  })
  afterAll(async () => {
    if (base !== undefined) await rm(base, { recursive: true, force: true })
  })

  /** A workspace holding `files`, and `run`, which runs one approved command in it. */
  async function setup(files: Record<string, string>) {
    if (base === undefined) throw new Error('capturedRuns is used outside a test')
    const root = join(base, `case-${++n}`)
    const workspace = join(root, 'ws')
    const session = join(root, 'session')
    await mkdir(workspace, { recursive: true })
    await mkdir(session, { recursive: true })
    for (const [rel, content] of Object.entries(files)) {
      await mkdir(join(workspace, rel, '..'), { recursive: true })
      await writeFile(join(workspace, rel), content)
    }
    const store = await PreimageStore.open(join(session, 'preimages'))
    const events: SessionEventDraft[] = []
    const host: CaptureHost = {
      keep: (path, content) => store.put(path, content),
      content: (hash) => store.get(hash),
      log: async (draft) => {
        events.push(draft)
      },
      sync: () => store.flush(),
      landProtected: false,
    }
    /** `onProgress`: what the command prints, as it prints it. */
    const run = async (
      command: string,
      extra: Partial<CaptureHost> = {},
      onProgress: (chunk: string) => void = () => undefined,
    ) => {
      const result = await bashTool.execute(
        { command },
        makeToolContext(workspace, {
          onProgress,
          outputDir: session,
          pathRules: GIT_WORKSPACE_RULES,
          callId: `c${events.length}`,
          approval: { network: false, outsideSandbox: false },
          capture: { ...host, ...extra },
        }),
      )
      return { result, changes: result.metadata?.changes as CommandChanges | undefined }
    }
    return { root, workspace, session, store, events, run }
  }
  return { setup }
}

/** A script the command runs (a shell is not a command the checker lets through; node running one is). */
export async function script(
  workspace: string,
  name: string,
  lines: string[],
  flags = '-ec',
): Promise<string> {
  const body = JSON.stringify(lines.join('\n'))
  await writeFile(
    join(workspace, name),
    `require('node:child_process').execFileSync('/bin/bash', ['${flags}', ${body}], { stdio: 'inherit' })\n`,
  )
  return `node ${name}`
}
