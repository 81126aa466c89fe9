import { z } from 'zod'
import { CommandChangeCounts, CommandChangedPath, HeldGroup } from '../../../../shared/events'
import type { ToolCallState } from '../../../../shared/tool-call'
import { describeContent, isLargeText } from '../approval/ChangeSummary'
import { countsText, folderOf, groupsByFolder } from '../approval/folder-groups'

/** What the bash tool puts in `metadata.changes` (issue 20); anything else is not shown. */
const Changes = z.object({
  mode: z.enum(['overlay', 'scan']),
  counts: CommandChangeCounts,
  paths: z.array(CommandChangedPath),
  truncated: z.boolean(),
  undoable: z.boolean(),
  error: z.string().optional(),
  reason: z.string().optional(),
  /** Every change counted by folder, when `paths` lists only the first ones. */
  folders: z.array(HeldGroup).optional(),
})
type Changes = z.infer<typeof Changes>

/** The folder rows of a large change: the engine's counts, else the listed paths counted by their folders. */
function folderGroups(changes: Changes): HeldGroup[] {
  return changes.folders ?? groupsByFolder(changes.paths)
}

/** The group a path is counted in: the deepest group folder that holds it. */
function groupOf(relPath: string, folders: readonly string[]): string {
  const dir = folderOf(relPath)
  let best = ''
  for (const f of folders) if ((dir === f || dir.startsWith(`${f}/`)) && f.length > best.length) best = f
  return best
}

function PathLine({ p }: { p: CommandChangedPath }) {
  return (
    <li data-testid="command-changed-path">
      <span className={`change-${p.change}`}>{p.change}</span> <code>{p.relPath}</code>
      {p.content && (
        // What a write's review would show of it: a binary file by its type and size, never as text.
        <span className="muted" data-testid="command-changed-content">
          {' '}
          ({p.content.binary ? 'binary: ' : isLargeText(p.content) ? 'large: ' : ''}
          {describeContent(p.content)})
        </span>
      )}
    </li>
  )
}

/** A large change, folder by folder: each folder's counts, opened to list the changes known in it. */
function FolderRows({ changes, groups }: { changes: Changes; groups: HeldGroup[] }) {
  const names = groups.map((g) => g.folder)
  return (
    <ul className="command-changes-paths small" data-testid="command-changes-folders">
      {groups.map((g) => {
        const listed = changes.paths.filter((p) => groupOf(p.relPath, names) === g.folder)
        const total = g.added + g.changed + g.removed + g.mode
        return (
          <li key={g.folder} data-testid="command-changes-folder" data-folder={g.folder}>
            <details>
              <summary>
                <code>{g.folder === '' ? 'top level' : `${g.folder}/`}</code>{' '}
                <span className="muted">{countsText(g)}</span>
              </summary>
              <ul className="command-changes-paths">
                {listed.slice(0, PATHS_SHOWN).map((p) => (
                  <PathLine key={`${p.change}:${p.relPath}`} p={p} />
                ))}
                {total > Math.min(listed.length, PATHS_SHOWN) && (
                  <li className="muted">and {total - Math.min(listed.length, PATHS_SHOWN)} more</li>
                )}
              </ul>
            </details>
          </li>
        )
      })}
    </ul>
  )
}

export const PATHS_SHOWN = 12

/** A large change is shown folder by folder: its folder rows (none when the card lists paths). */
function shownFolders(changes: Changes): HeldGroup[] {
  const { counts } = changes
  const total = counts.added + counts.changed + counts.removed + counts.modeChanged
  const groups = total > PATHS_SHOWN ? folderGroups(changes) : []
  return groups.length > 1 ? groups : []
}

const folderRowCounts = new WeakMap<object, number>()

/** How many folder rows a command's card shows (the transcript's row shape counts them); one parse per metadata. */
export function folderRowCount(metadataChanges: unknown): number {
  if (typeof metadataChanges !== 'object' || metadataChanges === null) return 0
  let n = folderRowCounts.get(metadataChanges)
  if (n === undefined) {
    const parsed = Changes.safeParse(metadataChanges)
    n = parsed.success ? shownFolders(parsed.data).length : 0
    folderRowCounts.set(metadataChanges, n)
  }
  return n
}

/** "changed 3, added 1" and the paths, under a command's card; held protected changes with a warning. */
export function CommandChanges({ call }: { call: ToolCallState }) {
  const parsed = Changes.safeParse(call.metadata?.changes)
  const held = call.held
  if (!parsed.success && !held) return null
  const changes = parsed.success ? parsed.data : undefined
  const counts = changes?.counts
  const groups = changes ? shownFolders(changes) : []
  const parts = counts
    ? [
        counts.changed ? `changed ${counts.changed}` : '',
        counts.added ? `added ${counts.added}` : '',
        counts.removed ? `removed ${counts.removed}` : '',
        counts.modeChanged ? `mode of ${counts.modeChanged}` : '',
      ].filter(Boolean)
    : []
  return (
    <div className="command-changes" data-testid="command-changes">
      {changes?.error !== undefined && changes.mode === 'overlay' && (
        <p className="failure-line">Nothing the command changed was kept: {changes.error}</p>
      )}
      {parts.length > 0 && changes && (
        <p className="muted small" data-testid="command-changes-summary">
          {parts.join(', ')}
          {changes.mode === 'scan' ? ' (found by comparing before and after: cannot be undone)' : ''}
        </p>
      )}
      {changes &&
        changes.paths.length > 0 &&
        (groups.length > 0 ? (
          <FolderRows changes={changes} groups={groups} />
        ) : (
          <ul className="command-changes-paths small">
            {changes.paths.slice(0, PATHS_SHOWN).map((p) => (
              <PathLine key={`${p.change}:${p.relPath}`} p={p} />
            ))}
            {(changes.paths.length > PATHS_SHOWN || changes.truncated) && <li className="muted">and more</li>}
          </ul>
        ))}
      {held && held.pending === true && (
        <p className="decision-note rejected" role="note" data-testid="command-held">
          Changes wait for your review ({held.count}): nothing of this command is applied yet.
        </p>
      )}
      {held && held.pending === false && (
        <div className="decision-note" role="note" data-testid="command-held">
          <p>
            You reviewed the {held.count} held change{held.count === 1 ? '' : 's'}: {held.acceptedCount ?? 0}{' '}
            applied, {held.rejectedCount ?? 0} not applied.
          </p>
          {(held.rejected ?? []).length > 0 && (
            <ul className="command-changes-paths small" data-testid="command-held-rejected">
              {(held.rejected ?? []).slice(0, PATHS_SHOWN).map((p) => (
                <li key={p.relPath}>
                  <code>{p.relPath}</code> <span className="muted">{p.reason}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {held && held.pending === undefined && (
        <p className="decision-note rejected" role="note" data-testid="command-held">
          {held.landed
            ? `Protected changes landed as allowed (${held.count}): `
            : `Protected changes were held back and not applied (${held.count}): `}
          {held.paths
            .slice(0, PATHS_SHOWN)
            .map((p) => p.relPath)
            .join(', ')}
          {held.count > PATHS_SHOWN ? ', …' : ''}
        </p>
      )}
    </div>
  )
}
