import { mkdir, open, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'

/** Appends request bodies to the record file in arrival order; each line is on disk before the answer starts. */
export class Recorder {
  private chain: Promise<void> = Promise.resolve()

  private constructor(private readonly handle: FileHandle) {}

  /** Opened before the server starts, so a file that cannot be written is an error at start, not a 500 later. */
  static async open(file: string): Promise<Recorder> {
    try {
      await mkdir(dirname(file), { recursive: true })
      return new Recorder(await open(file, 'a'))
    } catch (e) {
      throw new Error(`Cannot open the record file ${file}: ${(e as Error).message}`, { cause: e })
    }
  }

  append(body: unknown): Promise<void> {
    const line = `${JSON.stringify(body)}\n`
    const next = this.chain.then(() => this.handle.appendFile(line, 'utf8'))
    this.chain = next.catch(() => undefined)
    return next
  }

  async close(): Promise<void> {
    await this.chain
    await this.handle.close().catch(() => undefined)
  }
}
