import { constants, promises as fs } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, extname, isAbsolute, join } from 'node:path'
import { formatBytes, sniffType, typeLabel } from '../../shared/file-content'
import { workspaceSecrets } from '../secrets/workspace-secrets'
import { LineCollector, MAX_OUTPUT_CHARS } from './read-file/line-collector'
import { lineIndexFor, nearestCheckpoint, type LineIndex } from './read-file/line-index'
import type { z } from 'zod'
import { countField, pathField, toolInput } from './input-fields'
import type { FileSnapshot } from './snapshots'
import { sha256 } from './snapshots'
import { defineTool, fail, ok } from './tool'
import type { ToolContext, ToolResult } from './tool'
import { isSecretPath } from './sensitive-paths'
import { linkHidesProtection, nameInWorkspace, resolveInWorkspace, toWorkspaceRelative } from './workspace'

export const ReadFileInput = toolInput('Read a text file; each line is prefixed with its line number.', {
  path: pathField(
    'Path of the file to read, relative to the workspace root (absolute paths inside it also work).',
  ),
  offset: countField('1-based line number to start reading from. Omit to start at the first line.'),
  limit: countField('Maximum number of lines to return. Omit for the default (2000 lines).'),
})
export type ReadFileInput = z.infer<typeof ReadFileInput>

/**
 * read_file (DESIGN 2). Streams the file: a line range of a 1 GB file never loads the file.
 *
 * Line count and snapshot hash, by file size:
 * - up to FULL_PASS_MAX_BYTES (8 MiB, ~10 ms): one pass over the whole file hashes it, counts its lines and
 *   collects the requested range. `totalLines` is exact; the snapshot is recorded before the result returns.
 * - larger: the requested range is served at once (from the start, or from the nearest checkpoint of a
 *   sparse line index), while a worker thread hashes the file, counts its lines and builds that index (a
 *   checkpoint every 1024 lines or 256 KiB), cached per file version (device, inode, size, mtime, ctime).
 *   Until it is done `totalLines` is `null` ("unknown" in the text) unless the read reached the end; the
 *   snapshot is recorded when the hash is done (`SnapshotStore.expect`; conflict checks wait for it). Later
 *   reads get the exact count, and a range near the end seeks to a checkpoint instead of scanning, which
 *   keeps "the last 200 lines" of 1 GiB as fast as `tail` (bench/read-file.bench.ts: ~0.6 ms warm, the
 *   index of 1 GiB ~2.5 s in the background, peak memory growth ~10 MB).
 */

const DEFAULT_LIMIT = 2000
const SNIFF_BYTES = 8192
const FULL_PASS_MAX_BYTES = 8 * 1024 * 1024
const FIRST_CHUNK_BYTES = 64 * 1024
const CHUNK_BYTES = 1024 * 1024
const MAX_READ_ATTEMPTS = 3
const ALLOWED_CONTROLS = new Set([8, 9, 10, 11, 12, 13, 27])

/** Why the first bytes of a file say it is not UTF-8 text, or null when they look like text. */
function binaryReason(head: Buffer, moreFollows: boolean): string | null {
  if (head.length >= 2 && ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)))
    return 'is UTF-16 encoded; read_file reads UTF-8 text only'
  if (head.includes(0)) return 'is a binary file (it contains NUL bytes)'
  // `stream` leaves a multi-byte character cut by the sample's end undecoded instead of counting it bad.
  const text = new TextDecoder('utf-8').decode(head, { stream: moreFollows })
  let bad = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0xfffd || code === 0x7f || (code < 32 && !ALLOWED_CONTROLS.has(code))) bad++
  }
  if (text.length > 0 && bad / text.length > 0.1)
    return `does not look like UTF-8 text (${Math.round((100 * bad) / text.length)}% of its first bytes are invalid UTF-8 or control bytes): it is binary or uses another encoding`
  return null
}

/** "File not found" with a nudge towards glob and the likely intended name when one sits next to it. */
async function notFound(ctx: ToolContext, path: string, rel: string): Promise<ToolResult> {
  const name = basename(path)
  const stem = name.slice(0, name.length - extname(name).length).toLowerCase()
  let similar: string[] = []
  let parentExists = true
  try {
    similar = (await fs.readdir(dirname(path)))
      .filter((entry) => {
        const lower = entry.toLowerCase()
        return (
          lower !== name &&
          (lower === name.toLowerCase() || lower.slice(0, lower.length - extname(lower).length) === stem)
        )
      })
      .slice(0, 5)
      .map((entry) => toWorkspaceRelative(ctx.workspace, `${dirname(path)}/${entry}`))
  } catch {
    parentExists = false
  }
  const parts = [`File not found: ${rel}.`]
  if (!parentExists)
    parts.push(`Its folder ${toWorkspaceRelative(ctx.workspace, dirname(path))} does not exist either.`)
  if (similar.length > 0) parts.push(`Did you mean ${similar.join(', ')}?`)
  parts.push(`Use glob to find the right path (e.g. pattern "**/${name}").`)
  return fail(parts.join(' '), { title: `Read ${rel}`, metadata: { path: rel } })
}

/**
 * A command's full output, saved in the session's folder when its result was cut (bash names the file in the
 * result): the one place outside the workspace read_file may read, so the model can page through a long log.
 * Only a file directly in that folder, by its absolute path; opened without following a link like any read.
 */
async function savedOutput(ctx: ToolContext, input: string): Promise<string | null> {
  if (!isAbsolute(input) || input.includes('\0')) return null
  try {
    const dir = await fs.realpath(ctx.outputDir)
    if ((await fs.realpath(dirname(input))) !== dir) return null
    // Only a command's saved output (`<call id>.log`): nothing else of the session's folder is readable.
    const name = basename(input)
    return name.endsWith('.log') && name !== '.log' ? join(dir, name) : null
  } catch {
    return null
  }
}

export const readFileTool = defineTool({
  name: 'read_file',
  description:
    'Read a UTF-8 text file in the workspace. Each output line starts with its line number and "|" ' +
    '(e.g. "    12|const x = 1"); that prefix is not part of the file. Returns up to 2000 lines from the ' +
    'start by default: use offset (1-based first line) and limit to read other parts of long files; the end ' +
    'of the output says when more lines follow and which offset to use next. Lines longer than 2000 ' +
    'characters are cut. Binary files are refused. A file must be read before write_file overwrites it or ' +
    'edit_file changes it. It also reads the full output of a command that bash saved (the absolute path ' +
    'given in the bash result).',
  input: ReadFileInput,
  concurrencySafe: true,
  title(input) {
    const range =
      input.offset !== undefined || input.limit !== undefined
        ? `, lines ${input.offset ?? 1}-${(input.offset ?? 1) + (input.limit ?? DEFAULT_LIMIT) - 1}`
        : ''
    return `Read ${input.path}${range}`
  },
  // Reading a secret sends it to the model provider: the user decides. Other protected files (.git/, editor
  // settings) are protected against writes only; reading them is what an agent needs to do. The name is judged
  // as written; a harmless name leading to a secret through a link is refused below (`linkHidesProtection`).
  policy(input, opts) {
    const name = nameInWorkspace(opts.workspace, input.path)
    return name !== null && isSecretPath(name) ? { kind: 'ask', protected: true } : { kind: 'allow' }
  },
  async preview(input) {
    const summary = `Read ${input.path} (a protected file: its content goes to the model)`
    return { ok: true, preview: { kind: 'other', summary } }
  },
  async execute(input, ctx) {
    let path: string
    let rel: string
    const saved = await savedOutput(ctx, input.path)
    if (saved !== null) {
      path = saved
      rel = saved
    } else {
      const resolved = await resolveInWorkspace(ctx.workspace, input.path, 'read')
      if (!resolved.ok) return fail(resolved.reason, { title: `Read ${input.path}` })
      const hidden = linkHidesProtection(ctx.workspace, input.path, resolved.path, 'secret', ctx.pathRules)
      if (hidden) return fail(hidden, { title: `Read ${input.path}` })
      const secrets = workspaceSecrets(ctx.workspace)
      await secrets.ready()
      if (secrets.isOwnData(resolved.path))
        return fail(
          `${input.path} is part of Lanes' own data (session logs, settings, saved file contents), which tools never read.`,
          { title: `Read ${input.path}` },
        )
      path = resolved.path
      rel = toWorkspaceRelative(ctx.workspace, path)
    }
    const from = input.offset ?? 1
    const limit = input.limit ?? DEFAULT_LIMIT
    const to = from + limit - 1
    // A long line is cut after its secret values are hidden (a saved output was redacted when it was kept).
    const redactor = workspaceSecrets(ctx.workspace).redactor()
    const redact = (text: string): string => redactor.redactText(text)

    for (let attempt = 1; ; attempt++) {
      let index: LineIndex | undefined
      let fh: FileHandle
      try {
        // O_NOFOLLOW: the path was resolved to its real target; a symlink swapped in since is not followed.
        fh = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR') return notFound(ctx, path, rel)
        if (code === 'EISDIR') return directory(rel)
        return fail(`Could not read ${rel}: ${(error as Error).message}`, { title: `Read ${rel}` })
      }
      try {
        const st = await fh.stat()
        if (st.isDirectory()) return directory(rel)
        // A hard link to a secret file is the secret file, whatever its name: judged by device and inode. Its
        // own name would have asked the user; this one did not, so it is refused.
        if (saved === null && !isSecretPath(rel) && workspaceSecrets(ctx.workspace).isSecretIdentity(st))
          return fail(
            `${rel} is another name (a hard link) for a secret file, so it is not read without asking. Read the secret file by its own name if it is really needed: that asks the user.`,
            { title: `Read ${rel}` },
          )
        if (!st.isFile())
          return fail(`${rel} is not a regular file (it is a device, FIFO or socket); it cannot be read.`, {
            title: `Read ${rel}`,
          })

        let collector: LineCollector
        let totalLines: number | null
        let snapshot: FileSnapshot | Promise<FileSnapshot | null> | null
        if (st.size <= FULL_PASS_MAX_BYTES) {
          const data = await fh.readFile()
          const after = await fh.stat()
          const changing =
            data.length !== after.size || after.mtimeMs !== st.mtimeMs || after.size !== st.size
          if (changing && attempt < MAX_READ_ATTEMPTS) continue
          const binary = binaryReason(data.subarray(0, SNIFF_BYTES), data.length > SNIFF_BYTES)
          if (binary !== null) {
            // The model now knows the file is there and what it is: it may replace it (write_file with base64
            // content, reviewed as binary), as it may a text file it read.
            if (!changing) ctx.snapshots.record({ path, mtimeMs: st.mtimeMs, hash: sha256(data) })
            return binaryFile(rel, binary, data)
          }
          collector = new LineCollector(1, 0, from, to, redact)
          collector.feed(data, 0)
          totalLines = collector.end()
          // A file still being written (a growing log) is shown as read, but no snapshot vouches for it: a
          // later change to it needs a calmer read first.
          snapshot = changing ? null : { path, mtimeMs: st.mtimeMs, hash: sha256(data) }
        } else {
          // One read serves the binary check and, for the usual "first lines" call, the lines themselves.
          const first = Buffer.allocUnsafe(FIRST_CHUNK_BYTES)
          const { bytesRead: firstRead } = await fh.read(first, 0, first.length, 0)
          const binary = binaryReason(first.subarray(0, Math.min(firstRead, SNIFF_BYTES)), true)
          if (binary !== null) return binaryFile(rel, binary)

          index = lineIndexFor(path, st)
          const start = nearestCheckpoint(index, from)
          collector = new LineCollector(start.line, start.byte, from, to, redact)
          let position = start.byte
          let eof = false
          if (position === 0) {
            collector.feed(first.subarray(0, firstRead), 0)
            position = firstRead
            eof = firstRead === 0
          }
          let buf: Buffer | undefined
          while (!collector.done && !eof) {
            if (ctx.signal.aborted) return fail('Cancelled: the read was stopped.', { title: `Read ${rel}` })
            buf ??= Buffer.allocUnsafe(CHUNK_BYTES)
            const { bytesRead: n } = await fh.read(buf, 0, buf.length, position)
            if (n === 0) eof = true
            else {
              collector.feed(buf.subarray(0, n), position)
              position += n
            }
          }
          // Scanned up to the size the file had when opened: its end is reached, so its line count is known.
          const reachedEnd = eof || position >= st.size ? collector.end() : null
          totalLines = index.result?.totalLines ?? reachedEnd
          const result = index.result
          snapshot =
            result !== null
              ? { path, mtimeMs: result.mtimeMs, hash: result.hash }
              : index.done.then((r) => (r === null ? null : { path, mtimeMs: r.mtimeMs, hash: r.hash }))
        }

        if (snapshot instanceof Promise) ctx.snapshots.expect(path, snapshot)
        else if (snapshot !== null) ctx.snapshots.record(snapshot)
        return present(rel, st.size, from, collector, totalLines)
      } catch (error) {
        return fail(`Could not read ${rel}: ${(error as Error).message}`, { title: `Read ${rel}` })
      } finally {
        await fh.close().catch(() => undefined)
        index?.launch?.()
      }
    }
  },
})

function directory(rel: string): ToolResult {
  return fail(
    `${rel} is a directory, not a file. Use glob to list its files (e.g. pattern "${rel === '.' ? '' : `${rel}/`}*").`,
    { title: `Read ${rel}` },
  )
}

function binaryFile(rel: string, reason: string, data?: Buffer): ToolResult {
  const what = data
    ? ` It is ${formatBytes(data.length)} (${typeLabel(sniffType(data))}); write_file with encoding "base64" can replace it whole.`
    : ''
  return fail(`${rel} ${reason}, so it cannot be shown as text.${what}`, {
    title: `Read ${rel}`,
    metadata: { path: rel, binary: true },
  })
}

function present(
  rel: string,
  bytes: number,
  from: number,
  collector: LineCollector,
  totalLines: number | null,
): ToolResult {
  const shown = collector.lines.length
  if (shown === 0) {
    if (totalLines === 0)
      return ok(`${rel} is empty (0 lines).`, {
        title: `Read ${rel} (empty)`,
        metadata: { path: rel, totalLines: 0, startLine: 0, endLine: 0, more: false, bytes },
      })
    return fail(
      `offset ${from} is past the end of ${rel}, which has ${totalLines ?? 'fewer'} lines. ` +
        `Use an offset from 1 to ${totalLines ?? from - 1}.`,
      { title: `Read ${rel}`, metadata: { path: rel, totalLines } },
    )
  }
  const last = from + shown - 1
  // An unknown count means the scan stopped before the end of the file: bytes, hence lines, follow.
  const more = totalLines === null || last < totalLines
  const parts = [collector.lines.join('\n')]
  if (more) {
    const stop = collector.full ? `Output stopped at ${MAX_OUTPUT_CHARS / 1024} KiB. ` : ''
    const rest =
      totalLines !== null
        ? `${totalLines - last} more lines follow (${totalLines} in total)`
        : // Only files over FULL_PASS_MAX_BYTES get here, so MiB is the smallest unit needed.
          `More lines follow (the file is ${bytes >= 1 << 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`}; its total line count is unknown yet, it is being counted)`
    parts.push(
      `[${stop}Showing lines ${from}-${last}. ${rest}: call read_file with offset=${last + 1} to read on.]`,
    )
  } else if (from > 1) {
    parts.push(`[Showing lines ${from}-${last} of ${last}: end of file.]`)
  }
  return ok(parts.join('\n\n'), {
    title: `Read ${rel}, lines ${from}-${last}`,
    metadata: {
      path: rel,
      totalLines,
      startLine: from,
      endLine: last,
      more,
      truncatedLines: collector.truncatedLines,
      outputCapped: collector.full,
      bytes,
    },
  })
}
