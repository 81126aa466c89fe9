import {
  closeSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
  constants,
} from 'node:fs'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { MaskIndex, type MaskPath, type Masks } from '../tools/bash/sandbox/masks'
import { findGitDir, submoduleRepos } from '../git/git-dir'
import { gitSecretValues, type RepoRef } from './git-secrets'
import { Redactor, type SecretValue } from './redactor'
import { configUrlCredentials, extractSecretValues } from './secret-values'

/**
 * Everything Lanes knows about one workspace's secrets, kept per workspace for the life of the process: which
 * files are secret (the sandbox masks, by name through sensitive-paths.ts and by identity: every other name of
 * a secret file, a hard link, is the secret file), what values they hold, and the redactor built from them.
 *
 * The first scan starts in the background when a session opens the workspace (`start`): the tree walk that the
 * sandbox's masks need, the secret files' values, the credentials in every repository's config, and what git
 * keeps of secret files in every repository of the workspace (git-secrets.ts). Tools wait for it (`ready`)
 * only when they run before it is done. After that it is incremental (`refresh`, after each command and at each
 * run's start): the folders changed since (MaskIndex.fresh: watched ones without a `stat`), a `stat` per secret
 * file, and only changed secret files are read again.
 */

/** A secret file larger than this is read this far for its values, and the user is told. */
export const MAX_SECRET_FILE_BYTES = 1024 * 1024

/** Files read inside one secret folder (`.ssh/`, `.aws/`) at most. */
const MAX_FILES_PER_SECRET_DIR = 500

/** How long the first scan may spend on git's history in all repositories together. */
const GIT_SCAN_MS = 5000

interface FileValues {
  signature: string
  values: SecretValue[]
}

export class WorkspaceSecrets {
  readonly index: MaskIndex
  private readonly fileValues = new Map<string, FileValues>()
  private configValues: SecretValue[] = []
  private gitValues: SecretValue[] = []
  private gitSecretFiles = false
  private readonly appValues = new Map<string, SecretValue>()
  private readonly heldValues = new Map<string, SecretValue>()
  private current = Redactor.EMPTY
  /** `dev:ino` of every secret file (its content is a secret under any name). */
  private identities = new Set<string>()
  /** Some secret file has another name (nlink > 1): tools must judge files by identity, not only by name. */
  private linked = false
  /** Lanes' own folders that happen to lie in the workspace: masked like secrets, refused by the tools. */
  private readonly ownFolders = new Set<string>()
  private scan: Promise<void> | null = null
  /** The first scan has ended (done, or given up with a note): `ready()` would resolve at once. */
  private scanned = false
  private readonly noteSet = new Set<string>()

  constructor(readonly root: string) {
    this.index = new MaskIndex(root)
  }

  /** Starts the first scan if it has not started; never rejects. */
  start(): Promise<void> {
    this.scan ??= this.firstScan()
      .catch((err: unknown) => {
        this.note(
          `The workspace could not be fully scanned for secrets (${err instanceof Error ? err.message : String(err)}).`,
        )
      })
      .finally(() => (this.scanned = true))
    return this.scan
  }

  /** Resolves once the first scan is done (starting it if needed). */
  ready(): Promise<void> {
    return this.start()
  }

  /** Whether the first scan has ended: a caller on a latency-critical path then need not await `ready()`. */
  isReady(): boolean {
    return this.scanned
  }

  /** The redactor with every value known now. */
  redactor(): Redactor {
    return this.current
  }

  /** Plain sentences about what could not be read (a secret file over the cap, a binary one, git's history). */
  notes(): string[] {
    return [...this.noteSet]
  }

  /** The app's own secrets (the API key in use): hidden wherever a tool's output shows them. */
  addAppSecret(value: string | undefined, source: string): void {
    if (value === undefined || value === '' || this.appValues.has(value)) return
    this.appValues.set(value, { value, source })
    this.rebuild()
  }

  /**
   * The values in the new text a command gave a secret file whose change is held for review (issue 20): secrets
   * whether or not the change lands, so the review's diff (and whatever shows them later) hides them.
   */
  learnHeldSecretFile(relPath: string, text: string): void {
    const fresh = extractSecretValues(text.slice(0, MAX_SECRET_FILE_BYTES)).filter(
      (v) => !this.heldValues.has(v),
    )
    if (fresh.length === 0) return
    for (const value of fresh) this.heldValues.set(value, { value, source: relPath })
    this.rebuild()
  }

  /** A folder of Lanes' own (the sessions folder) that lies inside the workspace: never readable by a tool. */
  addOwnFolder(folder: string): void {
    const rel = path.relative(this.root, folder)
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return
    this.ownFolders.add(folder)
  }

  /** `abs` (a real path) is inside one of Lanes' own folders. */
  isOwnData(abs: string): boolean {
    for (const folder of this.ownFolders) if (abs === folder || abs.startsWith(folder + path.sep)) return true
    return false
  }

  /** The file with this identity is a secret file (under whatever name it is reached). */
  isSecretIdentity(st: { dev: number; ino: number }): boolean {
    return this.identities.has(`${st.dev}:${st.ino}`)
  }

  /**
   * git itself found a version of a secret file in some repository of the workspace (a commit, a reflog, an
   * index): git commands that print or search contents must ask (sensitive-paths.ts `gitTracksSecrets`).
   */
  gitHoldsSecretFiles(): boolean {
    return this.gitSecretFiles
  }

  /** Whether any secret file has another name: only then must tools check files' identity. */
  hasLinkedSecrets(): boolean {
    return this.linked
  }

  /**
   * The sandbox's masks now (sensitive-paths.ts by name, plus every other name of a secret file and Lanes' own
   * folders), after an incremental revalidation (a `stat` per folder). Throws with a plain reason when the tree
   * cannot be walked.
   */
  masks(): Masks {
    return this.withOtherNames(this.index.current())
  }

  /**
   * The masks for a command about to start: as `masks()`, but folders watched since they were read and unchanged
   * since are not `stat`ed again (MaskIndex.fresh). Rejects with a plain reason when the tree cannot be walked.
   */
  async freshMasks(): Promise<Masks> {
    return this.withOtherNames(await this.index.fresh())
  }

  /** Stops watching the workspace's folders (it is forgotten). */
  close(): void {
    this.index.close()
  }

  private withOtherNames(masks: Masks): Masks {
    const files = secretFiles(masks.secrets)
    const identities = new Set<string>()
    const linkedIds = new Set<string>()
    for (const file of files) {
      try {
        const st = statSync(file)
        const id = `${st.dev}:${st.ino}`
        identities.add(id)
        if (st.nlink > 1) linkedIds.add(id)
      } catch {
        // Removed in between: nothing to hide.
      }
    }
    this.identities = identities
    this.linked = linkedIds.size > 0
    const secrets: MaskPath[] = [...masks.secrets]
    if (this.linked) {
      const known = new Set(files)
      for (const [id, names] of this.index.fileIdentities()) {
        if (!linkedIds.has(id)) continue
        for (const name of names) if (!known.has(name)) secrets.push({ path: name, kind: 'file' })
      }
    }
    // Only once it exists: bubblewrap cannot mount over a path that is not there in a read-only workspace.
    for (const folder of this.ownFolders) if (isFolder(folder)) secrets.push({ path: folder, kind: 'dir' })
    return { secrets, protected: masks.protected }
  }

  /**
   * Incremental: the masks revalidated, and the values of every secret file that changed (or appeared) read
   * again, with the repositories' configs. Git's history is read by the first scan only.
   */
  async refresh(): Promise<void> {
    let masks: Masks
    try {
      masks = await this.freshMasks()
    } catch (err) {
      this.note(
        `The workspace could not be scanned for secrets (${err instanceof Error ? err.message : String(err)}).`,
      )
      return
    }
    const files = secretFiles(masks.secrets).filter((f) => !this.isOwnData(f))
    let changed = false
    const present = new Set(files)
    for (const file of this.fileValues.keys()) {
      if (!present.has(file)) {
        this.fileValues.delete(file)
        changed = true
      }
    }
    for (const file of files) {
      let signature: string
      try {
        const st = statSync(file)
        if (!st.isFile()) continue
        signature = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`
      } catch {
        continue
      }
      if (this.fileValues.get(file)?.signature === signature) continue
      const rel = path.relative(this.root, file).split(path.sep).join('/')
      const values = this.readValues(file, rel).map((value) => ({ value, source: rel }))
      this.fileValues.set(file, { signature, values })
      changed = true
    }
    const configValues = await this.readConfigs()
    if (configValues.map((v) => v.value).join('\n') !== this.configValues.map((v) => v.value).join('\n')) {
      this.configValues = configValues
      changed = true
    }
    if (changed) this.rebuild()
  }

  private async firstScan(): Promise<void> {
    await this.index.warm()
    await this.refresh()
    const deadline = Date.now() + GIT_SCAN_MS
    const masks = this.masks()
    const found: SecretValue[] = []
    for (const repo of await this.repositories()) {
      const result = await gitSecretValues(this.root, repo, masks, deadline)
      for (const note of result.notes) this.note(note)
      if (result.holdsSecretFiles) this.gitSecretFiles = true
      for (const { value, path: file } of result.values)
        found.push({ value, source: `git history of ${file}` })
    }
    this.gitValues = found
    this.rebuild()
  }

  /** Every repository in the workspace: each working tree (the root's, embedded ones) and the submodules' stores. */
  private async repositories(): Promise<RepoRef[]> {
    const refs: RepoRef[] = []
    for (const worktree of this.index.repositories()) {
      refs.push({ worktree })
      try {
        const dir = await findGitDir(worktree)
        if (dir === null || !inside(this.root, dir.commonDir)) continue
        for (const sub of await submoduleRepos(dir.commonDir)) refs.push({ gitDir: sub.gitDir })
      } catch {
        // git itself reports what it cannot read; the submodules are then left to it.
      }
    }
    return refs
  }

  /** Credentials in the remote URLs of every repository's config files (`.git/config`, submodules', worktrees'). */
  private async readConfigs(): Promise<SecretValue[]> {
    const values: SecretValue[] = []
    for (const worktree of this.index.repositories()) {
      const gitDir = path.join(worktree, '.git')
      const configs = [path.join(gitDir, 'config')]
      try {
        const dir = await findGitDir(worktree)
        if (dir !== null) {
          configs.push(path.join(dir.commonDir, 'config'), path.join(dir.gitDir, 'config.worktree'))
          for (const sub of await submoduleRepos(dir.commonDir)) configs.push(path.join(sub.gitDir, 'config'))
        }
      } catch {
        // Only the plain config is read then.
      }
      for (const config of new Set(configs)) {
        if (!inside(this.root, config)) continue
        const text = await fs.readFile(config, 'utf8').catch(() => '')
        const rel = path.relative(this.root, config).split(path.sep).join('/')
        for (const value of configUrlCredentials(text.slice(0, MAX_SECRET_FILE_BYTES)))
          values.push({ value, source: rel })
      }
    }
    return values
  }

  /** A secret file's values, within the cap; binary files have none to print (and are noted). */
  private readValues(file: string, rel: string): string[] {
    let fd: number
    try {
      fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    } catch {
      return []
    }
    try {
      const st = fstatSync(fd)
      if (!st.isFile()) return []
      const buffer = Buffer.alloc(Math.min(st.size, MAX_SECRET_FILE_BYTES))
      const n = readSync(fd, buffer, 0, buffer.length, 0)
      const data = buffer.subarray(0, n)
      if (st.size > MAX_SECRET_FILE_BYTES)
        this.note(
          `The secret file ${rel} is ${st.size} bytes, more than the ${MAX_SECRET_FILE_BYTES / 1024 / 1024} MiB read for secrets: values after its first MiB are not known to the redactor (the file itself stays hidden from every tool).`,
        )
      if (data.includes(0)) {
        this.note(
          `The secret file ${rel} is binary: it stays hidden from every tool, but its content cannot be recognised elsewhere.`,
        )
        return []
      }
      return extractSecretValues(data.toString('utf8'))
    } catch {
      return []
    } finally {
      closeSync(fd)
    }
  }

  private note(text: string): void {
    this.noteSet.add(text)
  }

  private rebuild(): void {
    const all: SecretValue[] = [...this.appValues.values(), ...this.heldValues.values(), ...this.configValues]
    for (const { values } of this.fileValues.values()) all.push(...values)
    all.push(...this.gitValues)
    this.current = new Redactor(all)
  }
}

function isFolder(p: string): boolean {
  try {
    return lstatSync(p).isDirectory()
  } catch {
    return false
  }
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p)
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)
}

/** The files the masks hide: secret files, and the files inside secret folders (bounded). */
function secretFiles(secrets: readonly MaskPath[]): string[] {
  const files: string[] = []
  for (const p of secrets) {
    if (p.kind === 'file') {
      files.push(p.path)
      continue
    }
    const pending = [p.path]
    let count = 0
    while (pending.length > 0 && count < MAX_FILES_PER_SECRET_DIR) {
      const dir = pending.pop() as string
      let entries
      try {
        entries = readdirSync(dir, { withFileTypes: true })
      } catch {
        continue
      }
      for (const e of entries) {
        const abs = path.join(dir, e.name)
        if (e.isDirectory()) pending.push(abs)
        else if (e.isFile() && count++ < MAX_FILES_PER_SECRET_DIR) files.push(abs)
      }
    }
  }
  return files
}

const registry = new Map<string, WorkspaceSecrets>()

/** The one WorkspaceSecrets of the workspace whose real root is `root`. */
export function workspaceSecrets(root: string): WorkspaceSecrets {
  let found = registry.get(root)
  if (!found) {
    found = new WorkspaceSecrets(root)
    registry.set(root, found)
  }
  return found
}

/** Forgets what is known of `root`, so the next use scans it afresh (benchmarks of the first scan). */
export function forgetWorkspaceSecrets(root: string): void {
  registry.get(root)?.close()
  registry.delete(root)
}
