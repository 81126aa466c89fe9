import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs'
import path from 'node:path'
import { constants, inflateSync } from 'node:zlib'
import {
  GitObjectsError,
  OBJ_BLOB,
  OBJ_COMMIT,
  OBJ_TAG,
  OBJ_TREE,
  ObjectCache,
  PackFile,
  type GitObject,
  type WorkBudget,
} from './git-pack'

/**
 * A repository's whole object store, read as bytes: every pack (git-pack.ts) and loose object of its `objects`
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

export class ObjectStore {
  private readonly packs: PackFile[] = []
  /** Loose objects by id (hex): the file holding each. */
  private readonly loose = new Map<string, string>()
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
    const typeOf = (oid: Buffer): number => this.read(oid).type
    for (const pack of this.packs) {
      for (const [offset, type] of await pack.types(this.budget, typeOf)) {
        if (types.has(type)) found.push(() => pack.read(offset, this.budget, this.lookup))
      }
    }
    let i = 0
    for (const file of this.loose.values()) {
      this.budget.spend()
      if (++i % 256 === 0) await this.budget.tick()
      if (types.has(looseType(file))) found.push(() => readLoose(file))
    }
    return found
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
    return readLoose(file)
  }

  private readonly lookup = (oid: Buffer): GitObject => this.read(oid)
}

/** A loose object's type, from the start of its zlib stream only (a loose blob can be large). */
function looseType(file: string): number {
  const fd = openSync(file, 'r')
  const head = Buffer.alloc(512)
  let n: number
  try {
    n = readSync(fd, head, 0, head.length, 0)
  } finally {
    closeSync(fd)
  }
  let text: string
  try {
    text = inflateSync(head.subarray(0, n), { finishFlush: constants.Z_SYNC_FLUSH }).toString('latin1', 0, 32)
  } catch {
    throw new GitObjectsError(`${file} is not a loose object`)
  }
  const type = TYPE_NAMES.get(text.slice(0, text.indexOf(' ')))
  if (type === undefined) throw new GitObjectsError(`${file} is not a loose object`)
  return type
}

/** A loose object: zlib of `<type> <size>\0<content>`. */
function readLoose(file: string): GitObject {
  const raw = readFileSync(file)
  let data: Buffer
  try {
    data = inflateSync(raw)
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
