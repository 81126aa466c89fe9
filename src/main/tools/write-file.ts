import { constants, promises as fs } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { writeFileAtomic } from './atomic-write'
import { fileDiff } from './file-diff'
import type { FileDiff } from './file-diff'
import { WriteFileInput } from './schemas'
import { checkConflict, sha256 } from './snapshots'
import { defineTool, fail, ok } from './tool'
import type { ToolContext, ToolResult } from './tool'
import { linkHidesProtection, resolveInWorkspace, toWorkspaceRelative } from './workspace'

/**
 * write_file (DESIGN 2), and what it shares with edit_file: loading the file to change under the conflict
 * check, and committing a planned change atomically. The planners are pure (no write) so the approval
 * preview shows exactly the diff that execute will apply: execute runs the same planner, then writes.
 */

// Past this an existing file is not loaded for a change: the whole content is held in memory and diffed.
export const MAX_CHANGE_BYTES = 64 * 1024 * 1024
const MAX_READ_ATTEMPTS = 3
export const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf])

export type ChangePlan =
  | {
      ok: true
      /** Absolute real path. */
      path: string
      relPath: string
      /** Current text (without BOM); null when the file does not exist yet. */
      before: string | null
      /** Text after the change (without BOM), exactly as it will be on disk. */
      after: string
      /** Inside a protected path (.git/, .env*, ...): always goes to approval. */
      protected: boolean
      /** The bytes that will be written (BOM included). */
      data: Buffer
      /** What the file was when planned, re-checked just before the rename (null: must not exist). */
      expect?: { mtimeMs: number; size: number } | null
      /** The file's bytes when planned (BOM included; null: it does not exist), kept so it can be undone. */
      previous?: Buffer | null
      /** The bytes on disk would not change: nothing needs writing. */
      unchanged: boolean
      /** Facts about the change worth telling the model ("its CRLF line endings were kept"). */
      notes: string[]
    }
  | { ok: false; error: string }

/** The content of a call earlier in the same turn that has not been written yet (approval preview). */
export interface PlanBase {
  path: string
  content: string | null
}

export interface CurrentFile {
  /** Content after the BOM. */
  body: Buffer
  bom: boolean
  text: string
  /** Unset for a base from an earlier call of the turn, which is not on disk yet. */
  stat?: { mtimeMs: number; size: number }
}

export type LoadedFile =
  | { ok: true; path: string; relPath: string; protected: boolean; current: CurrentFile | null }
  | { ok: false; error: string }

/**
 * Resolves `rawPath` for writing and loads the file as it is now, refusing when overwriting it would lose a
 * change the model has not seen (DESIGN 2: read first; mtime moved and hash differs is a conflict).
 */
export async function loadForChange(ctx: ToolContext, rawPath: string, base?: PlanBase): Promise<LoadedFile> {
  const resolved = await resolveInWorkspace(ctx.workspace, rawPath, 'write', ctx.pathRules)
  if (!resolved.ok) return { ok: false, error: resolved.reason }
  const hidden = linkHidesProtection(ctx.workspace, rawPath, resolved.path, 'protected', ctx.pathRules)
  if (hidden) return { ok: false, error: hidden }
  const path = resolved.path
  const relPath = toWorkspaceRelative(ctx.workspace, path)
  const found = { ok: true as const, path, relPath, protected: resolved.protected }

  if (base !== undefined) {
    const other =
      base.path === rawPath ? resolved : await resolveInWorkspace(ctx.workspace, base.path, 'write')
    if (other.ok && other.path === path) {
      // The turn's earlier call owns the conflict check; this preview builds on its result.
      if (base.content === null) return { ...found, current: null }
      return {
        ...found,
        current: { body: Buffer.from(base.content, 'utf8'), bom: false, text: base.content },
      }
    }
  }

  for (let attempt = 1; ; attempt++) {
    let fh: FileHandle
    try {
      fh = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT') return { ...found, current: null }
      if (code === 'EISDIR') return { ok: false, error: `${relPath} is a directory, not a file.` }
      return { ok: false, error: `Could not open ${relPath}: ${(error as Error).message}` }
    }
    try {
      const st = await fh.stat()
      if (st.isDirectory()) return { ok: false, error: `${relPath} is a directory, not a file.` }
      if (!st.isFile()) return { ok: false, error: `${relPath} is not a regular file; it cannot be changed.` }
      if (st.size > MAX_CHANGE_BYTES)
        return {
          ok: false,
          error: `${relPath} is ${(st.size / 1024 / 1024).toFixed(1)} MiB; files over ${MAX_CHANGE_BYTES / 1024 / 1024} MiB are not changed with write_file or edit_file.`,
        }
      const bytes = await fh.readFile()
      const again = await fh.stat()
      if (bytes.length !== again.size || again.mtimeMs !== st.mtimeMs || again.size !== st.size) {
        if (attempt < MAX_READ_ATTEMPTS) continue
        return {
          ok: false,
          error: `${relPath} kept changing while it was being read; try again in a moment.`,
        }
      }
      const conflict = await checkConflict(ctx.snapshots, path, {
        observed: { mtimeMs: st.mtimeMs, hash: sha256(bytes) },
        displayPath: relPath,
      })
      if (!conflict.ok) return { ok: false, error: conflict.reason }
      const bom = bytes.subarray(0, 3).equals(UTF8_BOM)
      const body = bom ? bytes.subarray(3) : bytes
      return {
        ...found,
        current: { body, bom, text: body.toString('utf8'), stat: { mtimeMs: st.mtimeMs, size: st.size } },
      }
    } finally {
      await fh.close().catch(() => undefined)
    }
  }
}

/** The file's dominant line ending: CRLF only when most of its line breaks are CRLF. */
export function lineEnding(text: string): 'crlf' | 'lf' {
  let crlf = 0
  let lf = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (i > 0 && text.charCodeAt(i - 1) === 13) crlf++
    else lf++
  }
  return crlf > lf ? 'crlf' : 'lf'
}

export function countLines(text: string): number {
  if (text.length === 0) return 0
  let lines = text.endsWith('\n') ? 0 : 1
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++
  return lines
}

export async function planWrite(
  ctx: ToolContext,
  input: WriteFileInput,
  base?: PlanBase,
): Promise<ChangePlan> {
  try {
    const loaded = await loadForChange(ctx, input.path, base)
    if (!loaded.ok) return loaded
    const current = loaded.current
    const notes: string[] = []
    let content = input.content
    // read_file shows CRLF files without their CRs; writing back what was read must not flip every line
    // ending of the file. Content that has CRs of its own is taken as the model meant it.
    if (
      current !== null &&
      lineEnding(current.text) === 'crlf' &&
      !content.includes('\r') &&
      content.includes('\n')
    ) {
      content = content.replace(/\n/g, '\r\n')
      notes.push('its CRLF line endings were kept')
    }
    // A BOM is kept when the file had one, or added when the content brings its own (`after` never shows it,
    // like `before`).
    const ownBom = content.startsWith('\uFEFF')
    const after = ownBom ? content.slice(1) : content
    const body = Buffer.from(after, 'utf8')
    const bom = ownBom || current?.bom === true
    if (current?.bom === true && !ownBom) notes.push('its UTF-8 BOM was kept')
    return {
      ok: true,
      path: loaded.path,
      relPath: loaded.relPath,
      before: current?.text ?? null,
      after,
      protected: loaded.protected,
      data: bom ? Buffer.concat([UTF8_BOM, body]) : body,
      ...expectation(current),
      unchanged: current !== null && current.bom === bom && current.body.equals(body),
      notes,
    }
  } catch (error) {
    return { ok: false, error: `Could not prepare the write: ${(error as Error).message}` }
  }
}

export function expectation(current: CurrentFile | null): {
  expect?: { mtimeMs: number; size: number } | null
  previous?: Buffer | null
} {
  if (current === null) return { expect: null, previous: null }
  if (current.stat === undefined) return {}
  return {
    expect: current.stat,
    previous: current.bom ? Buffer.concat([UTF8_BOM, current.body]) : current.body,
  }
}

export type Committed = { ok: true; diff: FileDiff; created: boolean } | { ok: false; result: ToolResult }

/** Writes a plan atomically and refreshes the snapshot, so the next change needs no re-read. */
export async function commitChange(
  ctx: ToolContext,
  plan: ChangePlan & { ok: true },
  title: string,
): Promise<Committed> {
  if (ctx.changes && plan.previous !== undefined) {
    const kept = await ctx.changes.before({ path: plan.path, relPath: plan.relPath, content: plan.previous })
    if (!kept.ok) {
      const reason = `${plan.relPath} was not changed: its current content could not be kept for undo (${kept.error}).`
      return { ok: false, result: fail(reason, { title, metadata: { path: plan.relPath } }) }
    }
  }
  const written = await writeFileAtomic(
    plan.path,
    plan.data,
    plan.expect === undefined ? {} : { expect: plan.expect },
  )
  if (!written.ok) {
    const reason = written.conflict
      ? `${plan.relPath} ${written.reason}. Read it again with read_file and redo the change.`
      : `${plan.relPath} ${written.reason}.`
    return { ok: false, result: fail(reason, { title, metadata: { path: plan.relPath } }) }
  }
  const hash = sha256(plan.data)
  ctx.snapshots.record({ path: plan.path, mtimeMs: written.mtimeMs, hash })
  await ctx.changes?.after({ path: plan.path, content: plan.data, hash })
  return { ok: true, diff: fileDiff(plan.relPath, plan.before, plan.after), created: written.created }
}

/** `diff`, `added`, `removed` (and `diffTruncated`) for the UI's diff view. */
export function diffMetadata(diff: FileDiff): Record<string, unknown> {
  return {
    diff: diff.hunks,
    added: diff.added,
    removed: diff.removed,
    ...(diff.truncated === true ? { diffTruncated: true } : {}),
  }
}

export const writeFileTool = defineTool({
  name: 'write_file',
  description:
    'Create a file, or replace the whole content of an existing one, in the workspace. Missing parent ' +
    'folders are created. Overwriting an existing file requires having read it with read_file in this ' +
    'session, and is refused if it changed on disk since. To change part of a file prefer edit_file. ' +
    'Line endings (CRLF) and a UTF-8 BOM of an existing file are kept.',
  input: WriteFileInput,
  concurrencySafe: false,
  async execute(input, ctx) {
    const plan = await planWrite(ctx, input)
    if (!plan.ok) return fail(plan.error, { title: `Write ${input.path}` })
    const rel = plan.relPath
    const lines = countLines(plan.after)
    if (plan.unchanged) {
      return ok(`${rel} already has exactly this content; nothing was written.`, {
        title: `Write ${rel} (unchanged)`,
        metadata: { path: rel, created: false, lines, unchanged: true, diff: [], added: 0, removed: 0 },
      })
    }
    const committed = await commitChange(ctx, plan, `Write ${rel}`)
    if (!committed.ok) return committed.result
    const { diff, created } = committed
    const kept = plan.notes.length > 0 ? ` (${plan.notes.join('; ')})` : ''
    const output = created
      ? `Created ${rel} (${lines} ${lines === 1 ? 'line' : 'lines'}).`
      : `Overwrote ${rel}: now ${lines} ${lines === 1 ? 'line' : 'lines'} (+${diff.added} -${diff.removed})${kept}.`
    return ok(output, {
      title: `${created ? 'Create' : 'Write'} ${rel} (+${diff.added} -${diff.removed})`,
      metadata: { path: rel, created, lines, ...diffMetadata(diff) },
    })
  },
})
