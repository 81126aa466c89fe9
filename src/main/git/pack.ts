import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs'
import { inflateSync } from 'node:zlib'
import { GitObjectsError, OBJ_COMMIT, OBJ_TAG, type GitObject, type WorkBudget } from './objects-base'

/**
 * Git's object files read as bytes (never by running git: see git-dir.ts): pack files with their `.idx`
 * (version 1 and 2, SHA-1 and SHA-256), including deltas against an earlier object of the same pack
 * (OFS_DELTA) or against any object named by id (REF_DELTA), and the zlib and delta formats they share with
 * loose objects (objects.ts). Anything that does not fit what git writes throws GitObjectsError: the
 * caller then assumes the worst.
 */

const OFS_DELTA = 6
const REF_DELTA = 7

/**
 * A pack up to this size is read whole, once: trees and commits lie all over it, and reading them one window at a
 * time costs more (system calls, and buffers for the garbage collector) than reading every byte.
 */
const WHOLE_PACK_BYTES = 32 * 1024 * 1024
/** Bytes read at once from a larger pack: neighbouring entries' headers and small objects come in one read. */
const WINDOW_BYTES = 64 * 1024

/**
 * The memory one store's packs use: packs held whole, and resolved objects by where they were read (a pack's
 * number and the offset in it), least recently used dropped past a byte cap. Trees are stored as deltas of
 * each other in chains up to 50 long, and reading a commit's tree would otherwise re-inflate the whole chain.
 */
export class ObjectCache {
  private readonly entries = new Map<number, GitObject>()
  private bytes = 0
  private packs = 0
  private wholePackBytesLeft = 2 * WHOLE_PACK_BYTES

  constructor(private readonly maxBytes = 48 * 1024 * 1024) {}

  /**
   * Whether a pack of `size` bytes may be held in memory whole: each up to WHOLE_PACK_BYTES, all together up to
   * twice that, so a store of many packs does not end up in memory.
   */
  holdWholePack(size: number): boolean {
    if (size > WHOLE_PACK_BYTES || size > this.wholePackBytesLeft) return false
    this.wholePackBytesLeft -= size
    return true
  }

  /** A key space for one more pack: its keys are `base + offset` (offsets stay below 2^40, a terabyte). */
  newPack(): number {
    return this.packs++ * 2 ** 40
  }

  get(key: number): GitObject | undefined {
    const found = this.entries.get(key)
    if (found !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, found)
    }
    return found
  }

  set(key: number, object: GitObject): void {
    if (object.data.length > this.maxBytes / 4 || this.entries.has(key)) return
    this.entries.set(key, object)
    this.bytes += object.data.length
    for (const [oldKey, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break
      this.entries.delete(oldKey)
      this.bytes -= old.data.length
    }
  }
}

/** The object named `oid` from anywhere in the store (another pack, a loose file); throws if it is not there. */
export type ObjectLookup = (oid: Buffer) => GitObject

/** An entry's header, at `offset` in the pack. */
interface EntryHeader {
  readonly offset: number
  readonly type: number
  readonly size: number
  /** Where its zlib stream starts and where the next entry (or the pack's checksum) starts. */
  readonly dataStart: number
  readonly end: number
  readonly baseOffset?: number
  readonly baseOid?: Buffer
}

/** A delta chain longer than this is corrupt (git's own limit is 4095). */
const MAX_DELTA_DEPTH = 10_000
export class PackFile {
  readonly count: number
  /** Entry offsets in ascending order: where each entry ends is where the next begins. */
  private readonly ascending: Float64Array
  private window: { start: number; bytes: Buffer } = { start: 0, bytes: Buffer.alloc(0) }
  private readonly cacheBase: number
  /** Read whole into `window` (decided at the first read), or a window at a time. */
  private whole: boolean | undefined
  private readonly fanout: Uint32Array

  private constructor(
    readonly name: string,
    private readonly fd: number,
    private readonly size: number,
    private readonly hashLength: number,
    /** Object ids in the idx's (sorted) order, and each one's offset in the pack. */
    private readonly oids: Buffer,
    private readonly offsets: Float64Array,
    private readonly cache: ObjectCache,
  ) {
    this.count = offsets.length
    // How many ids start with a byte up to each value (what the idx's fan-out holds), from the ids themselves.
    const fanout = new Uint32Array(256)
    for (let i = 0; i < this.count; i++) {
      const first = oids[i * hashLength] as number
      fanout[first] = (fanout[first] as number) + 1
    }
    for (let b = 1; b < 256; b++) fanout[b] = (fanout[b] as number) + (fanout[b - 1] as number)
    this.fanout = fanout
    this.ascending = Float64Array.from(offsets).sort()
    this.cacheBase = cache.newPack()
  }

  /** Opens `<name>.pack` with its `.idx`; the caller closes it. */
  static open(packPath: string, idxPath: string, hashLength: number, cache: ObjectCache): PackFile {
    const { oids, offsets } = parseIdx(readFileSync(idxPath), hashLength)
    const fd = openSync(packPath, 'r')
    try {
      const size = fstatSync(fd).size
      const head = Buffer.alloc(12)
      readSync(fd, head, 0, 12, 0)
      const version = head.readUInt32BE(4)
      if (head.toString('latin1', 0, 4) !== 'PACK' || (version !== 2 && version !== 3))
        throw new GitObjectsError(`${packPath} is not a pack git knows (version ${version})`)
      if (head.readUInt32BE(8) !== offsets.length)
        throw new GitObjectsError(`${packPath} and its idx count different objects`)
      for (const offset of offsets) {
        if (offset < 12 || offset >= size - hashLength)
          throw new GitObjectsError(`${idxPath} names an object outside its pack`)
      }
      return new PackFile(packPath, fd, size, hashLength, oids, offsets, cache)
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  close(): void {
    closeSync(this.fd)
  }

  /**
   * The offset of object `oid` in this pack, or -1: a binary search among the ids sharing its first byte (the
   * idx's fan-out), compared here rather than by Buffer.compare, whose native call costs more than the
   * comparison (ids differ within their first bytes).
   */
  find(oid: Buffer): number {
    const h = this.hashLength
    const first = oid[0] as number
    let lo = first === 0 ? 0 : (this.fanout[first - 1] as number)
    let hi = (this.fanout[first] as number) - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const at = mid * h
      let cmp = 0
      for (let k = 0; k < h && cmp === 0; k++) cmp = (oid[k] as number) - (this.oids[at + k] as number)
      if (cmp === 0) return this.offsets[mid] as number
      if (cmp > 0) lo = mid + 1
      else hi = mid - 1
    }
    return -1
  }

  /**
   * The offsets of the entries of the `wanted` types (commit, tree, blob, tag), reading only the entries'
   * headers: a delta has its base's type, found in this pack (an earlier offset) or, for a REF_DELTA whose base is
   * not here, through `typeOf` (another pack or a loose object, what a thin pack completed by git points to).
   */
  async offsetsOf(
    wanted: ReadonlySet<number>,
    budget: WorkBudget,
    typeOf: (oid: Buffer) => number,
  ): Promise<number[]> {
    // By position in `ascending`; 0 while unknown.
    const types = new Uint8Array(this.count)
    const pending: Array<{ at: number; base: number | Buffer }> = []
    for (const [i, offset] of this.ascending.entries()) {
      budget.spend()
      if (i % 1024 === 1023) await budget.tick()
      const entry = this.header(offset)
      if (entry.type === OFS_DELTA) {
        // Its base comes earlier, but may be a REF_DELTA not settled yet (a fetched pack keeps those).
        const baseType = types[this.positionOf(entry.baseOffset as number)] as number
        if (baseType === 0) pending.push({ at: i, base: entry.baseOffset as number })
        else types[i] = baseType
      } else if (entry.type === REF_DELTA) {
        pending.push({ at: i, base: entry.baseOid as Buffer })
      } else {
        types[i] = entry.type
      }
    }
    // A delta's base may itself be a delta settled later: resolved in rounds, each settling at least one, or
    // the chain is a loop.
    let left = pending
    while (left.length > 0) {
      const unsettled: typeof left = []
      for (const delta of left) {
        let baseType: number
        if (typeof delta.base === 'number') {
          baseType = types[this.positionOf(delta.base)] as number
        } else {
          const here = this.find(delta.base)
          baseType = here >= 0 ? (types[this.positionOf(here)] as number) : typeOf(delta.base)
        }
        if (baseType === 0) unsettled.push(delta)
        else types[delta.at] = baseType
      }
      if (unsettled.length === left.length)
        throw new GitObjectsError(`${this.name}: deltas whose bases never resolve`)
      left = unsettled
    }
    const offsets: number[] = []
    for (let i = 0; i < this.count; i++)
      if (wanted.has(types[i] as number)) offsets.push(this.ascending[i] as number)
    return offsets
  }

  /** The type of the entry at `offset`, from headers only (a delta's base may be a large blob). */
  typeAt(offset: number, typeOf: (oid: Buffer) => number): number {
    let at = offset
    for (let depth = 0; depth <= MAX_DELTA_DEPTH; depth++) {
      const entry = this.header(at)
      if (entry.type === OFS_DELTA) {
        at = entry.baseOffset as number
      } else if (entry.type === REF_DELTA) {
        const here = this.find(entry.baseOid as Buffer)
        if (here < 0) return typeOf(entry.baseOid as Buffer)
        at = here
      } else {
        return entry.type
      }
    }
    throw new GitObjectsError(`${this.name}: a delta chain without end`)
  }

  /** The object at `offset`, its deltas applied. */
  read(offset: number, budget: WorkBudget, lookup: ObjectLookup): GitObject {
    const key = (at: number): number => this.cacheBase + at
    const chain: EntryHeader[] = []
    let base: GitObject | undefined
    let at = offset
    while (base === undefined) {
      base = this.cache.get(key(at))
      if (base !== undefined) break
      if (chain.length > MAX_DELTA_DEPTH) throw new GitObjectsError(`${this.name}: a delta chain without end`)
      const entry = this.header(at)
      if (entry.type === OFS_DELTA) {
        chain.push(entry)
        at = entry.baseOffset as number
      } else if (entry.type === REF_DELTA) {
        chain.push(entry)
        const here = this.find(entry.baseOid as Buffer)
        if (here >= 0) at = here
        else base = lookup(entry.baseOid as Buffer)
      } else {
        base = { type: entry.type, data: this.inflate(entry, budget) }
        this.cache.set(key(at), base)
      }
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const entry = chain[i] as EntryHeader
      base = { type: base.type, data: applyDelta(base.data, this.inflate(entry, budget)) }
      this.cache.set(key(entry.offset), base)
    }
    return base
  }

  private inflate(entry: EntryHeader, budget: WorkBudget): Buffer {
    budget.spend()
    const data = inflateExact(this.bytes(entry.dataStart, entry.end - entry.dataStart), entry.size)
    if (data === null)
      throw new GitObjectsError(`${this.name}: the entry at ${entry.offset} does not inflate`)
    return data
  }

  private header(offset: number): EntryHeader {
    const bytes = this.bytes(offset, Math.min(32 + this.hashLength, this.size - offset))
    let p = 0
    let byte = bytes[p++] as number
    const type = (byte >> 4) & 7
    let size = byte & 0x0f
    let scale = 16
    while (byte & 0x80) {
      byte = bytes[p++] as number
      size += (byte & 0x7f) * scale
      scale *= 128
      if (p > 10) throw new GitObjectsError(`${this.name}: an entry at ${offset} has no size`)
    }
    const end = this.endOf(offset)
    if (type === OFS_DELTA) {
      byte = bytes[p++] as number
      let distance = byte & 0x7f
      while (byte & 0x80) {
        byte = bytes[p++] as number
        distance = (distance + 1) * 128 + (byte & 0x7f)
        if (p > 20) throw new GitObjectsError(`${this.name}: a delta at ${offset} has no base`)
      }
      if (distance <= 0 || distance > offset - 12)
        throw new GitObjectsError(`${this.name}: a delta before the pack`)
      return { offset, type, size, dataStart: offset + p, end, baseOffset: offset - distance }
    }
    if (type === REF_DELTA) {
      const baseOid = Buffer.from(bytes.subarray(p, p + this.hashLength))
      return { offset, type, size, dataStart: offset + p + this.hashLength, end, baseOid }
    }
    if (type < OBJ_COMMIT || type > OBJ_TAG) throw new GitObjectsError(`${this.name}: object type ${type}`)
    return { offset, type, size, dataStart: offset + p, end }
  }

  /** Where the entry at `offset` ends: at the next entry, or at the pack's trailing checksum. */
  private endOf(offset: number): number {
    const i = this.positionOf(offset)
    return i + 1 < this.count ? (this.ascending[i + 1] as number) : this.size - this.hashLength
  }

  /** The position of the entry at `offset` in `ascending`; throws when no entry starts there. */
  private positionOf(offset: number): number {
    let lo = 0
    let hi = this.count - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1
      if ((this.ascending[mid] as number) <= offset) lo = mid
      else hi = mid - 1
    }
    if (this.ascending[lo] !== offset) throw new GitObjectsError(`${this.name}: no entry at ${offset}`)
    return lo
  }

  /** `length` bytes at `offset`, through a window so neighbouring entries cost one read. */
  private bytes(offset: number, length: number): Buffer {
    const w = this.window
    if (offset >= w.start && offset + length <= w.start + w.bytes.length)
      return w.bytes.subarray(offset - w.start, offset - w.start + length)
    if (length < 0 || offset + length > this.size) throw new GitObjectsError(`${this.name} is cut short`)
    this.whole ??= this.cache.holdWholePack(this.size)
    if (this.whole) {
      this.window = { start: 0, bytes: this.readAt(0, this.size) }
      return this.window.bytes.subarray(offset, offset + length)
    }
    // A fresh buffer per read: what was handed out of the old window stays valid.
    const bytes = this.readAt(
      offset,
      length > WINDOW_BYTES / 2 ? length : Math.min(WINDOW_BYTES, this.size - offset),
    )
    if (length <= WINDOW_BYTES / 2) this.window = { start: offset, bytes }
    return bytes.subarray(0, length)
  }

  private readAt(offset: number, length: number): Buffer {
    const bytes = Buffer.allocUnsafe(length)
    let got = 0
    while (got < length) {
      const n = readSync(this.fd, bytes, got, length - got, offset + got)
      if (n === 0) throw new GitObjectsError(`${this.name} is cut short`)
      got += n
    }
    return bytes
  }
}

/** The object ids of an idx (sorted, as git writes them) and each one's offset in the pack. */
function parseIdx(idx: Buffer, h: number): { oids: Buffer; offsets: Float64Array } {
  const fail = (why: string): never => {
    throw new GitObjectsError(`a pack index ${why}`)
  }
  if (idx.length >= 8 && idx.readUInt32BE(0) === 0xff744f63) {
    if (idx.readUInt32BE(4) !== 2) fail(`has version ${idx.readUInt32BE(4)}`)
    const n = idx.length >= 8 + 1024 ? idx.readUInt32BE(8 + 1020) : fail('is cut short')
    const oidsAt = 8 + 1024
    const smallAt = oidsAt + n * (h + 4)
    const largeAt = smallAt + n * 4
    if (largeAt + 2 * h > idx.length) fail('is cut short')
    const offsets = new Float64Array(n)
    for (let i = 0; i < n; i++) {
      const small = idx.readUInt32BE(smallAt + i * 4)
      if (small & 0x80000000) {
        const at = largeAt + (small & 0x7fffffff) * 8
        if (at + 8 + 2 * h > idx.length) fail('is cut short')
        offsets[i] = Number(idx.readBigUInt64BE(at))
      } else {
        offsets[i] = small
      }
    }
    return { oids: idx.subarray(oidsAt, oidsAt + n * h), offsets }
  }
  // Version 1 (written by git before 1.5.2): the fan-out, then a 4-byte offset and the id per entry.
  const n = idx.length >= 1024 ? idx.readUInt32BE(1020) : fail('is cut short')
  if (1024 + n * (4 + h) + 2 * h > idx.length) fail('is cut short')
  const oids = Buffer.alloc(n * h)
  const offsets = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const at = 1024 + i * (4 + h)
    offsets[i] = idx.readUInt32BE(at)
    idx.copy(oids, i * h, at + 4, at + 4 + h)
  }
  return { oids, offsets }
}

/**
 * A whole zlib stream of exactly `size` bytes once inflated; null when it is not one. Output buffers of the
 * expected size (zlib's default is 16 KiB per call, mostly garbage for trees of a few hundred bytes: half the
 * time of a history check went to allocating and collecting them), and never more than `size` (a corrupt
 * entry cannot inflate into gigabytes).
 */
export function inflateExact(compressed: Buffer, size: number): Buffer | null {
  try {
    const data = inflateSync(compressed, {
      chunkSize: Math.min(Math.max(size, 64), 64 * 1024 * 1024),
      maxOutputLength: Math.max(size, 1),
    })
    return data.length === size ? data : null
  } catch {
    return null
  }
}

/** A little-endian base-128 number in a delta, and where the next field starts. */
function deltaSize(delta: Buffer, at: number): [number, number] {
  let value = 0
  let scale = 1
  let byte: number
  do {
    if (at >= delta.length) throw new GitObjectsError('a delta is cut short')
    byte = delta[at++] as number
    value += (byte & 0x7f) * scale
    scale *= 128
  } while (byte & 0x80)
  return [value, at]
}

/** Git's delta format: the target's bytes as copies of base ranges and inserted literals. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  const [baseSize, afterBase] = deltaSize(delta, 0)
  const [targetSize, start] = deltaSize(delta, afterBase)
  if (baseSize !== base.length) throw new GitObjectsError('a delta does not fit its base')
  const out = Buffer.allocUnsafe(targetSize)
  let o = 0
  let p = start
  while (p < delta.length) {
    const op = delta[p++] as number
    if (op & 0x80) {
      let from = 0
      let size = 0
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) from += (delta[p++] ?? 0) * 2 ** (8 * bit)
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) size += (delta[p++] ?? 0) * 2 ** (8 * bit)
      if (size === 0) size = 0x10000
      if (from + size > base.length || o + size > targetSize)
        throw new GitObjectsError('a delta copies too much')
      base.copy(out, o, from, from + size)
      o += size
    } else if (op !== 0) {
      if (p + op > delta.length || o + op > targetSize) throw new GitObjectsError('a delta inserts too much')
      delta.copy(out, o, p, p + op)
      o += op
      p += op
    } else {
      throw new GitObjectsError('a delta has a reserved instruction')
    }
  }
  if (o !== targetSize) throw new GitObjectsError('a delta is cut short')
  return out
}
