import path from 'node:path'
import type { Redactor } from '../../secrets/redactor'
import { isSecretPath } from '../sensitive-paths'

/** What grep's two engines (ripgrep, the built-in search) share: the plan, the collector, the outcome. */

/** Lines shown to the model; more are counted, up to COUNT_LIMIT. */
export const MAX_SHOWN_LINES = 200
export const COUNT_LIMIT = 5000
/** Long lines (minified code) are cut to this many bytes with ripgrep's marker. */
export const MAX_COLUMNS = 500
export const LONG_LINE_MARKER = ' [... omitted end of long line]'

// A `..` segment in a path an engine reported.
const PARENT_IN_PATH = /(?:^|\/)\.\.(?:\/|$)/

export interface Match {
  /** Path relative to the folder the search ran in, `/`-separated. */
  file: string
  line: number
  text: string
}

/**
 * Gathers what either engine finds: keeps the first lines for the model, counts the rest up to COUNT_LIMIT,
 * drops secret files' lines and anything that is not lexically inside the workspace.
 *
 * A secret file's matches leave no trace at all: not shown, not counted, not noted (issue 20). Any trace (a
 * count of withheld lines, a "withheld" note) answers "does this regex match the secret?", and a few hundred
 * such questions spell out a `.env` line; a right and a wrong guess must give byte-identical results.
 */
export class Collector {
  readonly shown: Match[] = []
  matches = 0
  files = 0
  /** False once COUNT_LIMIT was reached and the search stopped: `matches` is then a lower bound. */
  complete = true
  /** The files with a line counted (an engine may hand a file's lines over in more than one run). */
  private readonly counted = new Set<string>()
  private lastFile: string | null = null
  /** Verdict for `lastFile`: engines report a file's lines together, so each file is judged once. */
  private lastFileAccepted = false
  private lastFileSecret = false

  /**
   * `folder`: where the search ran, relative to the workspace root (engines name files relative to it).
   * `isHidden`: judges a file (named as the engines name it) by what it is rather than its name: another name of
   * a secret file (a hard link), or Lanes' own data.
   */
  constructor(
    private readonly folder: string,
    private readonly isHidden: (file: string) => boolean = () => false,
  ) {}

  /** The file's lines are never shown, nor counted, nor mentioned. */
  isSecret(file: string): boolean {
    return isSecretPath(path.posix.join(this.folder, file)) || this.isHidden(file)
  }

  /** Returns false when the search should stop. */
  add(file: string, line: number, text: string): boolean {
    const newFile = file !== this.lastFile
    if (newFile) {
      this.lastFile = file
      // `cwd` is a real folder inside the workspace, so a relative name without `..` is lexically inside; the
      // lines shown are checked again by real path before they leave the tool.
      // Secrets are judged by their name in the workspace: `credentials` found by a search of `.aws` is one.
      this.lastFileSecret = this.isSecret(file)
      this.lastFileAccepted = !this.lastFileSecret && !path.isAbsolute(file) && !PARENT_IN_PATH.test(file)
      if (this.lastFileAccepted && this.matches < COUNT_LIMIT && !this.counted.has(file)) {
        this.counted.add(file)
        this.files += 1
      }
    }
    if (!this.lastFileAccepted) return true
    if (this.matches >= COUNT_LIMIT) {
      this.complete = false
      return false
    }
    this.matches += 1
    if (this.shown.length < MAX_SHOWN_LINES) this.shown.push({ file, line, text })
    return true
  }
}

/** A file or folder that could not be searched; `file` is relative to the search folder, '' for none. */
export interface FileProblem {
  file: string
  reason: string
}

export type EngineOutcome =
  | { kind: 'done'; problems: FileProblem[]; notes: FileProblem[] }
  | { kind: 'fatal'; message: string }
  | { kind: 'cancelled' }
  | { kind: 'unavailable'; reason: string }

export interface SearchPlan {
  pattern: string
  include: string | undefined
  caseInsensitive: boolean
  /** Folder the search runs in (the target itself, or a file's folder). */
  cwd: string
  /** What to search inside `cwd`: `.` or a file name. */
  target: string
  workspace: string
  signal: AbortSignal
  /** The workspace's secret values: lines are judged by their redacted text (secret-lens.ts). */
  redactor: Redactor
}
