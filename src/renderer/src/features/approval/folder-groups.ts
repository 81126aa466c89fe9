import type { HeldFile, HeldGroup } from '../../../../shared/events'

/**
 * Changes counted by folder, for the held review and a command's card alike. A module of its own so the card
 * (first paint) does not pull in the review and its diff view.
 */

/** The folder a workspace path is in ('' for the top level). */
export function folderOf(relPath: string): string {
  const at = relPath.lastIndexOf('/')
  return at < 0 ? '' : relPath.slice(0, at)
}

/** Changes counted by the folder that holds them, in folder order; those with a reason count as protected. */
export function groupsByFolder(
  changes: readonly { relPath: string; change: HeldFile['change']; reason?: string }[],
): HeldGroup[] {
  const groups = new Map<string, HeldGroup>()
  for (const c of changes) {
    const folder = folderOf(c.relPath)
    const g = groups.get(folder) ?? { folder, added: 0, changed: 0, removed: 0, mode: 0, protected: 0 }
    g[c.change]++
    if (c.reason !== undefined) g.protected++
    groups.set(folder, g)
  }
  return [...groups.values()].sort((a, b) => (a.folder < b.folder ? -1 : 1))
}

export const CHANGE_WORDS: Record<HeldFile['change'], string> = {
  added: 'added',
  changed: 'changed',
  removed: 'removed',
  mode: 'permissions changed',
}

/** "3 added, 1 changed": a group's counts in words. */
export function countsText(g: HeldGroup): string {
  return (['added', 'changed', 'removed', 'mode'] as const)
    .filter((k) => g[k] > 0)
    .map((k) => `${g[k]} ${CHANGE_WORDS[k]}`)
    .join(', ')
}
