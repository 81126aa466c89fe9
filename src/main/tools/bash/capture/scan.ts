import { lstatSync, opendirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { CommandChangeCounts, CommandChangedPath } from '../../../../shared/events'

/**
 * Where no copy-on-write layer can be had (macOS, a kernel without unprivileged overlay, a command run outside
 * the sandbox), a command's changes are found by comparing the workspace's metadata before and after it:
 * type, size, mode, modification time, inode and link target of every entry. What changed is reported; none
 * of it can be undone (its previous content was never kept), and the result says so. A change that keeps
 * size, mtime and inode (rare: a tool restoring the mtime) is not seen; a folder with more than MAX_ENTRIES
 * entries in all is not scanned.
 */

export const MAX_SCAN_ENTRIES = 1_000_000

type Meta = string

export interface Scan {
  entries: Map<string, Meta>
  /** Set when the workspace was too large (or unreadable) to scan whole. */
  incomplete?: string
}

export function scanWorkspace(workspace: string): Scan {
  const entries = new Map<string, Meta>()
  const pending = ['']
  while (pending.length > 0) {
    const rel = pending.pop() as string
    let dir
    try {
      dir = opendirSync(rel === '' ? workspace : join(workspace, rel))
    } catch {
      continue
    }
    try {
      for (let d = dir.readSync(); d !== null; d = dir.readSync()) {
        const child = rel === '' ? d.name : `${rel}/${d.name}`
        let meta: Meta
        try {
          const st = lstatSync(join(workspace, child))
          const kind = st.isDirectory()
            ? 'dir'
            : st.isSymbolicLink()
              ? 'link'
              : st.isFile()
                ? 'file'
                : 'other'
          const target = kind === 'link' ? readlinkSync(join(workspace, child)) : ''
          meta =
            kind === 'dir'
              ? `dir ${st.mode & 0o7777}`
              : `${kind} ${st.mode & 0o7777} ${st.size} ${st.mtimeMs} ${st.ino} ${target}`
          if (kind === 'dir') pending.push(child)
        } catch {
          continue
        }
        entries.set(child, meta)
        if (entries.size >= MAX_SCAN_ENTRIES)
          return { entries, incomplete: `more than ${MAX_SCAN_ENTRIES.toLocaleString('en')} entries` }
      }
    } finally {
      dir.closeSync()
    }
  }
  return { entries }
}

export function compareScans(
  before: Scan,
  after: Scan,
  shown: number,
): { counts: CommandChangeCounts; paths: CommandChangedPath[] } {
  const counts: CommandChangeCounts = { added: 0, changed: 0, removed: 0, modeChanged: 0 }
  const paths: CommandChangedPath[] = []
  const kindOf = (meta: Meta) => meta.slice(0, meta.indexOf(' ')) as 'file' | 'link' | 'dir'
  const note = (relPath: string, change: CommandChangedPath['change'], meta: Meta) => {
    counts[change === 'mode' ? 'modeChanged' : change]++
    if (paths.length < shown)
      paths.push({
        relPath,
        change,
        kind: kindOf(meta) === 'dir' ? 'dir' : kindOf(meta) === 'link' ? 'link' : 'file',
      })
  }
  for (const [rel, meta] of after.entries) {
    const was = before.entries.get(rel)
    if (was === undefined) note(rel, 'added', meta)
    else if (was !== meta) {
      const [k1, m1, ...r1] = was.split(' ')
      const [k2, m2, ...r2] = meta.split(' ')
      note(rel, k1 === k2 && m1 !== m2 && r1.join(' ') === r2.join(' ') ? 'mode' : 'changed', meta)
    }
  }
  for (const [rel, meta] of before.entries) if (!after.entries.has(rel)) note(rel, 'removed', meta)
  return { counts, paths }
}
