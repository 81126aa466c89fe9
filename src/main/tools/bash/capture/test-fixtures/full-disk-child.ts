import { randomBytes } from 'node:crypto'
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { SessionEventDraft } from '../../../../../shared/events'
import { PreimageStore } from '../../../../session/preimages'
import { GIT_WORKSPACE_RULES } from '../../../sensitive-paths'
import { landChangeSet } from '../land'

/**
 * Lands a change set into a workspace on a small file system that fills up half-way (full-disk.test.ts runs this
 * in a user and mount namespace of its own, with `workspace` a 400 KiB tmpfs; the layer and the store are on the
 * real disk, so every file is copied in). Prints, as one JSON line: the workspace before and after, what the
 * landing answered, and what it logged.
 */
const [workspace, scratch] = process.argv.slice(2) as [string, string]

async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of (await readdir(dir)).sort()) {
    const st = await lstat(join(dir, name))
    out[name] = st.isFile()
      ? (await readFile(join(dir, name))).toString('base64').slice(0, 64) + `:${st.size}`
      : 'other'
  }
  return out
}

// Files the command changes and files it adds, together more than the disk holds: whichever lands first, the
// roll-back removes what was added and writes the changed files' old contents back on a full disk.
await writeFile(join(workspace, 'keep.txt'), 'untouched\n')
const layer = join(scratch, 'layer')
const upper = join(layer, 'upper')
await mkdir(upper, { recursive: true })
for (let i = 0; i < 3; i++) {
  await writeFile(join(workspace, `a-changed-${i}.bin`), randomBytes(60 * 1024))
  await writeFile(join(upper, `a-changed-${i}.bin`), randomBytes(60 * 1024))
}
for (let i = 0; i < 8; i++) await writeFile(join(upper, `z-added-${i}.bin`), randomBytes(60 * 1024))

const before = await tree(workspace)
const store = await PreimageStore.open(join(scratch, 'preimages'))
const events: SessionEventDraft[] = []
const landed = await landChangeSet({
  workspace,
  callId: 'call-1',
  layer: { dir: layer, upper },
  opaque: new Set(),
  rules: GIT_WORKSPACE_RULES,
  host: {
    keep: (path, content) => store.put(path, content),
    content: (hash) => store.get(hash),
    log: async (draft) => {
      events.push(draft)
    },
    sync: () => store.flush(),
    landProtected: false,
  },
})
await store.close()
process.stdout.write(
  JSON.stringify({
    before,
    after: await tree(workspace),
    error: landed.error,
    events: events.map((e) => ({
      type: e.type,
      ...(e.type === 'command.landed' ? { outcome: e.outcome } : {}),
    })),
  }) + '\n',
)
