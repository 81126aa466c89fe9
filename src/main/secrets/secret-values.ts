import { MIN_SECRET_LENGTH } from './redactor'

/**
 * What in a secret file is the secret: the values the redactor hides wherever they show up again (a log line,
 * a test snapshot, a git object, a hard link under another name). One reader for every kind of secret file,
 * since their syntaxes overlap: `.env*` lines (`KEY=VALUE`, quoted or not, with `export`), INI and YAML pairs
 * (`.pypirc`, `.aws/credentials`, `.npmrc`'s `//host/:_authToken=...`), JSON string values (`auth.json`,
 * `.docker/config.json`, service-account keys), `.netrc` words (`login`, `password`, `account`), credentials
 * in URLs (`https://user:token@host`, `.git-credentials`, `.git/config` remotes), and private-key bodies (each
 * base64 line of a PEM block, since a key is usually printed line by line).
 */

/**
 * Values that pass the length floor but are plainly configuration, not credentials: where they showed up in
 * a tool's output hiding them would only confuse the model.
 */
const COMMON_VALUES = new Set([
  'localhost',
  'development',
  'production',
  'staging',
  'undefined',
  'disabled',
  'enabled',
  'postgres',
  'postgresql',
  'password',
  'changeme',
  'username',
  'utf8mb4',
])

/**
 * The floor (issue 20: "values too short or too common to be secrets are left alone"). A value is hidden when
 * it is at least MIN_SECRET_LENGTH characters long and is not:
 * - a word or a name (only letters, `-`, `_`, `.`, shorter than 16): `production`, `us-east`, `my_app.db`;
 * - a number, a version, a date or a time (digits and `.:-/_`), shorter than 16: `3000`, `1.2.3`, `2026-01-01`;
 * - a plain URL or path without credentials or a query: `http://localhost:3000`, `/var/lib/data`;
 * - one of COMMON_VALUES, or `true`/`false`-like (those are short anyway).
 * 16 characters or more of letters alone are kept (a passphrase, a base32 token). What is left mixes letters
 * with digits or symbols, which is what generated keys, tokens and passwords look like.
 */
export function isSecretLike(value: string): boolean {
  if (value.length < MIN_SECRET_LENGTH) return false
  if (COMMON_VALUES.has(value.toLowerCase())) return false
  if (value.length < 16 && /^[A-Za-z][A-Za-z._-]*$/.test(value)) return false
  if (value.length < 16 && /^[0-9][0-9.:/_-]*$/.test(value)) return false
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/@?#\s]+(?:\/[^?#\s]*)?$/i.test(value)) return false
  if (/^(?:\.{0,2}\/|~\/)[\w./-]*$/.test(value)) return false
  return true
}

/** `value` without surrounding quotes and whitespace. */
function unquote(raw: string): string {
  let v = raw.trim()
  const q = v[0]
  if ((q === '"' || q === "'" || q === '`') && v.length >= 2) {
    const close = v.indexOf(q, 1)
    v = close === -1 ? v.slice(1) : v.slice(1, close)
  } else {
    // An unquoted value ends at an inline comment (`KEY=abc # note`) in dotenv and INI alike.
    const hash = v.search(/\s#/)
    if (hash !== -1) v = v.slice(0, hash).trim()
  }
  return v
}

const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|KEY BLOCK|CERTIFICATE)[A-Z ]*-----/
const PEM_END = /-----END [A-Z0-9 ]+-----/
const URL_CREDENTIALS = /[a-z][a-z0-9+.-]*:\/\/([^\s/@:'"]+)(?::([^\s/@'"]+))?@/gi
const JSON_STRING = /"(?:[^"\\]|\\.)*"\s*:\s*"((?:[^"\\]|\\.)*)"/g
const NETRC_WORD = /\b(?:password|passwd|login|account)\s+(\S+)/g
/** `KEY=VALUE` (dotenv, INI, `.npmrc`'s `//host/:_authToken=...`), else YAML's `key: value`. */
const EQ_PAIR = /^\s*(?:export\s+)?[^\s=#;"'][^=]*?\s*=\s*(.*)$/
const COLON_PAIR = /^\s*(?:- )?[^\s:#;"'][^:]*?:\s+(.*)$/

/**
 * The values in one secret file's text that pass the floor, in order of appearance, each once. Binary
 * content is the caller's to leave out (it has no lines to print).
 */
export function extractSecretValues(text: string): string[] {
  const found = new Set<string>()
  const add = (raw: string | undefined): void => {
    if (raw === undefined) return
    const v = raw.trim()
    if (isSecretLike(v)) found.add(v)
  }
  let inPem = false
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trimEnd()
    if (PEM_BEGIN.test(line)) {
      inPem = true
      continue
    }
    if (inPem) {
      if (PEM_END.test(line)) inPem = false
      // Base64 body lines (headers such as `Proc-Type: 4,ENCRYPTED` have a colon and are skipped).
      else if (/^[A-Za-z0-9+/=]{16,}$/.test(line.trim())) found.add(line.trim())
      continue
    }
    if (line.trim() === '' || /^\s*[#;]/.test(line)) continue
    for (const m of line.matchAll(URL_CREDENTIALS)) {
      add(m[1])
      add(m[2] !== undefined ? decodeSafely(m[2]) : undefined)
      add(m[2])
    }
    let jsonSeen = false
    for (const m of line.matchAll(JSON_STRING)) {
      jsonSeen = true
      add(m[1])
    }
    if (jsonSeen) continue
    for (const m of line.matchAll(NETRC_WORD)) add(m[1])
    const pair = EQ_PAIR.exec(line) ?? COLON_PAIR.exec(line)
    if (pair) {
      const value = unquote(pair[1] ?? '')
      add(value)
      // A `DATABASE_URL=postgres://app:pw@host/db` also hides `pw` alone (caught above through the URL), and
      // a value with a trailing comma or bracket (YAML/JSON flow style) without it.
      add(value.replace(/[,;\]}]+$/, ''))
    } else if (!/\s/.test(line.trim())) {
      // A file holding one bare token (`.vault-token`, `api_key.txt`).
      add(line.trim())
    }
  }
  return [...found]
}

function decodeSafely(s: string): string | undefined {
  try {
    const d = decodeURIComponent(s)
    return d === s ? undefined : d
  } catch {
    return undefined
  }
}

/**
 * The credentials in a git config's remote URLs (`url = https://user:token@host/repo`, also under `pushurl`
 * and `insteadOf` sections): `.git/config` is not a secret file (the model reads it to learn the remotes), but
 * the token in such a URL is a secret.
 */
export function configUrlCredentials(text: string): string[] {
  const found = new Set<string>()
  for (const m of text.matchAll(URL_CREDENTIALS)) {
    for (const raw of [m[1], m[2], m[2] !== undefined ? decodeSafely(m[2]) : undefined]) {
      if (raw !== undefined && isSecretLike(raw)) found.add(raw)
    }
  }
  return [...found]
}
