import { lstatSync, type Stats } from 'node:fs'
import { lstat } from 'node:fs/promises'

/** What is at `path` (not following a last link), or null when nothing is: the path or a folder of it is gone. */
export async function lstatIfPresent(path: string): Promise<Stats | null> {
  try {
    return await lstat(path)
  } catch (error) {
    if (isAbsence(error)) return null
    throw error
  }
}

/** The same by a direct system call, for batch work that gives the event loop back itself (TimeSlices). */
export function lstatIfPresentSync(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null
  } catch (error) {
    if (isAbsence(error)) return null
    throw error
  }
}

function isAbsence(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}
