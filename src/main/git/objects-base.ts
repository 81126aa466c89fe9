import { TimeSlices } from '../fs/time-slices'

/**
 * What the readers of git's object files share (pack.ts, objects.ts, history.ts): object types,
 * the error that makes a caller assume the worst, and the budget that bounds the work on one repository.
 */

export const OBJ_COMMIT = 1
export const OBJ_TREE = 2
export const OBJ_BLOB = 3
export const OBJ_TAG = 4

export interface GitObject {
  readonly type: number
  readonly data: Buffer
}

export class GitObjectsError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'GitObjectsError'
  }
}

/** The work allowed ran out: the answer is unknown, which callers treat like a corrupt store. */
export class GitBudgetError extends GitObjectsError {
  constructor(message: string) {
    super(message)
    this.name = 'GitBudgetError'
  }
}

/**
 * Bounds the work on one repository (objects looked at, and wall-clock time), and gives the event loop back
 * every few milliseconds (`tick`), since every read here is a blocking call: the app's main process keeps
 * answering while a large history is read.
 */
export class WorkBudget {
  private spent = 0
  private readonly deadline: number
  private readonly slices = new TimeSlices()

  constructor(
    readonly timeMs: number,
    readonly maxObjects: number,
  ) {
    this.deadline = performance.now() + timeMs
  }

  /** Counts `n` objects looked at; throws GitBudgetError once either bound is passed. */
  spend(n = 1): void {
    this.spent += n
    if (this.spent > this.maxObjects) throw new GitBudgetError(`more than ${this.maxObjects} objects`)
    if (performance.now() >= this.deadline) throw new GitBudgetError(`longer than ${this.timeMs} ms`)
  }

  tick(): Promise<void> {
    return this.slices.tick()
  }
}
