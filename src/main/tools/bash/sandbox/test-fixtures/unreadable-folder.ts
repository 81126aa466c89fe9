import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MaskIndex, type Masks } from '../masks'

/**
 * Run by masks.unreadable.test.ts where mode bits bind (as root: in a user namespace of its own, where root's
 * override of them does not reach files it owns outside). In the folder given: `locked/` holding a `.env`, made
 * unreadable, then opened again by `chmod` (what a command could do). Prints the secret masks (relative) seen
 * before and after, by `current()` and by `fresh()`, as one JSON object.
 */
const root = process.argv[2] as string
const rel = (m: Masks): string[] => m.secrets.map((p) => `${p.path.slice(root.length + 1)}:${p.kind}`).sort()

await mkdir(join(root, 'locked', 'deeper'), { recursive: true })
await writeFile(join(root, 'locked', '.env'), 'TOKEN=sk-live-0123456789abcdef\n')
await chmod(join(root, 'locked'), 0o000)
const index = new MaskIndex(root)
await index.warm()
const out: Record<string, string[]> = {}
out.lockedCurrent = rel(index.current())
out.lockedFresh = rel(await index.fresh())
await chmod(join(root, 'locked'), 0o755)
out.openedFresh = rel(await index.fresh())
out.openedCurrent = rel(index.current())
index.close()
process.stdout.write(JSON.stringify(out))
