import { readFile } from 'node:fs/promises'
import { own, setOwn } from '../../shared/own'
import { writeJsonAtomic } from './atomic-write'

/**
 * Lists kept per workspace in one JSON file (`{ "<workspace>": [...] }`), written atomically so a crash never
 * leaves a half file that would lose every list. A missing or unreadable file reads as empty; an entry that
 * `isEntry` refuses is dropped as it is read.
 */
export class WorkspaceListsFile<T> {
  constructor(
    private readonly file: string,
    private readonly isEntry: (value: unknown) => value is T,
  ) {}

  async read(): Promise<Record<string, T[]>> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as unknown
      if (typeof parsed !== 'object' || parsed === null) return {}
      const out: Record<string, T[]> = {}
      for (const [workspace, list] of Object.entries(parsed)) {
        if (Array.isArray(list)) setOwn(out, workspace, list.filter(this.isEntry))
      }
      return out
    } catch {
      return {}
    }
  }

  /** `all` with `workspace`'s list replaced by `list`, written. */
  async write(all: Record<string, T[]>, workspace: string, list: T[]): Promise<void> {
    setOwn(all, workspace, list)
    await writeJsonAtomic(this.file, all)
  }

  static listOf<T>(all: Record<string, T[]>, workspace: string): T[] {
    return own(all, workspace) ?? []
  }
}
