import { mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEventDraft } from '../../../../shared/events'
import { PreimageStore } from '../../../session/preimages'
import { GIT_WORKSPACE_RULES } from '../../sensitive-paths'
import { makeToolContext } from '../../test-fixtures/tool-context'
import { bashTool } from '../bash'
import { sandboxSupport } from '../sandbox/launch'
import { loadBashGrammar } from '../validate'
import type { CommandChanges } from './capture'
import { heldDiff, heldPage } from './held-pages'
import type { HeldVerdict } from './held-review'
import { captureSupport, layerDir } from './overlay'

/**
 * Issue 20, "a change set of a million files (bounded memory; the UI groups by folder)": a command's 50,000 held
 * changes are reviewed folder by folder. What is logged for the review (and so sent to the app) stays small,
 * whatever the size: counts per folder, and the first changes with their diffs; the rest is paged from the
 * layer's plan as the user opens a folder, and a folder is accepted or rejected at once.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'

describe.skipIf(!overlay)('a command’s 50,000 held changes', { timeout: 240_000 }, () => {
  let base: string
  beforeAll(async () => {
    await loadBashGrammar()
    // Not under /tmp: the sandbox has a private tmpfs there.
    const cache = join(process.cwd(), 'node_modules', '.cache')
    await mkdir(cache, { recursive: true })
    base = await realpath(await mkdtemp(join(cache, 'lanes-held-large-')))
  })
  afterAll(async () => {
    await rm(base, { recursive: true, force: true })
  })

  it('are reviewed by folder with a bounded log, paged on demand, and land only in the folders accepted', async () => {
    const workspace = join(base, 'ws')
    const session = join(base, 'session')
    await mkdir(join(workspace, 'a'), { recursive: true })
    await mkdir(session)
    await writeFile(join(workspace, 'a', 'old.txt'), 'old\n')
    // 20 folders of 1,000 files under a (which exists), 20 under b and 10 under c (new).
    await writeFile(
      join(workspace, 'gen.js'),
      `const fs = require('fs')
for (const [top, n] of [['a', 20], ['b', 20], ['c', 10]])
  for (let s = 0; s < n; s++) {
    fs.mkdirSync(top + '/s' + s, { recursive: true })
    for (let f = 0; f < 1000; f++) fs.writeFileSync(top + '/s' + s + '/f' + f + '.txt', 'file ' + f + '\\n')
  }
`,
    )
    const store = await PreimageStore.open(join(session, 'preimages'))
    const events: SessionEventDraft[] = []
    const seen: { page?: Awaited<ReturnType<typeof heldPage>>; diff?: unknown } = {}
    const callId = 'big'
    const review = async (): Promise<HeldVerdict> => {
      // What the app asks for as the user opens a folder, then a file.
      seen.page = await heldPage(layerDir(session, callId), 'b/s7', 0, 500)
      seen.diff = await heldDiff(layerDir(session, callId), workspace, 'b/s7/f3.txt', () => undefined)
      return {
        by: 'user',
        files: [],
        folders: [
          { folder: '', decision: 'accepted' },
          { folder: 'a', decision: 'accepted' },
          { folder: 'b', decision: 'accepted' },
          { folder: 'c', decision: 'accepted' },
          // One folder rejected whole; every other one accepted.
          { folder: 'c/s3', decision: 'rejected' },
        ],
      }
    }
    const result = await bashTool.execute(
      { command: 'node gen.js', timeout: 600 },
      makeToolContext(workspace, {
        outputDir: session,
        pathRules: GIT_WORKSPACE_RULES,
        callId,
        approval: { network: false, outsideSandbox: false, hold: true },
        capture: {
          keep: (p, c) => store.put(p, c),
          content: (h) => store.get(h),
          log: async (d) => {
            events.push(d)
          },
          sync: () => store.flush(),
          landProtected: false,
          review,
        },
      }),
    )
    expect(result.isError, result.output).toBe(false)

    // The review's event is small: counts by folder and the first changes, not 50,000 entries.
    const held = events.find((e) => e.type === 'command.held')
    if (held?.type !== 'command.held') throw new Error('no command.held')
    expect(held.count).toBe(50_000 + 50 + 2)
    expect(JSON.stringify(held).length).toBeLessThan(1_500_000)
    expect(held.review?.length).toBe(200)
    const groups = held.groups ?? []
    expect(groups.map((g) => g.folder)).toContain('c/s3')
    expect(groups.length).toBe(54)
    expect(groups.reduce((n, g) => n + g.added, 0)).toBe(held.count)

    // A folder's page and a file's diff, asked for while the review waited.
    expect(seen.page?.total).toBe(1000)
    expect(seen.page?.files).toHaveLength(500)
    expect(seen.page?.files[0]).toEqual({
      relPath: expect.stringMatching(/^b\/s7\/f\d+\.txt$/),
      change: 'added',
      kind: 'file',
    })
    expect(new Set(seen.page?.files.map((f) => f.relPath)).size).toBe(500)
    expect(JSON.stringify(seen.diff)).toContain('file 3')

    // Only the accepted folders landed.
    expect((await readdir(join(workspace, 'c'))).sort()).toEqual(
      ['s0', 's1', 's2', 's4', 's5', 's6', 's7', 's8', 's9'].sort(),
    )
    expect(await readdir(join(workspace, 'b', 's19'))).toHaveLength(1000)
    expect((await readdir(join(workspace, 'a'))).length).toBe(21)
    const changes = result.metadata?.changes as CommandChanges
    expect(changes.held).toMatchObject({ accepted: 50_052 - 1001, rejectedCount: 1001 })
    // What the result carries stays bounded too.
    expect(JSON.stringify(result).length).toBeLessThan(200_000)
  })
})
