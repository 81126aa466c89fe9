/**
 * What is at one path, as one string the log can hold (issue 20: undo and rewind of what commands changed,
 * which goes beyond a file's content). `null` is nothing; a bare SHA-256 a regular file with that content whose
 * mode was not recorded (what write_file and edit_file log: they keep a file's mode); `<sha>:<mode>` a regular
 * file with that content and mode (octal permission bits); `link:<target>` a symbolic link; `dir:<mode>` a
 * folder (only the folder itself: what is in it has tokens of its own).
 */
export type PathToken = string | null

export type ParsedToken =
  | { kind: 'absent' }
  | { kind: 'file'; hash: string; mode?: number }
  | { kind: 'link'; target: string }
  | { kind: 'dir'; mode: number }

export function fileToken(hash: string, mode?: number): string {
  return mode === undefined ? hash : `${hash}:${(mode & 0o7777).toString(8)}`
}

export function linkToken(target: string): string {
  return `link:${target}`
}

export function dirToken(mode: number): string {
  return `dir:${(mode & 0o7777).toString(8)}`
}

export function parseToken(token: PathToken): ParsedToken {
  if (token === null) return { kind: 'absent' }
  if (token.startsWith('link:')) return { kind: 'link', target: token.slice(5) }
  if (token.startsWith('dir:')) return { kind: 'dir', mode: parseInt(token.slice(4), 8) }
  const colon = token.indexOf(':')
  if (colon < 0) return { kind: 'file', hash: token }
  return { kind: 'file', hash: token.slice(0, colon), mode: parseInt(token.slice(colon + 1), 8) }
}

/** The content hash a token names (a regular file), or null. */
export function contentHashOf(token: PathToken): string | null {
  const parsed = parseToken(token)
  return parsed.kind === 'file' ? parsed.hash : null
}

/**
 * Whether what is at a path now (`now`, a token with everything recorded) is what `want` says. A file token
 * without a mode matches any mode: that log entry never recorded one.
 */
export function tokenMatches(now: PathToken, want: PathToken | undefined): boolean {
  if (want === undefined) return false
  if (now === want) return true
  const a = parseToken(now)
  const b = parseToken(want)
  if (a.kind !== 'file' || b.kind !== 'file') return false
  return a.hash === b.hash && (b.mode === undefined || a.mode === undefined || a.mode === b.mode)
}
