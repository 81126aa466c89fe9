import type { Stats } from 'node:fs'
import { Worker } from 'node:worker_threads'

/**
 * Sparse line index of large files, built in the background while hashing: a checkpoint every
 * CHECKPOINT_EVERY_LINES lines or CHECKPOINT_EVERY_BYTES bytes, cached per file version, so a read far into
 * a large file seeks to the nearest checkpoint instead of scanning from the start.
 */

const CHUNK_BYTES = 1024 * 1024
const CHECKPOINT_EVERY_LINES = 1024
const CHECKPOINT_EVERY_BYTES = 256 * 1024
const MAX_CACHED_INDEXES = 16

export interface IndexResult {
  mtimeMs: number
  hash: string
  totalLines: number
}

export interface LineIndex {
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

export function lineIndexFor(path: string, st: Stats): LineIndex {
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
export function nearestCheckpoint(index: LineIndex, line: number): { line: number; byte: number } {
  let lo = 0
  let hi = index.lines.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if ((index.lines[mid] as number) <= line) lo = mid
    else hi = mid - 1
  }
  return { line: index.lines[lo] as number, byte: index.offsets[lo] as number }
}
