import type { Stats } from 'node:fs'
import { lstat } from 'node:fs/promises'

/** What is at `path` (not following a last link), or null when nothing is: the path or a folder of it is gone. */
export async function lstatIfPresent(path: string): Promise<Stats | null> {
  try {
    return await lstat(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    throw error
  }
}
