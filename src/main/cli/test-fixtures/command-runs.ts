import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { startScriptedModel, type ScriptedModel } from '../../agent/scripted-model'
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
  return { prepare, base }
}

/** Every entry under `dir`: a file's mode and content, a link's target, a folder's mode. */
export async function tree(dir: string, rel = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of (await readdir(join(dir, rel))).sort()) {
    const child = rel === '' ? name : `${rel}/${name}`
    const st = await lstat(join(dir, child))
    if (st.isSymbolicLink()) out[child] = `-> ${await readlink(join(dir, child))}`
    else if (st.isDirectory()) {
      out[child + '/'] = (st.mode & 0o777).toString(8)
      Object.assign(out, await tree(dir, child))
    } else out[child] = `${(st.mode & 0o777).toString(8)} ${await readFile(join(dir, child), 'utf8')}`
  }
  return out
}
