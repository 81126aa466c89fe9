import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** Real temp workspaces for tool tests, on disk like a user's project. */

const made: string[] = []

/** Writes `content` at `rel` under `root`, creating its folders; returns the file's path. */
export async function putFile(root: string, rel: string, content: string | Buffer): Promise<string> {
  const file = path.join(root, rel)
  await fs.mkdir(path.dirname(file), { recursive: true })
  await fs.writeFile(file, content)
  return file
}

/**
 * `<tmp>/<prefix>XXXXXX/ws` holding `files`, by its real path (what tools receive). Its parent folder is
 * outside the workspace, where a session keeps its outputs. `removeWorkspaces` deletes them.
 */
export async function makeWorkspace(
  prefix: string,
  files: Record<string, string | Buffer> = {},
): Promise<string> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), prefix)))
  made.push(base)
  const root = path.join(base, 'ws')
  await fs.mkdir(root)
  for (const [rel, content] of Object.entries(files)) await putFile(root, rel, content)
  return root
}

/** Deletes every workspace made so far (and their parent folders); for `afterEach` or `afterAll`. */
export function removeWorkspaces(): void {
  // `rm -rf` copes with trees deeper than PATH_MAX, which fs.rm does not.
  for (const base of made.splice(0)) execFileSync('rm', ['-rf', base])
}

/** SHA-256 in hex, computed here rather than by the code under test. */
export function sha(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}
