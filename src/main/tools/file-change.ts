import { workspaceSecrets } from '../secrets/workspace-secrets'
import { constants, promises as fs } from 'node:fs'
import type { z } from 'zod'
import type { FileHandle } from 'node:fs/promises'
import { capWritePreview, rulesAllowEdits, type SessionRule } from '../../shared/events'
import type { WritePreview } from '../../shared/events'
import { countLines, excerptOf, isBinary, reviewMode } from '../../shared/file-content'
import { contentFacts } from './content-facts'
import { writeFileAtomic } from '../fs/atomic-write'
import { allHunks, fileDiff } from './file-diff'
import type { FileDiff } from './file-diff'
import { isProtectedPath } from './sensitive-paths'
import { checkConflict, sha256 } from './snapshots'
import { defineTool, fail } from './tool'
import type {
  Approved,
  PlanBase,
  PolicyOptions,
  PolicyVerdict,
  PreviewResult,
  Tool,
  ToolContext,
  ToolResult,
} from './tool'
import { linkHidesProtection, nameInWorkspace, resolveInWorkspace, toWorkspaceRelative } from './workspace'

/**
 * What write_file and edit_file share: their policy, loading the file to change under the conflict check, the
 * preview of a planned change, and committing it atomically. The planners (`planWrite`, `planEdit`) are pure
 * (no write), so the preview shows exactly the diff that execute applies: execute commits the plan the user
 * approved, planned once.
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
      /** The bytes that will be written (BOM included). */
      data: Buffer
      /** What the file was when planned, re-checked just before the rename (null: must not exist). */
      expect?: { mtimeMs: number; size: number } | null
      /**
       * The file's bytes when planned (BOM included) and their SHA-256, kept so the change can be undone;
       * null: it does not exist.
       */
      previous?: { content: Buffer; hash: string } | null
      /** The bytes on disk would not change: nothing needs writing. */
      unchanged: boolean
      /** Facts about the change worth telling the model ("its CRLF line endings were kept"). */
      notes: string[]
    }
  | { ok: false; error: string }

export interface CurrentFile {
  /** Content after the BOM. */
  body: Buffer
  bom: boolean
  text: string
  /** Unset for a base from an earlier call of the turn, which is not on disk yet. */
  stat?: { mtimeMs: number; size: number }
  /** SHA-256 of the whole file (BOM included), from the conflict check; set with `stat`. */
  hash?: string
}

export type LoadedFile =
  { ok: true; path: string; relPath: string; current: CurrentFile | null } | { ok: false; error: string }

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
  const found = { ok: true as const, path, relPath }

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
      const hash = sha256(bytes)
      const conflict = await checkConflict(ctx.snapshots, path, {
        observed: { mtimeMs: st.mtimeMs, hash },
        displayPath: relPath,
      })
      if (!conflict.ok) return { ok: false, error: conflict.reason }
      const bom = bytes.subarray(0, 3).equals(UTF8_BOM)
      const body = bom ? bytes.subarray(3) : bytes
      return {
        ...found,
        current: {
          body,
          bom,
          text: body.toString('utf8'),
          stat: { mtimeMs: st.mtimeMs, size: st.size },
          hash,
        },
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

export { countLines }

function expectation(current: CurrentFile | null): {
  expect?: { mtimeMs: number; size: number } | null
  previous?: { content: Buffer; hash: string } | null
} {
  if (current === null) return { expect: null, previous: null }
  if (current.stat === undefined) return {}
  const content = current.bom ? Buffer.concat([UTF8_BOM, current.body]) : current.body
  return { expect: current.stat, previous: { content, hash: current.hash ?? sha256(content) } }
}

/**
 * The plan to change the loaded file to `body` (the bytes after any BOM; a BOM is written before them when
 * `bom`), `after` being its text as the preview shows it.
 */
export function plannedChange(
  loaded: LoadedFile & { ok: true },
  change: { after: string; body: Buffer; bom: boolean; notes: string[] },
): ChangePlan & { ok: true } {
  const { current } = loaded
  const { after, body, bom, notes } = change
  return {
    ok: true,
    path: loaded.path,
    relPath: loaded.relPath,
    before: current?.text ?? null,
    after,
    data: bom ? Buffer.concat([UTF8_BOM, body]) : body,
    ...expectation(current),
    unchanged: current !== null && current.bom === bom && current.body.equals(body),
    notes,
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
    const kept = await ctx.changes.before({
      path: plan.path,
      relPath: plan.relPath,
      content: plan.previous?.content ?? null,
      ...(plan.previous ? { hash: plan.previous.hash } : {}),
    })
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
  // A binary side has no lines to diff: its text would be its bytes mis-decoded.
  const diff = isBinaryChange(plan)
    ? { hunks: [], added: 0, removed: 0, chars: 0 }
    : fileDiff(plan.relPath, plan.before, plan.after)
  return { ok: true, diff, created: written.created }
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

/**
 * Writes and edits ask, unless the user lets edits through; a protected path always asks, whatever the
 * settings. The path is judged by the name the model wrote, without touching the disk, so an allowed call
 * starts the moment its block closes; a name that hides a protected target behind a symbolic link is refused
 * by `loadForChange` (`linkHidesProtection`), which names the real path for the model to use.
 */
export function changePolicy(rawPath: string, opts: PolicyOptions): PolicyVerdict {
  if (touchesProtected(rawPath, opts)) return { kind: 'ask', protected: true }
  return opts.autoApproveEdits || rulesAllowEdits(opts.sessionRules ?? [])
    ? { kind: 'allow' }
    : { kind: 'ask', protected: false }
}

/**
 * "Allow edits for the rest of this session", offered with a change to any file but a protected one (which
 * the rule would never cover). A link hiding a protected file behind a harmless name is refused at load.
 */
export function changeSessionRule(rawPath: string, opts: PolicyOptions): SessionRule | undefined {
  return touchesProtected(rawPath, opts) ? undefined : { kind: 'edits' }
}

function touchesProtected(rawPath: string, opts: PolicyOptions): boolean {
  const name = nameInWorkspace(opts.workspace, rawPath)
  return name !== null && isProtectedPath(name, opts.pathRules)
}

/** The file's bytes before the change (BOM included), or null when it does not exist yet. */
function beforeBytes(plan: ChangePlan & { ok: true }): Buffer | null {
  if (plan.previous) return plan.previous.content
  return plan.before === null ? null : Buffer.from(plan.before, 'utf8')
}

/** Either side of the change is not text (file-content.ts `isBinary`). */
export function isBinaryChange(plan: ChangePlan & { ok: true }): boolean {
  const before = beforeBytes(plan)
  return (before !== null && isBinary(before)) || isBinary(plan.data)
}

/**
 * A change as the user reviews it: the diff against the file as it is now (or as the turn will leave it). A
 * binary change carries its facts and never its bytes as text; a large one its exact line counts and the ends of
 * its new content, not its hunks (the review pages through the full diff on request, `fullDiffLines`).
 */
export function changePreview<P extends ChangePlan>(
  plan: P,
  isProtected: boolean,
  /** Hides secret values in a line before the excerpt of a large change cuts it. */
  redact: (text: string) => string = (text) => text,
): PreviewResult<P> {
  if (!plan.ok) return { ok: false, error: plan.error }
  const before = beforeBytes(plan)
  const files = {
    before: before === null ? null : contentFacts(before, plan.before ?? undefined),
    after: contentFacts(plan.data, plan.after),
  }
  const base = { kind: 'write' as const, path: plan.relPath, protected: isProtected, files }
  if (files.before?.binary === true || files.after.binary) {
    // The texts would be the bytes mis-decoded: left out, and so is the turn's overlay (no later call builds on
    // a text that is not the file's).
    const preview: WritePreview = { ...base, show: 'binary', hunks: [] }
    return { ok: true, preview, plan }
  }
  const diff = fileDiff(plan.relPath, plan.before, plan.after)
  const show = reviewMode({
    beforeBinary: false,
    afterBinary: false,
    added: diff.added,
    removed: diff.removed,
    diffChars: diff.chars,
    diffCut: diff.truncated === true,
  })
  const counts = { added: diff.added, removed: diff.removed }
  if (show === 'large') {
    const preview: WritePreview = {
      ...base,
      ...counts,
      show,
      hunks: [],
      truncated: true,
      hunksCut: true,
      excerpt: excerptOf(plan.after, undefined, redact),
    }
    return { ok: true, preview, plan, after: plan.after }
  }
  const preview = capWritePreview({
    ...base,
    ...counts,
    show,
    before: plan.before,
    after: plan.after,
    hunks: diff.hunks,
    truncated: diff.truncated,
    hunksCut: diff.truncated,
  })
  return { ok: true, preview, plan, after: plan.after }
}

/** The change's full unified diff as lines (`@@` headers included), for "open in full"; empty for a binary one. */
export function fullDiffLines(plan: ChangePlan & { ok: true }): string[] {
  if (isBinaryChange(plan)) return []
  const lines: string[] = []
  for (const hunk of allHunks(plan.relPath, plan.before, plan.after)) {
    lines.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`)
    for (const line of hunk.lines) lines.push(line)
  }
  return lines
}

export const NOT_APPLIED_TEXT =
  'Not applied: the file is no longer as it was when the user reviewed this change (it changed since, or an earlier change to it in this turn was rejected or applied only in part), so the approved diff no longer matches. Read the file again and redo the change.'

/**
 * The plan to commit for a change. One the user approved is used as it is when the file is still as it was
 * planned against (the atomic write checks that again just before its rename); otherwise (the file moved, the
 * plan built on an earlier call of the turn, or only the logged preview survived a restart) the change is
 * planned again from the disk, and only the content the user saw may land.
 */
export async function planToCommit<P extends ChangePlan>(
  approved: Approved<P> | undefined,
  replan: () => Promise<P>,
): Promise<P | { ok: false; error: string }> {
  const planned = approved?.plan
  if (planned?.ok && (await stillAsPlanned(planned))) return planned
  const fresh = await replan()
  const preview = approved?.preview.kind === 'write' ? approved.preview : undefined
  // The bytes reviewed: the plan's, or (only the logged preview survived a restart) their hash in the preview,
  // which a large or binary change keeps where its text is left out.
  const approvedHash = planned?.ok ? sha256(planned.data) : preview?.files?.after.sha256
  const approvedAfter = planned?.ok ? planned.after : preview?.after
  if (approvedHash === undefined && approvedAfter === undefined) return fresh
  if (!fresh.ok) return { ok: false, error: NOT_APPLIED_TEXT }
  if (approvedHash !== undefined && sha256(fresh.data) !== approvedHash)
    return { ok: false, error: NOT_APPLIED_TEXT }
  if (approvedAfter !== undefined && fresh.after !== approvedAfter)
    return { ok: false, error: NOT_APPLIED_TEXT }
  return fresh
}

async function stillAsPlanned(plan: ChangePlan & { ok: true }): Promise<boolean> {
  // No expectation: the plan was built on content an earlier call of the turn had not written yet.
  if (plan.expect === undefined) return false
  try {
    const st = await fs.stat(plan.path)
    return plan.expect !== null && st.mtimeMs === plan.expect.mtimeMs && st.size === plan.expect.size
  } catch (error) {
    return plan.expect === null && (error as NodeJS.ErrnoException).code === 'ENOENT'
  }
}

/**
 * write_file or edit_file as a Tool: the policy, the preview and the plan to commit are the same for both (the
 * change the user approved is the change committed); each tool says how it plans a change and, once the plan is
 * ready to land, what it commits and answers.
 */
export function defineChangeTool<I extends { path: string }, P extends ChangePlan>(spec: {
  name: string
  description: string
  input: z.ZodType<I>
  /** "Write", "Edit": the call's title before it has a result. */
  verb: string
  plan(ctx: ToolContext, input: I, base?: PlanBase): Promise<P>
  land(ctx: ToolContext, input: I, plan: P & { ok: true }): Promise<ToolResult>
}): Tool<z.ZodType<I>, P> {
  return defineTool<z.ZodType<I>, P>({
    name: spec.name,
    description: spec.description,
    input: spec.input,
    concurrencySafe: false,
    title: (input) => `${spec.verb} ${input.path}`,
    policy: (input, opts) => changePolicy(input.path, opts),
    sessionRule: (input, opts) => changeSessionRule(input.path, opts),
    async preview(input, ctx, opts) {
      const redactor = workspaceSecrets(ctx.workspace).redactor()
      return changePreview(await spec.plan(ctx, input, opts.base), opts.protected, (text) =>
        redactor.redactText(text),
      )
    },
    async execute(input, ctx, approved) {
      const plan = await planToCommit(approved, () => spec.plan(ctx, input))
      if (!plan.ok) return fail(plan.error, { title: `${spec.verb} ${input.path}` })
      return spec.land(ctx, input, plan as P & { ok: true })
    },
  })
}

/** The plan's notes for the model, as a parenthesis after a sentence ("" when there are none). */
export function notesSuffix(plan: ChangePlan & { ok: true }): string {
  return plan.notes.length > 0 ? ` (${plan.notes.join('; ')})` : ''
}
