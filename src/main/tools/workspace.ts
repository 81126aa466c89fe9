import { promises as fs } from 'node:fs'
import type { Stats } from 'node:fs'
import path from 'node:path'
import { UNSAFE_CHARS } from './input-fields'
import { isProtectedPath, isSecretPath, STRICT_RULES, type SensitivePathRules } from './sensitive-paths'

/**
 * Workspace confinement (DESIGN 2.2). Every path a tool touches goes through `resolveInWorkspace`, which
 * answers with the absolute real path to use, or a reason the model can act on. Nothing here throws.
 *
 * How a path is judged:
 * 1. Lexical refusals that need no disk access: empty, control/invisible characters, `~`, `$VAR`, `${VAR}`,
 *    `%VAR%`, drive letters, UNC/device paths, URLs, absolute paths that do not start with the root, `..` that
 *    climbs above the root. They are checked on the raw text and on the forms other software may turn it into
 *    (backslashes as separators, percent-decoded, NFKC-normalized), so an encoded `..` is refused too.
 * 2. A physical walk from the real root, one segment at a time, the way the kernel resolves a path: each
 *    existing segment is lstat'ed, symlinks are followed (their targets resolved the same way, wherever they
 *    lead) and the result must lie inside the real root, `..` goes to the physical parent and may never leave
 *    the root. Missing segments are kept as written, so a path that would be created inside is accepted.
 * 3. On write: an existing regular file with more than one hard link is refused (it may share its inode with
 *    a file outside), as is anything that is not a regular file or directory (FIFOs block a reader forever).
 */

export type WorkspaceOp = 'read' | 'write'

export type WorkspaceResolution =
  { ok: true; path: string; protected: boolean } | { ok: false; reason: string }

// Linux's limit on symlinks followed while resolving one path (ELOOP beyond it).
const MAX_SYMLINK_HOPS = 40

// Drive letters (`C:`, `C:foo`, `C:\x`), on any platform: refusing them everywhere keeps one behaviour.
const DRIVE_LETTER = /^[A-Za-z]:/
// Two leading separators in any mix: UNC shares, `\\.\` and `\\?\` device namespaces, POSIX `//host`.
const UNC_PREFIX = /^[\\/]{2}/
// `scheme://`, `scheme:/` and the schemes models actually produce even without slashes.
const URL_SCHEME = /^(?:[A-Za-z][A-Za-z0-9+.-]+:[\\/]|(?:file|https?|ftp|data|javascript|vscode):)/i
const PERCENT_ENV = /%[A-Za-z_][A-Za-z0-9_]*%/
// `$VAR` is refused when it reads as an environment variable: at the start, upper case (`$HOME`), or a name
// set in this process. Lower-case `$param` further in is a real file-name convention (Remix/TanStack routes
// `routes/$postId.tsx`) that must keep working.
const DOLLAR_NAME = /\$([A-Za-z_][A-Za-z0-9_]*)/g
// Names that address a device on Windows whatever the folder; refused everywhere for one behaviour.
const WINDOWS_DEVICE = /^(?:con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$)[. ]*$/i

/**
 * The path as the model wrote it, relative to the root and normalized, judged on its text alone (no disk
 * access, so the approval policy can decide the moment a call arrives); null when the text would be refused.
 * Where it really leads can differ (a symlink named `notes.txt` pointing at `.env`): the tools compare it
 * with the resolved path, see `linkHidesProtection`.
 */
export function nameInWorkspace(root: string, input: string): string | null {
  if (typeof input !== 'string' || input.length === 0) return null
  const checked = lexicalCheck(input, /\/+/, { rootPrefixes: [splitSegments(path.resolve(root), /\/+/)] })
  if (!checked.ok) return null
  return path.posix.normalize(checked.segments.join('/') || '.')
}

/**
 * When the path the model gave looks harmless but leads through a symbolic link to a protected place (a
 * secret, for `kind: 'secret'`), the refusal to give the model; null otherwise. The approval policy judges
 * the name the model wrote, so such a call would get past it: it is refused here, and the model is told to
 * use the real path, which then goes to the user. `rules` are the workspace's (see sensitive-paths.ts).
 */
export function linkHidesProtection(
  rootReal: string,
  input: string,
  resolvedPath: string,
  kind: 'secret' | 'protected',
  rules: SensitivePathRules,
): string | null {
  const test = kind === 'secret' ? isSecretPath : (relative: string) => isProtectedPath(relative, rules)
  const real = toWorkspaceRelative(rootReal, resolvedPath)
  if (!test(real)) return null
  const name = nameInWorkspace(rootReal, input)
  if (name !== null && test(name)) return null
  const what =
    kind === 'secret'
      ? "a file that holds secrets; reading it sends them to the model provider, so it needs the user's approval"
      : "a protected path (version control, editor, CI or shell settings, credentials); changes there need the user's review"
  return (
    `Path ${JSON.stringify(input)} leads through a symbolic link to "${real}", ${what}. ` +
    `Use its real path, "${real}", so the user is asked.`
  )
}

/** Segment-wise containment of two absolute paths (`/ws-evil` is not inside `/ws`). */
export function isInside(rootReal: string, absReal: string): boolean {
  const root = path.resolve(rootReal)
  const abs = path.resolve(absReal)
  if (abs === root) return true
  const prefix = root.endsWith(path.sep) ? root : root + path.sep
  return abs.startsWith(prefix)
}

/** Path for display, relative to the workspace with `/` separators; `.` for the root; absolute if outside. */
export function toWorkspaceRelative(rootReal: string, abs: string): string {
  if (!isInside(rootReal, abs)) return abs
  const relative = path.relative(path.resolve(rootReal), path.resolve(abs))
  return relative === '' ? '.' : relative.split(path.sep).join('/')
}

function splitSegments(text: string, separators: RegExp): string[] {
  return text.split(separators).filter((s) => s !== '' && s !== '.')
}

interface LexicalContext {
  /** Segments of the real root and of the root as configured (it may be a symlink), for absolute input. */
  rootPrefixes: string[][]
}

/**
 * Refusals decided on the text alone. Returns the segments relative to the root when the text is acceptable.
 * `separators` decides whether `\` splits segments: the raw text is walked with `/` only (POSIX), the
 * backslash form with both, so `a\..\..\x` is refused while `src\index.ts` stays a valid (literal) name.
 */
function lexicalCheck(
  text: string,
  separators: RegExp,
  ctx: LexicalContext,
): { ok: true; segments: string[] } | { ok: false; reason: string } {
  // C0, DEL, C1, line separators, bidi controls, invisible format characters, lone surrogates: a displayed
  // path must be the real one, and a lone surrogate cannot even be encoded as a file name.
  const forbidden = UNSAFE_CHARS.exec(text)
  if (forbidden) {
    const code = (forbidden[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')
    return { ok: false, reason: `contains the control or invisible character U+${code}` }
  }
  if (text.startsWith('~')) return { ok: false, reason: 'starts with "~", which is not expanded here' }
  if (URL_SCHEME.test(text)) return { ok: false, reason: 'is a URL, not a file path' }
  if (DRIVE_LETTER.test(text)) return { ok: false, reason: 'starts with a Windows drive letter' }
  if (UNC_PREFIX.test(text)) return { ok: false, reason: 'is a UNC, device or network path' }

  let segments = splitSegments(text, separators)
  if (separators.test('/') && text.startsWith('/')) {
    const prefix = ctx.rootPrefixes.find(
      (p) => p.length <= segments.length && p.every((s, i) => segments[i] === s),
    )
    if (!prefix) return { ok: false, reason: 'is an absolute path outside the workspace' }
    // What follows the root's own segments is judged like a relative path (so `<root>/../x` climbs), and
    // the root's name itself may hold anything (`$`, `%`) without tripping the checks below.
    segments = segments.slice(prefix.length)
  } else if (separators.test('\\') && text.startsWith('\\')) {
    return { ok: false, reason: 'is an absolute Windows path' }
  }

  const relative = segments.join('/')
  if (relative.includes('${') || PERCENT_ENV.test(relative))
    return { ok: false, reason: 'contains an environment variable reference, which is not expanded here' }
  for (const match of relative.matchAll(DOLLAR_NAME)) {
    const name = match[1] ?? ''
    if (match.index === 0 || name === name.toUpperCase() || Object.hasOwn(process.env, name))
      return {
        ok: false,
        reason: `contains the environment variable reference $${name}, which is not expanded here`,
      }
  }
  let depth = 0
  for (const segment of segments) {
    if (WINDOWS_DEVICE.test(segment))
      return { ok: false, reason: `uses the reserved device name "${segment}"` }
    if (segment === '..') {
      if (depth === 0) return { ok: false, reason: 'climbs above the workspace root with ".."' }
      depth -= 1
    } else {
      depth += 1
    }
  }
  return { ok: true, segments }
}

/** Decode `%XX` escapes (repeatedly, for double encoding); malformed sequences stay as they are. */
function percentDecode(text: string): string {
  let current = text
  for (let round = 0; round < 3 && /%[0-9A-Fa-f]{2}/.test(current); round++) {
    current = current.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        // Not valid UTF-8: decode byte by byte so `%2e` inside a bad run is still seen as `.`.
        return run.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
      }
    })
  }
  return current
}

type WalkResult = { ok: true; path: string; existing: Stats | null } | { ok: false; reason: string }

interface WalkState {
  rootReal: string
  hops: number
  /** lstat results for this resolution; a path like `a/../a/../` repeated must not cost one call per segment. */
  cache: Map<string, Stats | null | Error>
}

// The entry is not there (or cannot be, as named): the rest of the path is judged lexically and the tool
// reports the real error (not found, ENAMETOOLONG) when it opens the returned path.
const MISSING_CODES = new Set(['ENOENT', 'ENOTDIR', 'ENAMETOOLONG'])

/** Stats, null when missing, or an Error when the entry exists but cannot be checked (EACCES, EIO). */
async function lstatCached(state: WalkState, abs: string): Promise<Stats | null | Error> {
  const cached = state.cache.get(abs)
  if (cached !== undefined) return cached
  let stats: Stats | null | Error
  try {
    stats = await fs.lstat(abs)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? ''
    // Fail closed: what cannot be inspected may be a symlink leading out.
    stats = MISSING_CODES.has(code) ? null : error instanceof Error ? error : new Error(String(error))
  }
  state.cache.set(abs, stats)
  return stats
}

/**
 * Resolve `segments` from `start` the way the kernel would, following symlinks. `confined` walks (the
 * user's path) may never step outside the root; a symlink's target is walked unconfined (it may pass through
 * `/` or other real directories) and only where it lands must lie inside the root.
 */
async function walk(
  start: string,
  segments: string[],
  state: WalkState,
  confined: boolean,
): Promise<WalkResult> {
  let current = start
  // Once a segment is missing everything below it is too: no disk access until `..` climbs back above it.
  let missingDepth: number | null = null
  let depth = 0
  let currentStats: Stats | null = null

  for (const segment of segments) {
    if (segment === '..') {
      const parent = path.dirname(current)
      if (confined && !isInside(state.rootReal, parent))
        return { ok: false, reason: 'climbs above the workspace root with ".."' }
      current = parent
      depth -= 1
      if (missingDepth !== null && depth < missingDepth) missingDepth = null
      if (missingDepth === null) {
        const stats = await lstatCached(state, current)
        if (stats instanceof Error) return { ok: false, reason: `cannot be checked (${stats.message})` }
        currentStats = stats
      }
      continue
    }
    current = path.join(current, segment)
    depth += 1
    if (missingDepth !== null) continue
    const stats = await lstatCached(state, current)
    if (stats instanceof Error) return { ok: false, reason: `cannot be checked (${stats.message})` }
    currentStats = stats
    if (stats === null) {
      missingDepth = depth
      continue
    }
    if (!stats.isSymbolicLink()) continue

    state.hops += 1
    if (state.hops > MAX_SYMLINK_HOPS)
      return { ok: false, reason: 'has too many levels of symbolic links (a symlink loop?)' }
    const link = current
    let target: string
    try {
      target = await fs.readlink(link)
    } catch (error) {
      return { ok: false, reason: `has a symbolic link that cannot be read (${(error as Error).message})` }
    }
    const resolved = await walk(
      path.isAbsolute(target) ? path.parse(target).root : path.dirname(link),
      target.split('/').filter((s) => s !== '' && s !== '.'),
      state,
      false,
    )
    if (!resolved.ok) return resolved
    if (!isInside(state.rootReal, resolved.path)) {
      // Dangling or not, a link that lands outside is refused: on write it would create the file out there.
      const where = toWorkspaceRelative(state.rootReal, link)
      return {
        ok: false,
        reason: `goes through the symbolic link "${where}", which points outside the workspace`,
      }
    }
    // From here on the link is its real target; `..` after it is the target's parent, as in the kernel.
    current = resolved.path
    currentStats = resolved.existing
    missingDepth = resolved.existing === null ? depth : null
  }
  return { ok: true, path: current, existing: currentStats }
}

/**
 * `rules` only decide the `protected` flag; without the workspace's own rules it is the strict answer.
 */
export async function resolveInWorkspace(
  root: string,
  input: string,
  op: WorkspaceOp,
  rules: SensitivePathRules = STRICT_RULES,
): Promise<WorkspaceResolution> {
  try {
    if (typeof input !== 'string' || input.length === 0)
      return { ok: false, reason: 'The path is empty; give a path relative to the workspace root.' }
    const shown = JSON.stringify(input.length > 200 ? input.slice(0, 200) + '…' : input)

    let rootReal: string
    try {
      rootReal = await fs.realpath(root)
    } catch {
      return { ok: false, reason: `The workspace root ${root} does not exist or cannot be read.` }
    }
    const outside = (reason: string): WorkspaceResolution => ({
      ok: false,
      reason:
        `Path ${shown} ${reason}. Only files inside the workspace (${rootReal}) can be used; ` +
        'give a path relative to that folder.',
    })
    const ctx: LexicalContext = {
      rootPrefixes: [splitSegments(rootReal, /\/+/), splitSegments(path.resolve(root), /\/+/)],
    }

    const raw = lexicalCheck(input, /\/+/, ctx)
    if (!raw.ok) return outside(raw.reason)
    // The forms other layers may read the same text as (Windows APIs, URL decoders, Unicode-normalizing file
    // systems): an escape hidden in any of them is refused even though POSIX would take the text literally.
    // Only the part below the root is rewritten: a root named `プロジェクト（新）` or `a%20b` stays as it is.
    const relative = raw.segments.join('/')
    const variants: Array<[string, string]> = [
      [relative.replace(/\\/g, '/'), 'with "\\" read as a separator it'],
      [percentDecode(relative), 'once percent-decoded it'],
      [relative.normalize('NFKC'), 'once Unicode-normalized (NFKC) it'],
    ]
    for (const [variant, how] of variants) {
      if (variant === relative) continue
      const check = lexicalCheck(variant, /[\\/]+/, ctx)
      if (!check.ok) return outside(`is refused: ${how} ${check.reason}`)
    }

    const state: WalkState = { rootReal, hops: 0, cache: new Map() }
    const walked = await walk(rootReal, raw.segments, state, true)
    if (!walked.ok) return outside(walked.reason)
    if (!isInside(rootReal, walked.path)) return outside('resolves outside the workspace')

    const stats = walked.existing
    // Not confinement but the same gate: reading a FIFO blocks forever, a device or socket is not a file.
    if (stats !== null && !stats.isFile() && !stats.isDirectory())
      return {
        ok: false,
        reason: `Path ${shown} is not a regular file or folder (it is a device, FIFO or socket).`,
      }
    if (op === 'write' && stats !== null && stats.isFile() && stats.nlink > 1)
      return {
        ok: false,
        reason:
          `Path ${shown} is a file with ${stats.nlink} hard links: it shares its content with another file, ` +
          'possibly outside the workspace, so it is not written. Ask the user to replace it with a regular copy.',
      }

    // Flag both what was asked for and what it resolves to: `.env` may be a symlink to `config/env.txt`.
    const isProtected =
      isProtectedPath(path.posix.normalize(relative || '.'), rules) ||
      isProtectedPath(toWorkspaceRelative(rootReal, walked.path), rules)
    return { ok: true, path: walked.path, protected: isProtected }
  } catch (error) {
    // Defensive: the contract is "never throws"; an unexpected failure is a refusal, never an escape.
    return {
      ok: false,
      reason: `The path could not be checked: ${error instanceof Error ? error.message : String(error)}`,
    }
  }
}
