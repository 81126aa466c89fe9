import { spawn } from 'node:child_process'
import { homedir } from 'node:os'
import path from 'node:path'
import { bwrapArgs } from '../tools/bash/sandbox/bwrap'
import { sandboxSupport } from '../tools/bash/sandbox/support'
import type { Masks } from '../tools/bash/sandbox/masks'
import { SANDBOX_HOME, SANDBOX_TMP, sandboxEnv } from '../tools/bash/sandbox/policy'
import { isSecretPath } from '../tools/sensitive-paths'
import { extractSecretValues } from './secret-values'

/**
 * What git keeps of secret files, read by git itself, inside the read-only sandbox with its system and global
 * configuration off and no network (a hostile repository config can name programs; in there they can touch
 * nothing). Every object of the store is listed (`cat-file --batch-all-objects`), so commits no ref or reflog
 * names are walked too; `rev-list --objects --indexed-objects` adds every index (a split index's
 * `sharedindex.*` and each linked worktree's `.git/worktrees/<name>/index` included: git reads them as it would for
 * `git status`), and gives each blob the path it has there. Blobs at a secret path (`isSecretPath`) are read
 * (`cat-file --batch`) and their values given to the redactor. A blob no tree or index names (staged, then
 * unstaged) has no path to judge: the redactor catches it when it holds a value known from elsewhere.
 *
 * Measured against the 1,200-line object reader (src/main/git/) in bench/secrets.bench.ts; see the
 * README for the figures and why this one reads the values.
 */

/** A secret blob larger than this is read only this far (its values beyond are not known). */
export const MAX_SECRET_BLOB_BYTES = 1024 * 1024

/** At most this many secret blobs are read per repository (a history that rewrote `.env` 10,000 times). */
const MAX_SECRET_BLOBS = 2000

export interface GitSecretsResult {
  values: { value: string; path: string }[]
  /** Git holds a version of a secret file (in a commit, a reflog or an index). */
  holdsSecretFiles: boolean
  /** Plain sentences: what could not be read, for the user. */
  notes: string[]
}

/** How git is addressed for one repository: `-C <worktree>` or `--git-dir <dir>` (a submodule's store). */
export type RepoRef = { worktree: string } | { gitDir: string }

export async function gitSecretValues(
  workspace: string,
  repo: RepoRef,
  masks: Masks,
  deadline: number,
): Promise<GitSecretsResult> {
  const notes: string[] = []
  const values: GitSecretsResult['values'] = []
  let holdsSecretFiles = false
  const where = 'worktree' in repo ? repo.worktree : repo.gitDir
  const label = path.relative(workspace, where) || '.'
  const base = 'worktree' in repo ? ['-C', repo.worktree] : ['--git-dir', repo.gitDir]
  const git = [...GIT_OPTIONS, ...base]
  try {
    // One sandbox for both steps: every commit and tag of the store (reachable or not) walked with the refs,
    // reflogs and indexes, each object with its path.
    const walked = await runSandboxed(
      workspace,
      masks,
      ['bash', '-c', WALK_SCRIPT, 'lanes-git', ...git],
      undefined,
      deadline,
    )
    const blobs = new Map<string, string>()
    for (const line of walked.toString('utf8').split('\n')) {
      const space = line.indexOf(' ')
      if (space === -1) continue
      const file = line.slice(space + 1)
      if (isSecretPath(file)) blobs.set(line.slice(0, space), file)
    }
    if (blobs.size === 0) return { values, notes, holdsSecretFiles: false }
    holdsSecretFiles = true
    const oids = [...blobs.keys()].slice(0, MAX_SECRET_BLOBS)
    if (blobs.size > oids.length)
      notes.push(
        `${label}: git holds ${blobs.size} versions of secret files; the first ${oids.length} were read.`,
      )
    // `%(objectsize)` first: each object is cut to the cap as it is parsed.
    const contents = await runSandboxed(
      workspace,
      masks,
      ['git', ...git, 'cat-file', '--batch'],
      oids.join('\n') + '\n',
      deadline,
    )
    let at = 0
    while (at < contents.length) {
      const nl = contents.indexOf(10, at)
      if (nl === -1) break
      const [oid, type, sizeText] = contents.toString('latin1', at, nl).split(' ')
      at = nl + 1
      if (type === undefined || sizeText === undefined) continue // "<oid> missing"
      const size = Number(sizeText)
      const body = contents.subarray(at, at + Math.min(size, MAX_SECRET_BLOB_BYTES))
      at += size + 1
      const file = blobs.get(oid ?? '') ?? ''
      if (type !== 'blob' || body.includes(0)) continue
      if (size > MAX_SECRET_BLOB_BYTES)
        notes.push(
          `${label}: a version of ${file} in git is ${size} bytes; only its first 1 MiB was read for secrets.`,
        )
      for (const value of extractSecretValues(body.toString('utf8'))) values.push({ value, path: file })
    }
  } catch (err) {
    notes.push(
      `${label}: git's history could not be read for secrets (${err instanceof Error ? err.message : String(err)}).`,
    )
  }
  return { values, notes, holdsSecretFiles }
}

/** At most this much of git's output is kept per call. */
const MAX_GIT_OUTPUT = 256 * 1024 * 1024

/** git with its system and global config off (the environment), no pager, no replacements, no fsmonitor. */
const GIT_OPTIONS = ['--no-pager', '--no-replace-objects', '-c', 'core.fsmonitor=false']

/** `$@`: git's options and the repository. */
const WALK_SCRIPT =
  'set -o pipefail; git "$@" cat-file --batch-all-objects "--batch-check=%(objecttype) %(objectname)" | ' +
  "sed -n -e 's/^commit //p' -e 's/^tag //p' | " +
  'git "$@" rev-list --objects --indexed-objects --all --reflog --stdin'

/** Runs `argv` inside the read-only sandbox (no network); rejects on a non-zero exit or the deadline. */
function runSandboxed(
  workspace: string,
  masks: Masks,
  argv: string[],
  input: string | undefined,
  deadline: number,
): Promise<Buffer> {
  const support = sandboxSupport()
  if (!support.available || support.kind !== 'bubblewrap')
    return Promise.reject(new Error('no sandbox to run git in'))
  const env = sandboxEnv(process.env, { home: SANDBOX_HOME, tmp: SANDBOX_TMP })
  const sandbox = bwrapArgs(
    { mode: 'read-only', workspace, network: false },
    { secrets: masks.secrets, protected: [] },
    { path: env.PATH ?? '', home: homedir() },
  )
  return new Promise((resolve, reject) => {
    const child = spawn(support.program, [...sandbox, '--', ...argv], {
      env: { ...env, GIT_NO_REPLACE_OBJECTS: '1', GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' },
      // fd 3: bwrap's status report, unread.
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    })
    const out: Buffer[] = []
    let size = 0
    let err = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(1, deadline - Date.now()))
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_GIT_OUTPUT) child.kill('SIGKILL')
      else out.push(chunk)
    })
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString('utf8')
    })
    child.stdin.on('error', () => {})
    child.stdin.end(input ?? '')
    child.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (signal !== null)
        return reject(new Error(Date.now() >= deadline ? 'it took too long' : `git was killed (${signal})`))
      if (code !== 0) return reject(new Error(err.trim().split('\n').at(-1) || `git exited with ${code}`))
      resolve(Buffer.concat(out))
    })
  })
}
