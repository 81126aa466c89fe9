import { constants, promises as fs } from 'node:fs'
import type { Stats } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, extname, isAbsolute, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { ReadFileInput } from './schemas'
import type { FileSnapshot } from './snapshots'
import { sha256 } from './snapshots'
import { defineTool, fail, ok } from './tool'
import type { ToolContext, ToolResult } from './tool'
import { isSecretPath } from './sensitive-paths'
import { linkHidesProtection, nameInWorkspace, resolveInWorkspace, toWorkspaceRelative } from './workspace'

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
export const MAX_LINE_CHARS = 2000
// What one call may put in front of the model; beyond it the output stops at a line boundary and says how
// to read on.
const MAX_OUTPUT_CHARS = 256 * 1024
const SNIFF_BYTES = 8192
const FULL_PASS_MAX_BYTES = 8 * 1024 * 1024
const FIRST_CHUNK_BYTES = 64 * 1024
const CHUNK_BYTES = 1024 * 1024
const CHECKPOINT_EVERY_LINES = 1024
const CHECKPOINT_EVERY_BYTES = 256 * 1024
const MAX_CACHED_INDEXES = 16
// Enough bytes to hold MAX_LINE_CHARS code points of any UTF-8 text.
const KEEP_LINE_BYTES = MAX_LINE_CHARS * 4 + 4
const COUNT_CHARS_UP_TO_BYTES = 1024 * 1024
const MAX_READ_ATTEMPTS = 3
const ALLOWED_CONTROLS = new Set([8, 9, 10, 11, 12, 13, 27])

const LF = 10
const CR = 13

/** `%6d|text`: the numbered line format of read_file (and of edit_file's excerpt). */
export function numberedLine(lineNumber: number, text: string): string {
  return `${String(lineNumber).padStart(6)}|${text}`
}

/** Cuts a line at MAX_LINE_CHARS code points (never inside a surrogate pair) with a marker giving its size. */
export function cutLongLine(text: string, size: number, unit: 'chars' | 'bytes' = 'chars'): string {
  let end = 0
  for (let count = 0; count < MAX_LINE_CHARS && end < text.length; count++) {
    const code = text.charCodeAt(end)
    end += code >= 0xd800 && code <= 0xdbff && end + 1 < text.length ? 2 : 1
  }
  return `${text.slice(0, end)}… [line truncated: ${size} ${unit}]`
}

/**
 * Collects lines `from..to` (1-based, inclusive) from bytes fed in order, counting every line it passes.
 * Memory is bounded whatever the line lengths: at most KEEP_LINE_BYTES of a line are kept.
 */
class LineCollector {
  readonly lines: string[] = []
  truncatedLines = 0
  /** Stopped before line `line` because the output budget was reached. */
  full = false
  /** Number of the line whose bytes are being consumed; its first byte is at `lineStart`. */
  line: number
  lineStart: number
  /** Absolute offset just past the bytes fed so far. */
  consumed: number
  private outputChars = 0
  private kept: Buffer[] = []
  private keptBytes = 0
  private lineBytes = 0
  private lineChars = 0
  private lastByte = -1

  constructor(
    startLine: number,
    startByte: number,
    private readonly from: number,
    private readonly to: number,
  ) {
    this.line = startLine
    this.lineStart = startByte
    this.consumed = startByte
  }

  get done(): boolean {
    return this.full || this.line > this.to
  }

  feed(chunk: Buffer, at: number): void {
    let pos = 0
    while (pos < chunk.length) {
      const nl = chunk.indexOf(LF, pos)
      const end = nl === -1 ? chunk.length : nl
      const collecting = this.line >= this.from && this.line <= this.to && !this.full
      if (collecting && end > pos) this.take(chunk, pos, end)
      if (nl === -1) break
      if (collecting) this.finishLine()
      this.line++
      this.lineStart = at + nl + 1
      pos = nl + 1
    }
    this.consumed = at + chunk.length
  }

  /** At end of file: finishes a last line without a newline. Returns the file's line count. */
  end(): number {
    if (this.consumed > this.lineStart) {
      if (this.line >= this.from && this.line <= this.to && !this.full) this.finishLine()
      return this.line
    }
    return this.line - 1
  }

  private take(chunk: Buffer, start: number, end: number): void {
    if (this.keptBytes < KEEP_LINE_BYTES) {
      // Copied: the caller reuses its read buffer.
      const slice = Buffer.from(
        chunk.subarray(start, Math.min(end, start + KEEP_LINE_BYTES - this.keptBytes)),
      )
      this.kept.push(slice)
      this.keptBytes += slice.length
    }
    // Code points = bytes that do not continue a UTF-8 sequence; only lines being shown are counted, and
    // past COUNT_CHARS_UP_TO_BYTES (a minified bundle, a one-line dump) the size is given in bytes instead.
    if (this.lineBytes < COUNT_CHARS_UP_TO_BYTES)
      for (let i = start; i < end; i++) if (((chunk[i] as number) & 0xc0) !== 0x80) this.lineChars++
    this.lineBytes += end - start
    this.lastByte = chunk[end - 1] as number
  }

  private finishLine(): void {
    let text =
      this.kept.length === 1
        ? (this.kept[0] as Buffer).toString('utf8')
        : Buffer.concat(this.kept).toString('utf8')
    let chars = this.lineChars
    if (this.line === 1 && text.startsWith('\uFEFF')) {
      text = text.slice(1)
      chars--
    }
    // CRLF files show their lines without the CR; edit_file puts CRLF back (DESIGN 2).
    if (this.lastByte === CR) chars--
    if (this.lineBytes > COUNT_CHARS_UP_TO_BYTES) {
      text = cutLongLine(text, this.lineBytes - (this.lastByte === CR ? 1 : 0), 'bytes')
      this.truncatedLines++
    } else if (chars > MAX_LINE_CHARS) {
      text = cutLongLine(text, chars)
      this.truncatedLines++
    } else if (text.endsWith('\r')) text = text.slice(0, -1)
    this.kept = []
    this.keptBytes = 0
    this.lineBytes = 0
    this.lineChars = 0
    this.lastByte = -1

    const formatted = numberedLine(this.line, text)
    if (this.lines.length > 0 && this.outputChars + formatted.length + 1 > MAX_OUTPUT_CHARS) {
      this.full = true
      return
    }
    this.outputChars += formatted.length + 1
    this.lines.push(formatted)
  }
}

// ---------------------------------------------------------------------------------------------------------
// Sparse line index of large files, built in the background while hashing.

interface IndexResult {
  mtimeMs: number
  hash: string
  totalLines: number
}

interface LineIndex {
  key: string
  /** Checkpoints: line `lines[i]` starts at byte `offsets[i]`. Grows while the index is being built. */
  lines: number[]
  offsets: number[]
  result: IndexResult | null
  done: Promise<IndexResult | null>
  /** Starts the build; called by the read that created the index once its file is closed, then null. */
  launch: (() => void) | null
}

const lineIndexes = new Map<string, LineIndex>()

function lineIndexFor(path: string, st: Stats): LineIndex {
  // Any change to the file (even a touch) changes mtime or ctime: a new version gets a new index.
  const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`
  const cached = lineIndexes.get(path)
  if (cached !== undefined && cached.key === key) {
    // Most recently used last, so eviction drops the coldest.
    lineIndexes.delete(path)
    lineIndexes.set(path, cached)
    return cached
  }
  let open!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  const index: LineIndex = {
    key,
    lines: [1],
    offsets: [0],
    result: null,
    done: Promise.resolve(null),
    launch: null,
  }
  index.launch = () => {
    index.launch = null
    open()
  }
  lineIndexes.delete(path)
  lineIndexes.set(path, index)
  if (lineIndexes.size > MAX_CACHED_INDEXES) {
    const coldest = lineIndexes.keys().next().value
    if (coldest !== undefined) lineIndexes.delete(coldest)
  }
  index.done = gate
    .then(() => buildLineIndex(path, index))
    .catch(() => null)
    .then((result) => {
      if (result === null && lineIndexes.get(path) === index) lineIndexes.delete(path)
      return result
    })
  return index
}

// Runs in a worker thread: hashing and scanning a large file take seconds of CPU that would otherwise hold
// the main process (in the app, the Electron main and its IPC) and slow every other tool call meanwhile.
// Plain CommonJS on Node built-ins, evaluated from this string, so it runs the same under tsx, vitest and
// the bundled app without a separate entry file to ship.
const INDEXER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const { createHash } = require('node:crypto')
const { path, key, chunkBytes, everyLines, everyBytes, batchChunks } = workerData
const identity = (st) => st.dev + ':' + st.ino + ':' + st.size + ':' + st.mtimeMs + ':' + st.ctimeMs
let fd = -1
try {
  fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  const st = fs.fstatSync(fd)
  if (identity(st) !== key) throw new Error('stale')
  const hash = createHash('sha256')
  const buf = Buffer.allocUnsafe(chunkBytes)
  let position = 0, line = 1, lineStart = 0, checkpointLine = 1, checkpointByte = 0, chunks = 0
  let lines = [], offsets = []
  for (;;) {
    const n = fs.readSync(fd, buf, 0, chunkBytes, position)
    if (n === 0) break
    const chunk = buf.subarray(0, n)
    hash.update(chunk)
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, nl + 1)) {
      line++
      lineStart = position + nl + 1
      if (line - checkpointLine >= everyLines || lineStart - checkpointByte >= everyBytes) {
        lines.push(line)
        offsets.push(lineStart)
        checkpointLine = line
        checkpointByte = lineStart
      }
    }
    position += n
    if (++chunks % batchChunks === 0 && lines.length > 0) {
      parentPort.postMessage({ type: 'checkpoints', lines, offsets })
      lines = []
      offsets = []
    }
  }
  if (lines.length > 0) parentPort.postMessage({ type: 'checkpoints', lines, offsets })
  // Changed while being read: neither the hash nor the checkpoints describe one version of the file.
  if (position !== st.size || identity(fs.fstatSync(fd)) !== key) throw new Error('stale')
  const totalLines = position > lineStart ? line : line - 1
  parentPort.postMessage({ type: 'done', mtimeMs: st.mtimeMs, hash: hash.digest('hex'), totalLines })
} catch (error) {
  parentPort.postMessage({ type: 'failed', message: String(error && error.message) })
} finally {
  if (fd !== -1) fs.closeSync(fd)
}
`

type IndexerMessage =
  | { type: 'checkpoints'; lines: number[]; offsets: number[] }
  | { type: 'done'; mtimeMs: number; hash: string; totalLines: number }
  | { type: 'failed'; message: string }

// Two cores is a common machine: more concurrent full-file passes would only compete for them.
const MAX_RUNNING_INDEXERS = 2
const INDEXER_BATCH_CHUNKS = 8
let runningIndexers = 0
const queuedIndexers: Array<() => void> = []

function buildLineIndex(path: string, index: LineIndex): Promise<IndexResult | null> {
  return new Promise((resolve) => {
    const start = (): void => {
      runningIndexers++
      let settled = false
      const finish = (result: IndexResult | null): void => {
        if (settled) return
        settled = true
        runningIndexers--
        queuedIndexers.shift()?.()
        resolve(result)
      }
      // Evicted or superseded by a newer version of the file while queued: nothing to build.
      if (lineIndexes.get(path) !== index) return finish(null)
      let worker: Worker
      try {
        worker = new Worker(INDEXER_SOURCE, {
          eval: true,
          workerData: {
            path,
            key: index.key,
            chunkBytes: CHUNK_BYTES,
            everyLines: CHECKPOINT_EVERY_LINES,
            everyBytes: CHECKPOINT_EVERY_BYTES,
            batchChunks: INDEXER_BATCH_CHUNKS,
          },
        })
      } catch {
        return finish(null)
      }
      // Never keeps the process alive: a CLI run that is done exits without waiting for an index.
      worker.unref()
      worker.on('message', (message: IndexerMessage) => {
        switch (message.type) {
          case 'checkpoints':
            for (let i = 0; i < message.lines.length; i++) {
              index.lines.push(message.lines[i] as number)
              index.offsets.push(message.offsets[i] as number)
            }
            return
          case 'done':
            index.result = { mtimeMs: message.mtimeMs, hash: message.hash, totalLines: message.totalLines }
            return finish(index.result)
          case 'failed':
            return finish(null)
          default:
            return message satisfies never
        }
      })
      worker.on('error', () => finish(null))
      worker.on('exit', () => finish(null))
    }
    // On the next turn of the event loop: creating the worker blocks for a few ms, after the read's answer.
    if (runningIndexers < MAX_RUNNING_INDEXERS) setImmediate(start)
    else queuedIndexers.push(start)
  })
}

/** The last checkpoint at or before `line`. */
function nearestCheckpoint(index: LineIndex, line: number): { line: number; byte: number } {
  let lo = 0
  let hi = index.lines.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if ((index.lines[mid] as number) <= line) lo = mid
    else hi = mid - 1
  }
  return { line: index.lines[lo] as number, byte: index.offsets[lo] as number }
}

// ---------------------------------------------------------------------------------------------------------

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
    const name = basename(input)
    return name === '' || name === '.' || name === '..' ? null : join(dir, name)
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
      path = resolved.path
      rel = toWorkspaceRelative(ctx.workspace, path)
    }
    const from = input.offset ?? 1
    const limit = input.limit ?? DEFAULT_LIMIT
    const to = from + limit - 1

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
          if (binary !== null) return binaryFile(rel, binary)
          collector = new LineCollector(1, 0, from, to)
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
          collector = new LineCollector(start.line, start.byte, from, to)
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

function binaryFile(rel: string, reason: string): ToolResult {
  return fail(`${rel} ${reason}, so it cannot be shown as text.`, {
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
