import { createHash } from 'node:crypto'
import { createReadStream, promises as fs, type Stats } from 'node:fs'
import { dirname } from 'node:path'
import { removeFile, writeFileAtomic, type WriteBatch } from './atomic-write'
import { lstatIfPresent } from './lstat-if-present'
import { dirToken, fileToken, linkToken, parseToken, type PathToken } from './path-token'

/**
 * Puts one path back to a recorded state (a path token: absent, a file with its content and mode, a symbolic
 * link, a folder): what undo, rewind and a landing's roll-back do to each path. A file is written atomically
 * (through its checked folder, as every write), a link made beside and renamed over, a folder made or
 * re-moded; removing a folder removes only an empty one (what was in it has states of its own, put back
 * first). Returns why it failed, or undefined.
 */
export async function putPathState(
  path: string,
  token: PathToken,
  content: () => Promise<Buffer>,
  opts: { batch?: WriteBatch; expect?: { mtimeMs: number; size: number } | null } = {},
): Promise<string | undefined> {
  const want = parseToken(token)
  // The folder is the one recorded, not a link to elsewhere put in its place since: nothing is made,
  // removed or re-moded through it. (A file's write checks its folder itself, through the folder.)
  const real = await fs.realpath(dirname(path)).catch(() => null)
  if (real !== null && real !== dirname(path))
    return 'is in a folder that is no longer where it was; left as it is'
  let now: Stats | null = null
  try {
    now = await fs.lstat(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      return `could not be looked at (${message(error)})`
  }
  // In a batch, the folder whose entries a structural change (a folder, a link) alters is fsynced by the batch's
  // sync, as the folders its files were written into are: what the rewind reports done is on disk.
  const touched = () => opts.batch?.touched(dirname(path))
  try {
    switch (want.kind) {
      case 'absent': {
        if (now === null) return undefined
        if (now.isDirectory()) {
          await fs.rmdir(path)
          touched()
          return undefined
        }
        const removed = await removeFile(path, opts.batch ? { batch: opts.batch } : {})
        return removed.ok ? undefined : removed.reason
      }
      case 'dir': {
        if (now !== null && !now.isDirectory()) await fs.unlink(path)
        if (now === null || !now.isDirectory()) await fs.mkdir(path, { mode: 0o700 })
        await fs.chmod(path, want.mode)
        touched()
        return undefined
      }
      case 'link': {
        if (now?.isDirectory()) await fs.rmdir(path)
        const temp = `${path}.lanes-${process.pid}-${Date.now().toString(36)}`
        await fs.mkdir(dirname(path), { recursive: true })
        await fs.symlink(want.target, temp)
        await fs.rename(temp, path).catch(async (error: unknown) => {
          await fs.unlink(temp).catch(() => undefined)
          throw error
        })
        touched()
        return undefined
      }
      case 'file': {
        if (now?.isDirectory()) await fs.rmdir(path)
        else if (now?.isSymbolicLink()) await fs.unlink(path)
        const fresh = now === null || now.isDirectory() || now.isSymbolicLink()
        const written = await writeFileAtomic(path, await content(), {
          ...(opts.batch ? { batch: opts.batch } : {}),
          ...(fresh ? { expect: null } : opts.expect !== undefined ? { expect: opts.expect } : {}),
          ...(want.mode !== undefined ? { mode: want.mode } : {}),
        })
        if (!written.ok) return written.reason
        if (want.mode !== undefined) await fs.chmod(path, want.mode)
        return undefined
      }
    }
  } catch (error) {
    return `could not be put back (${message(error)})`
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** What is at `path` now, as a path token (a file read whole and hashed). */
export async function tokenAt(path: string): Promise<PathToken> {
  const st = await lstatIfPresent(path)
  if (st === null) return null
  if (st.isSymbolicLink()) return linkToken(await fs.readlink(path))
  if (st.isDirectory()) return dirToken(st.mode)
  if (!st.isFile()) return `link:\0${st.mode}` // neither: matches no token a change records
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return fileToken(hash.digest('hex'), st.mode)
}
