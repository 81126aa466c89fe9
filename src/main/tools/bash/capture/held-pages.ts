import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { HeldFile } from '../../../../shared/events'
import { groupKey, heldEntry, heldFileView, reviewBudget, type HeldLine } from './held-review'
import { PLAN_FILE, readHeldState, type PlanLine } from './land'

/**
 * What the review of a large held change set asks for as the user opens it (issue 20): a page of one folder
 * group's changes, and one change's diff. Both stream the layer's plan file, so neither the engine nor the
 * renderer ever holds the whole change set: a million held files cost one pass over the file per page.
 */

/** The plan's held lines whose raw JSON starts with `prefix` (a cheap filter before parsing). */
async function* heldLines(layerDir: string, prefix: string): AsyncGenerator<PlanLine> {
  const lines = createInterface({ input: createReadStream(join(layerDir, PLAN_FILE)), crlfDelay: Infinity })
  for await (const raw of lines) {
    if (!raw.startsWith(prefix) || !raw.includes('"held":')) continue
    const line = JSON.parse(raw) as PlanLine
    if (line.held !== undefined) yield line
  }
}

/** Plan lines are written with `rel` first: a line of a path under `folder` starts with this. */
function relPrefix(folder: string): string {
  return folder === '' ? '{"rel":' : `{"rel":${JSON.stringify(`${folder}/`).slice(0, -1)}`
}

/** The changes of the group `folder`, from `offset`, without diffs; null when the layer has no review waiting. */
export async function heldPage(
  layerDir: string,
  folder: string,
  offset: number,
  limit: number,
): Promise<{ total: number; files: HeldFile[] } | null> {
  const state = await readHeldState(layerDir)
  if (!state) return null
  const files: HeldFile[] = []
  let total = 0
  for await (const line of heldLines(layerDir, relPrefix(folder))) {
    if (groupKey(line.rel, state.groupDepth) !== folder) continue
    if (total >= offset && files.length < limit) files.push(heldEntry(line as HeldLine))
    total++
  }
  return { total, files }
}

/** One held change with its diff, or null when it is not among the layer's held changes. */
export async function heldDiff(
  layerDir: string,
  workspace: string,
  relPath: string,
  learn: (rel: string, text: string) => void,
): Promise<HeldFile | null> {
  if ((await readHeldState(layerDir)) === null) return null
  for await (const line of heldLines(layerDir, `{"rel":${JSON.stringify(relPath)},`)) {
    if (line.rel !== relPath) continue
    return heldFileView(join(workspace, line.rel), line as HeldLine, reviewBudget(), learn)
  }
  return null
}
