import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs'
import path from 'node:path'
import { constants, inflateSync } from 'node:zlib'
import {
  GitObjectsError,
  OBJ_BLOB,
  OBJ_COMMIT,
  OBJ_TAG,
  OBJ_TREE,
  type GitObject,
  type WorkBudget,
} from './objects-base'
import { ObjectCache, PackFile } from './pack'

/**
 * A repository's whole object store, read as bytes: every pack (pack.ts) and loose object of its `objects`
 * folder and of the folders its `objects/info/alternates` names (a `git clone --shared` or `--reference`
 * borrows objects from another repository, and `git show` prints them just the same). What it does not
 * understand throws GitObjectsError; the caller then assumes the worst.
 */

const TYPE_NAMES = new Map([
  ['commit', OBJ_COMMIT],
  ['tree', OBJ_TREE],
  ['blob', OBJ_BLOB],
  ['tag', OBJ_TAG],
])
/** Git follows alternates this deep, and so do we. */
const MAX_ALTERNATE_DEPTH = 5

/** The objects folder of a repository and those its alternates name, each once. */
export function objectDirs(commonDir: string): string[] {
  const dirs: string[] = []
  const visit = (dir: string, depth: number): void => {
    const real = path.resolve(dir)
    if (dirs.includes(real) || !existsSync(real)) return
    dirs.push(real)
    let text: string
    try {
      text = readFileSync(path.join(real, 'info', 'alternates'), 'utf8')
    } catch {
      return
    }
    if (depth >= MAX_ALTERNATE_DEPTH) throw new GitObjectsError('alternates nest deeper than git follows')
    for (const line of text.split('\n')) {
      const entry = line.trim()
      if (entry === '' || entry.startsWith('#')) continue
      // A quoted (C-escaped) path is rare; rather than guess its escapes, the store counts as unreadable.
      if (entry.startsWith('"')) throw new GitObjectsError('an alternates entry is quoted')
      visit(path.resolve(real, entry), depth + 1)
    }
  }
  visit(path.join(commonDir, 'objects'), 0)
  return dirs
}

/**
 * What changes whenever objects are added to or removed from these folders: the packs' names, sizes and
 * times, and the times of the loose-object folders (a folder's time moves when a file is added to it). Equal
 * signatures mean the same objects, so an earlier answer still holds.
 */
export function storeSignature(dirs: readonly string[]): string {
  const parts: string[] = []
  for (const dir of dirs) {
    parts.push(dir, String(statSync(dir, { bigint: true }).mtimeNs))
    for (const name of readdirSync(dir).sort()) {
      const info = statSync(path.join(dir, name), { bigint: true })
      parts.push(`${name}:${info.mtimeNs}`)
      if (name !== 'pack' || !info.isDirectory()) continue
      for (const file of readdirSync(path.join(dir, name)).sort()) {
        const packInfo = statSync(path.join(dir, name, file), { bigint: true })
        parts.push(`${file}:${packInfo.size}:${packInfo.mtimeNs}`)
      }
    }
  }
  return parts.join('\n')
}

/** A loose object's first bytes are read to learn its type: a whole small object (commit, tree) fits. */
const LOOSE_HEAD_BYTES = 1024
const KEEP_LOOSE_BYTES = 32 * 1024 * 1024

export class ObjectStore {
  private readonly packs: PackFile[] = []
  /**
   * Loose objects by id (hex): the file holding each, or once a small one was read to learn its type, the object
   * itself (up to KEEP_LOOSE_BYTES in all): the walk reads most of them again, and opening a file costs more
   * than keeping a tree of a few hundred bytes.
   */
  private readonly loose = new Map<string, string | GitObject>()
  private keptBytes = 0
  private readonly cache = new ObjectCache()

  private constructor(
    private readonly hashLength: number,
    private readonly budget: WorkBudget,
  ) {}

  /** Opens every pack and lists every loose object of `dirs`; the caller closes the store. */
  static async open(dirs: readonly string[], hashLength: number, budget: WorkBudget): Promise<ObjectStore> {
    const store = new ObjectStore(hashLength, budget)
    try {
      for (const dir of dirs) await store.add(dir)
    } catch (error) {
      store.close()
      throw error
    }
    return store
  }

  private async add(dir: string): Promise<void> {
    const packDir = path.join(dir, 'pack')
    const packFiles = existsSync(packDir) ? readdirSync(packDir).filter((f) => f.endsWith('.pack')) : []
    for (const file of packFiles) {
      this.budget.spend()
      const idx = path.join(packDir, `${file.slice(0, -'.pack'.length)}.idx`)
      // Git reads a pack only through its idx (a multi-pack-index comes in addition to them), so a pack without
      // one is half-written or something else: not understood, so not judged.
      if (!existsSync(idx)) throw new GitObjectsError(`${file} has no idx`)
      this.packs.push(PackFile.open(path.join(packDir, file), idx, this.hashLength, this.cache))
    }
    const rest = this.hashLength * 2 - 2
    for (const sub of readdirSync(dir)) {
      if (!/^[0-9a-f]{2}$/.test(sub)) continue
      await this.budget.tick()
      for (const name of readdirSync(path.join(dir, sub))) {
        this.budget.spend()
        if (name.length === rest && /^[0-9a-f]+$/.test(name))
          this.loose.set(sub + name, path.join(dir, sub, name))
      }
    }
  }

  close(): void {
    for (const pack of this.packs.splice(0)) pack.close()
  }

  /**
   * Every object of the given types in the whole store, reachable or not (other branches, stashes, reflogs,
   * commits a rewrite left behind), as functions that read it. Only headers are read to find them.
   */
  async find(types: ReadonlySet<number>): Promise<Array<() => GitObject>> {
    const found: Array<() => GitObject> = []
    const scratch = Buffer.allocUnsafe(LOOSE_HEAD_BYTES)
    const typeOf = (oid: Buffer): number => this.typeOf(oid, scratch)
    for (const pack of this.packs) {
      for (const offset of await pack.offsetsOf(types, this.budget, typeOf))
        found.push(() => pack.read(offset, this.budget, this.lookup))
    }
    let i = 0
    for (const [hex, file] of this.loose) {
      this.budget.spend()
      if (++i % 256 === 0) await this.budget.tick()
      if (typeof file !== 'string') {
        if (types.has(file.type)) found.push(() => file)
        continue
      }
      const head = looseHead(file, scratch)
      // Blobs are never read again: not kept.
      if (
        typeof head !== 'number' &&
        head.type !== OBJ_BLOB &&
        this.keptBytes + head.data.length <= KEEP_LOOSE_BYTES
      ) {
        this.loose.set(hex, head)
        this.keptBytes += head.data.length
      }
      if (typeof head === 'number' ? types.has(head) : types.has(head.type))
        found.push(typeof head === 'number' ? () => readLoose(file) : () => head)
    }
    return found
  }

  /** The type of object `oid`, from headers only; throws GitObjectsError when it is missing. */
  private typeOf(oid: Buffer, scratch: Buffer, depth = 0): number {
    // A REF_DELTA's base in another pack may be a REF_DELTA again: bounded, as a loop of them is corrupt.
    if (depth > this.packs.length) throw new GitObjectsError('deltas whose bases form a loop')
    for (const pack of this.packs) {
      const offset = pack.find(oid)
      if (offset >= 0) return pack.typeAt(offset, (base) => this.typeOf(base, scratch, depth + 1))
    }
    const file = this.loose.get(oid.toString('hex'))
    if (file === undefined) throw new GitObjectsError(`object ${oid.toString('hex')} is missing`)
    if (typeof file !== 'string') return file.type
    const head = looseHead(file, scratch)
    return typeof head === 'number' ? head : head.type
  }

  /** The object `oid` (raw bytes), from a pack or a loose file; throws GitObjectsError when it is missing. */
  read(oid: Buffer): GitObject {
    for (const pack of this.packs) {
      const offset = pack.find(oid)
      if (offset >= 0) return pack.read(offset, this.budget, this.lookup)
    }
    const file = this.loose.get(oid.toString('hex'))
    if (file === undefined) throw new GitObjectsError(`object ${oid.toString('hex')} is missing`)
    this.budget.spend()
    return typeof file === 'string' ? readLoose(file) : file
  }

  private readonly lookup = (oid: Buffer): GitObject => this.read(oid)
}

/**
 * A small loose object whole (its file fits in `scratch`), or a larger one's type, read from the start of its
 * zlib stream only (a loose blob can be large).
 */
function looseHead(file: string, scratch: Buffer): GitObject | number {
  let head: Buffer
  const fd = openSync(file, 'r')
  try {
    head = scratch.subarray(0, readSync(fd, scratch, 0, scratch.length, 0))
  } finally {
    closeSync(fd)
  }
  if (head.length < scratch.length) return parseLoose(head, file)
  let text: string
  try {
    const start = inflateSync(head, { finishFlush: constants.Z_SYNC_FLUSH, chunkSize: INFLATE_CHUNK })
    text = start.toString('latin1', 0, 32)
  } catch {
    throw new GitObjectsError(`${file} is not a loose object`)
  }
  const type = TYPE_NAMES.get(text.slice(0, text.indexOf(' ')))
  if (type === undefined) throw new GitObjectsError(`${file} is not a loose object`)
  return type
}

/** Output buffers of zlib for loose objects, most of which are small (its default, 16 KiB, is mostly garbage). */
const INFLATE_CHUNK = 4096

function readLoose(file: string): GitObject {
  return parseLoose(readFileSync(file), file)
}

/** A loose object's bytes: zlib of `<type> <size>\0<content>`. */
function parseLoose(raw: Buffer, file: string): GitObject {
  let data: Buffer
  try {
    data = inflateSync(raw, { chunkSize: INFLATE_CHUNK })
  } catch {
    throw new GitObjectsError(`${file} is not a loose object`)
  }
  const nul = data.indexOf(0)
  const header = nul > 0 ? data.toString('latin1', 0, nul) : ''
  const match = /^([a-z]+) (\d+)$/.exec(header)
  const type = match ? TYPE_NAMES.get(match[1] as string) : undefined
  const content = data.subarray(nul + 1)
  if (type === undefined || Number(match?.[2]) !== content.length)
    throw new GitObjectsError(`${file} is not a loose object`)
  return { type, data: content }
}
