import { mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEventDraft } from '../../../../shared/events'
import { PreimageStore } from '../../../session/preimages'
import { GIT_WORKSPACE_RULES } from '../../sensitive-paths'
import { landChangeSet, planLines, type CaptureHost, type PlanLine } from './land'

/**
 * Landing moves files in several renames at a time (land.ts, Moves): a change set is built by hand in a layer (as
 * a command's overlay leaves it) and landed; a rename that fails in the middle of those in flight must leave the
 * workspace exactly as it was, those that landed beside it included.
 */

let base: string
let cases = 0

beforeAll(async () => {
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  base = await realpath(await mkdtemp(join(cache, 'lanes-land-moves-')))
})
afterAll(async () => {
  await rm(base, { recursive: true, force: true })
})

/** A workspace of `count` files, and a layer that changes every one of them and adds `new.txt`. */
async function setup(count: number, onLog?: (draft: SessionEventDraft) => Promise<void>) {
  const root = join(base, `case-${++cases}`)
  const workspace = join(root, 'ws')
  const layer = join(root, 'layer')
  const upper = join(layer, 'upper')
  await mkdir(join(workspace, 'files'), { recursive: true })
  await mkdir(join(upper, 'files'), { recursive: true })
  for (let i = 0; i < count; i++) {
    await writeFile(join(workspace, 'files', `f${i}.txt`), `old ${i}\n`)
    await writeFile(join(upper, 'files', `f${i}.txt`), `new ${i}\n`)
  }
  await writeFile(join(upper, 'files', 'new.txt'), 'added\n')
  const store = await PreimageStore.open(join(root, 'preimages'))
  const events: SessionEventDraft[] = []
  const host: CaptureHost = {
    keep: (path, content) => store.put(path, content),
    content: (hash) => store.get(hash),
    log: async (draft) => {
      events.push(draft)
      await onLog?.(draft)
    },
    sync: () => store.flush(),
    landProtected: false,
  }
  const land = async () => {
    try {
      return await landChangeSet({
        workspace,
        callId: 'c1',
        layer: { dir: layer, upper },
        opaque: new Set(),
        rules: GIT_WORKSPACE_RULES,
        host,
      })
    } finally {
      await store.close()
    }
  }
  const files = async () => {
    const out: Record<string, string> = {}
    for (const name of await readdir(join(workspace, 'files'), { withFileTypes: true }))
      out[name.name] = name.isFile() ? await readFile(join(workspace, 'files', name.name), 'utf8') : 'folder'
    return out
  }
  return { workspace, events, land, files }
}

const outcomes = (events: SessionEventDraft[]) =>
  events.flatMap((e) => (e.type === 'command.landed' ? [e.outcome] : []))

describe('landing many files', () => {
  it('moves every changed and new file in, more than are in flight at once', async () => {
    const { events, land, files } = await setup(80)
    const landed = await land()
    expect(landed.error).toBeUndefined()
    expect(landed.counts).toEqual({ added: 1, changed: 80, removed: 0, modeChanged: 0 })
    const now = await files()
    expect(Object.keys(now)).toHaveLength(81)
    for (let i = 0; i < 80; i++) expect(now[`f${i}.txt`]).toBe(`new ${i}\n`)
    expect(now['new.txt']).toBe('added\n')
    expect(outcomes(events)).toEqual(['done'])
  })

  it('holds the files it replaces open while it lands, and lets go of every one after', async () => {
    // What this process has open of the workspace's files: a replaced file still held shows as deleted.
    const openIn = async (workspace: string) => {
      const targets: string[] = []
      for (const fd of await readdir('/proc/self/fd'))
        targets.push(await readlink(join('/proc/self/fd', fd)).catch(() => ''))
      return targets.filter((t) => t.startsWith(join(workspace, 'files')))
    }
    let during: string[] = []
    const { workspace, land, files } = await setup(40, async (draft) => {
      if (draft.type === 'command.landing') during = await openIn(workspace)
    })
    const landed = await land()
    expect(landed.error).toBeUndefined()
    expect(during).toHaveLength(40)
    // Closed through the thread pool without waiting: gone by the time its callbacks ran.
    for (let i = 0; i < 50 && (await openIn(workspace)).length > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10))
    expect(await openIn(workspace)).toEqual([])
    expect((await files())['f7.txt']).toBe('new 7\n')
  })

  it('puts every file back when one rename fails among those in flight, those landed beside it too', async () => {
    let blocked = ''
    const { workspace, events, land, files } = await setup(60, async (draft) => {
      // After the journal's intent, before anything moves: one file in the middle of the plan is replaced by a
      // folder with something in it, which no rename can replace.
      if (draft.type !== 'command.landing') return
      const plan = events.flatMap((e) => (e.type === 'file.preimage' ? [e.relPath] : []))
      blocked = plan[Math.floor(plan.length / 2)] as string
      await rm(join(workspace, blocked))
      await mkdir(join(workspace, blocked))
      await writeFile(join(workspace, blocked, 'inside'), 'x')
    })
    const before = await files()
    const landed = await land()
    expect(blocked).not.toBe('')
    expect(landed.error).toContain(blocked)
    expect(landed.error).toMatch(/put back as it was before the command\.$/)
    expect(outcomes(events)).toEqual(['rolled-back'])
    const name = blocked.slice('files/'.length)
    expect(await files()).toEqual({ ...before, [name]: 'folder' })
  })
})

describe('the plan file', () => {
  it('reads back every line of a plan larger than one read, characters split between reads included', async () => {
    const file = join(base, 'plan.jsonl')
    // Lines of three-byte characters: some fall across the 256 KiB reads.
    const lines: PlanLine[] = Array.from({ length: 3000 }, (_, i) => ({
      rel: `dossier-${i}/${'é€'.repeat(40)}.txt`,
      before: null,
      after: 'dir:755',
    }))
    await writeFile(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
    expect([...planLines(file)]).toEqual(lines)
    // A last line without its newline is read too.
    await writeFile(
      file,
      lines
        .slice(0, 2)
        .map((l) => JSON.stringify(l))
        .join('\n'),
    )
    expect([...planLines(file)]).toEqual(lines.slice(0, 2))
  })
})
