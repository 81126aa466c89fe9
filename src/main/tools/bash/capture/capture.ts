import { readdirSync, rmdirSync, rmSync, unlinkSync } from 'node:fs'
import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandChangeCounts, CommandChangedPath, HeldGroup, HeldPath } from '../../../../shared/events'
import type { SensitivePathRules } from '../../sensitive-paths'
import type { SandboxLaunch } from '../sandbox/launch'
import { sandboxSupport } from '../sandbox/support'
import { readOpaque, readOpaqueSync } from './change-set'
import {
  landChangeSet,
  nothingLanded,
  PATHS_SHOWN,
  PLAN_FILE,
  readHeldState,
  resumeLanding,
  type CaptureHost,
  type Landed,
} from './land'
import { captureSupport, layerDir, makeLayer, overlayLaunch, type Layer } from './overlay'
import { compareScans, scanWorkspace, type Scan } from './scan'

/**
 * What a command changed (issue 20), for the bash result's `metadata.changes` and the card: `overlay` changes
 * were captured and landed with their previous contents kept (undoable); `scan` changes were found by
 * comparing the workspace before and after and cannot be undone.
 */
export interface CommandChanges {
  mode: 'overlay' | 'scan'
  counts: CommandChangeCounts
  paths: CommandChangedPath[]
  /** paths holds the first PATHS_SHOWN. */
  truncated: boolean
  /** When truncated (overlay): every change counted by folder, for the card. */
  folders?: HeldGroup[]
  undoable: boolean
  held?: {
    paths: HeldPath[]
    count: number
    landed: boolean
    /** Reviewed file by file in the app: how many landed, and those that did not, with why. */
    reviewedBy?: 'user' | 'stopped' | 'cli'
    accepted?: number
    rejected?: HeldPath[]
    rejectedCount?: number
  }
  notUndoable?: string[]
  /** overlay: nothing landed, and why. scan: why the scan is partial. */
  error?: string
  /** Why changes are not captured here (scan mode). */
  reason?: string
  /** The command was killed before its layer was read whole: a folder it made again may keep old entries. */
  incomplete?: boolean
}

export interface Capture {
  /** The launch to run the command with (the sandbox's own in scan mode). */
  launch: SandboxLaunch | null
  /**
   * After the command ended (however it ended): reads, lands and reports its changes. `ran`: the tool's account of
   * the command, kept with a held review so the call can be answered when the review is finished after a restart.
   */
  finish(ran?: unknown): Promise<CommandChanges | null>
}

/**
 * Starts capturing one approved command. `sandbox` null: the command runs outside the sandbox (the user's
 * choice) and is scanned. Without a `host` (no session store: a test calling the tool alone) nothing is
 * captured and the command runs as before.
 */
export function startCapture(opts: {
  sandbox: SandboxLaunch | null
  workspace: string
  outputDir: string
  callId: string
  rules: SensitivePathRules
  host: CaptureHost | undefined
  /** The review asked to see every change before it lands. */
  holdAll?: boolean
}): Capture | { error: string } {
  const { sandbox, workspace, host } = opts
  if (!host) return { launch: sandbox, finish: async () => null }
  const found = captureSupport()
  if (found.mode === 'overlay' && sandbox !== null && sandbox.statusFd !== null) {
    const layer = makeLayer(opts.outputDir, opts.callId)
    if ('error' in layer) return layer
    return {
      launch: overlayLaunch(sandbox, found, workspace, layer),
      finish: (ran) => finishOverlay(opts, layer, host, ran),
    }
  }
  const reason =
    found.mode === 'scan'
      ? found.reason
      : 'The command ran outside the sandbox, so its changes were found by comparing the workspace before and after it and cannot be undone.'
  const before: Scan = scanWorkspace(workspace)
  return {
    launch: sandbox,
    finish: async () => {
      const after = scanWorkspace(workspace)
      const { counts, paths } = compareScans(before, after, PATHS_SHOWN)
      const total = counts.added + counts.changed + counts.removed + counts.modeChanged
      const incomplete = before.incomplete ?? after.incomplete
      return {
        mode: 'scan',
        counts,
        paths,
        truncated: total > paths.length,
        undoable: false,
        reason,
        ...(incomplete ? { error: `only part of the workspace was compared (${incomplete})` } : {}),
      }
    },
  }
}

async function finishOverlay(
  opts: { workspace: string; callId: string; rules: SensitivePathRules; holdAll?: boolean },
  layer: Layer,
  host: CaptureHost,
  ran: unknown,
): Promise<CommandChanges> {
  // An empty upper layer is a command that changed nothing (every change, a removal too, leaves an entry there):
  // nothing to plan, log or land, and a few entries to remove. By direct system calls: each trip through the thread
  // pool costs more than the call it makes, and a recursive rm makes many.
  if (isEmptyFolder(layer.upper)) {
    const opaque = readOpaqueSync(layer.opaqueFile)
    if (!removeEmptyLayer(layer)) await rm(layer.dir, { recursive: true, force: true }).catch(() => undefined)
    return changesOf(nothingLanded(host.landProtected), opaque === null)
  }
  const opaque = await readOpaque(layer.opaqueFile)
  // How many entries the layer can still hold when it goes: unknown until the landing says how many changes it had.
  let left = Number.POSITIVE_INFINITY
  try {
    const landed = await landChangeSet({
      workspace: opts.workspace,
      callId: opts.callId,
      layer,
      opaque,
      rules: opts.rules,
      host,
      holdAll: opts.holdAll === true,
      ran,
    })
    if (landed.error === undefined) {
      const { added, changed, removed, modeChanged } = landed.counts
      left = added + changed + removed + modeChanged + landed.heldCount
    }
    return changesOf(landed, opaque === null)
  } finally {
    // What did not land (held changes discarded, a failed landing) goes with the layer. A process that stops while
    // the review waits never gets here: the layer stays for the review after the restart (resumeHeldCapture).
    await removeLayer(layer.dir, left)
  }
}

/**
 * A layer whose change set had at most this many changes goes by direct system calls: with their folders (a deep
 * path's copied-up parents), a few thousand entries at the very most, a few milliseconds.
 */
const SMALL_LAYER = 200

/**
 * A landed layer's leftovers: its folders, what did not land, the plan. A small one by direct system calls, as the
 * thread pool would cost a round trip each (a millisecond for the ten or so entries of a 100-file landing); a large
 * one through the thread pool, so that the app goes on meanwhile.
 */
async function removeLayer(dir: string, entries: number): Promise<void> {
  if (entries <= SMALL_LAYER) {
    try {
      rmSync(dir, { recursive: true, force: true })
      return
    } catch {
      // Whatever is left goes the other way.
    }
  }
  await rm(dir, { recursive: true, force: true }).catch(() => undefined)
}

function isEmptyFolder(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0
  } catch {
    return false
  }
}

/** The layer of a command that changed nothing, removed entry by entry; false when something else was there. */
function removeEmptyLayer(layer: Layer): boolean {
  try {
    unlinkSync(layer.opaqueFile)
    rmdirSync(layer.upper)
    // The overlay's own folder in its work folder (absent when it was never mounted).
    try {
      rmdirSync(join(layer.dir, 'work', 'work'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
    rmdirSync(join(layer.dir, 'work'))
    rmdirSync(layer.dir)
    return true
  } catch {
    return false
  }
}

/**
 * A command Lanes stopped under (quit or crash; issue 20, "a command killed mid-way: its partial changes are
 * still captured and shown"), when the session goes on:
 * - its held changes waited for the user's review: the review is asked again and what the user accepts lands,
 *   from what the layer kept;
 * - it was cut short before its changes were read: everything it had changed by then is in its layer and none
 *   of it landed, so all of it is held for the review (headless: discarded and reported, or landed with
 *   --land-protected), with `interrupted` as the tool's account of the command;
 * - its landing had begun (the layer has its plan): the recovery at the start rolled it back, and the layer goes.
 * Null when there is nothing to review (no layer, an empty one, or a landing begun): the call was interrupted.
 */
export async function resumeCapture(opts: {
  workspace: string
  outputDir: string
  callId: string
  rules: SensitivePathRules
  host: CaptureHost | undefined
  interrupted: unknown
}): Promise<{ ran: unknown; changes: CommandChanges } | null> {
  const dir = layerDir(opts.outputDir, opts.callId)
  const host = opts.host
  if (!host) return null
  const state = await readHeldState(dir)
  try {
    if (state) {
      const landed = await resumeLanding({
        workspace: opts.workspace,
        callId: opts.callId,
        layerDir: dir,
        state,
        host,
      })
      return { ran: state.ran, changes: changesOf(landed, state.incomplete === true) }
    }
    const layer: Layer = { dir, upper: join(dir, 'upper'), opaqueFile: join(dir, 'opaque') }
    const [changed, landing] = await Promise.all([
      readdir(layer.upper).then(
        (names) => names.length > 0,
        () => false,
      ),
      stat(join(dir, PLAN_FILE)).then(
        () => true,
        () => false,
      ),
    ])
    if (!changed || landing) return null
    // The review says why everything is held: the command was cut short.
    const log: CaptureHost['log'] = (draft) =>
      host.log(draft.type === 'command.held' ? { ...draft, interrupted: true } : draft)
    const changes = await finishOverlay(
      { workspace: opts.workspace, callId: opts.callId, rules: opts.rules, holdAll: true },
      layer,
      { ...host, log },
      opts.interrupted,
    )
    return { ran: opts.interrupted, changes }
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined)
  }
}

function changesOf(landed: Landed, incomplete: boolean): CommandChanges {
  const { counts } = landed
  const total = counts.added + counts.changed + counts.removed + counts.modeChanged
  return {
    mode: 'overlay',
    counts,
    paths: landed.paths,
    truncated: total > landed.paths.length,
    undoable: landed.error === undefined && landed.notUndoable.length === 0,
    ...(landed.heldCount > 0
      ? {
          held: {
            paths: landed.held,
            count: landed.heldCount,
            landed: landed.heldLanded,
            ...(landed.reviewed
              ? {
                  reviewedBy: landed.reviewed.by,
                  accepted: landed.reviewed.accepted,
                  rejected: landed.reviewed.rejected,
                  rejectedCount: landed.reviewed.rejectedCount,
                }
              : {}),
          },
        }
      : {}),
    ...(landed.notUndoable.length > 0 ? { notUndoable: landed.notUndoable.slice(0, PATHS_SHOWN) } : {}),
    ...(landed.error !== undefined ? { error: landed.error } : {}),
    ...(landed.folders ? { folders: landed.folders } : {}),
    ...(incomplete ? { incomplete: true } : {}),
  }
}

/**
 * How an approved sandboxed command's changes are kept on this machine (Settings and the review say it): on the
 * copy-on-write layer where there is one and a sandbox to mount it in; otherwise by the before/after scan.
 */
export function commandCaptureMode(): { mode: 'overlay' | 'scan'; reason?: string } {
  if (!sandboxSupport().available)
    return {
      mode: 'scan',
      reason:
        'Without a sandbox, a command runs on the workspace itself: its changes are found by comparing the workspace before and after it and cannot be undone.',
    }
  const found = captureSupport()
  return found.mode === 'overlay' ? { mode: 'overlay' } : found
}

/** One line for the model (and the card's text) about what the command changed. */
export function describeChanges(changes: CommandChanges): string {
  const { counts } = changes
  const parts: string[] = []
  if (counts.changed) parts.push(`changed ${counts.changed}`)
  if (counts.added) parts.push(`added ${counts.added}`)
  if (counts.removed) parts.push(`removed ${counts.removed}`)
  if (counts.modeChanged) parts.push(`changed the mode of ${counts.modeChanged}`)
  const lines: string[] = []
  if (changes.error !== undefined && changes.mode === 'overlay')
    lines.push(`[Nothing the command changed was kept: ${changes.error}]`)
  else if (parts.length > 0) {
    const list = changes.paths
      .slice(0, 20)
      .map((p) => `${p.change} ${p.relPath}`)
      .join(', ')
    const more = changes.paths.length > 20 || changes.truncated ? ', ...' : ''
    const undo = changes.undoable ? '' : changes.mode === 'scan' ? ' (these changes cannot be undone)' : ''
    lines.push(`[The command ${parts.join(', ')} (files and folders)${undo}: ${list}${more}]`)
  }
  const held = changes.held
  if (held?.rejected !== undefined) {
    const names = held.rejected
      .slice(0, 20)
      .map((p) => `${p.relPath} (${p.reason})`)
      .join(', ')
    const who =
      held.reviewedBy === 'cli'
        ? `The review of the ${held.count} held change(s) the command made was finished by \`lanes run\`, which cannot ask`
        : `The user reviewed the ${held.count} held change(s) the command made`
    lines.push(
      `[${who}: ${held.accepted ?? 0} landed` +
        (held.rejectedCount ? `; ${held.rejectedCount} did not and were discarded: ${names}` : '') +
        ']',
    )
  } else if (held) {
    const names = held.paths
      .slice(0, 20)
      .map((p) => p.relPath)
      .join(', ')
    lines.push(
      held.landed
        ? `[Protected changes landed as allowed: ${names}]`
        : `[Protected changes were held back and not applied (${held.count}): ${names}. They need the user's review.]`,
    )
  }
  if (changes.incomplete)
    lines.push(
      '[The command was killed before its changes could be read whole; a folder it emptied may keep old files.]',
    )
  return lines.join('\n')
}
