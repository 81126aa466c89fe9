import { promises as fs } from 'node:fs'
import path from 'node:path'
import { findGitDir } from './git-dir'

/**
 * The paths a git repository tracks, read from its index file (`.git/index`) as bytes, without running git: a
 * downloaded folder's `.git/config` can make git run programs (core.fsmonitor), so Lanes never runs git on a
 * folder to learn about it. Formats 2, 3 and 4 (path prefix compression), SHA-1 and SHA-256 repositories.
 *
 * Returns null when the folder has no index (no repository, or one without a commit or a staged file), and
 * throws when there is one that cannot be read as an index: the caller then assumes the worst.
 */

/** An index larger than this is not read (a million-file monorepo's is about 100 MB). */
const MAX_INDEX_BYTES = 512 * 1024 * 1024

export class GitIndexError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'GitIndexError'
  }
}

export async function trackedPaths(root: string): Promise<string[] | null> {
  const repo = await findGitDir(root)
  if (repo === null) return null
  const { gitDir } = repo
  let data: Buffer
  try {
    const info = await fs.stat(path.join(gitDir, 'index'))
    if (info.size > MAX_INDEX_BYTES)
      throw new GitIndexError(`the git index is larger than ${MAX_INDEX_BYTES} bytes`)
    data = await fs.readFile(path.join(gitDir, 'index'))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  return parseIndex(data, repo.hashLength)
}

/** The paths of the index's entries, in its order. Throws GitIndexError on anything that does not fit. */
export function parseIndex(data: Buffer, hashLen: number): string[] {
  if (data.length < 12 || data.toString('latin1', 0, 4) !== 'DIRC') throw new GitIndexError('not a git index')
  const version = data.readUInt32BE(4)
  if (version < 2 || version > 4) throw new GitIndexError(`git index version ${version} is not known`)
  const count = data.readUInt32BE(8)
  const paths: string[] = []
  let at = 12
  let previous: Buffer = Buffer.alloc(0)
  // Stat data (40 bytes), the object id, then 16 bits of flags.
  const fixed = 40 + hashLen + 2
  for (let i = 0; i < count; i++) {
    if (at + fixed > data.length) throw new GitIndexError('the git index is cut short')
    const flags = data.readUInt16BE(at + 40 + hashLen)
    const extended = version >= 3 && (flags & 0x4000) !== 0
    const nameAt = at + fixed + (extended ? 2 : 0)
    let name: Buffer
    if (version === 4) {
      // The name is the previous one less its last N bytes, then the bytes up to a NUL.
      let p = nameAt
      let byte = data[p++] ?? 0
      let strip = byte & 0x7f
      while (byte & 0x80) {
        byte = data[p++] ?? 0
        strip = ((strip + 1) << 7) | (byte & 0x7f)
      }
      const end = data.indexOf(0, p)
      if (end < 0 || strip > previous.length) throw new GitIndexError('a git index entry does not fit')
      name = Buffer.concat([previous.subarray(0, previous.length - strip), data.subarray(p, end)])
      at = end + 1
    } else {
      const end = data.indexOf(0, nameAt)
      if (end < 0) throw new GitIndexError('a git index entry does not fit')
      name = data.subarray(nameAt, end)
      // Entries are padded with NULs to a multiple of 8 bytes.
      at += (fixed + (extended ? 2 : 0) + name.length + 8) & ~7
    }
    previous = name
    paths.push(name.toString('utf8'))
  }
  return paths
}
