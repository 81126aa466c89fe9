import { promises as fs } from 'node:fs'
import path from 'node:path'
import { it } from 'vitest'
import { buildRepeated, loadCorpus } from '../../test-fixtures/corpus'
import type { WorkspaceOp } from '../workspace'
import { makeWorkspace } from './workspace'

/**
 * The hostile path sample (`src/main/test-fixtures/corpus/path-sample.json`): every tool that
 * takes a path is tested against it. Its README's layout: `<BASE>` holds the workspace `<ROOT>`, `<OUT>`
 * (`outside`, with secret.txt) and the prefix sibling `<ROOT>-evil` (with secret.txt).
 */

export interface CorpusSetupOp {
  op: string
  link?: string
  target?: string
  path?: string
  [field: string]: unknown
}

export interface PathCase {
  /** null: built from `path_build` (a path too long to write out). */
  path: string | null
  path_build?: Array<[string, number]>
  expect: 'inside' | 'outside'
  op?: WorkspaceOp
  /** A case only one tool can express (e.g. glob's pattern). */
  tool?: string
  setup_ops?: CorpusSetupOp[]
  protected?: boolean
  why: string
  category: string
}

/** The cases; a missing or empty sample throws (see test-fixtures/corpus.ts). */
export function loadPathCases(): PathCase[] {
  return loadCorpus<PathCase>('path-sample')
}

export interface CorpusLayout {
  base: string
  root: string
  out: string
  /** The root as the tool is configured with it: a symlink to `root` after a `rootlink` op. */
  configuredRoot: string
}

/**
 * Builds the layout in the existing folder `base`: the root `<base>/<rootName>` with `rootFiles`, and both
 * secret.txt files holding `secrets.outside` and `secrets.evil`.
 */
export async function makeCorpusLayout(
  base: string,
  opts: { rootName?: string; rootFiles: Record<string, string>; secrets: { outside: string; evil: string } },
): Promise<CorpusLayout> {
  const root = path.join(base, opts.rootName ?? 'ws')
  const out = path.join(base, 'outside')
  for (const [rel, content] of Object.entries(opts.rootFiles)) {
    await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true })
    await fs.writeFile(path.join(root, rel), content)
  }
  await fs.mkdir(out, { recursive: true })
  await fs.writeFile(path.join(out, 'secret.txt'), opts.secrets.outside)
  await fs.mkdir(`${root}-evil`, { recursive: true })
  await fs.writeFile(path.join(`${root}-evil`, 'secret.txt'), opts.secrets.evil)
  return { base, root, out, configuredRoot: root }
}

export function fillCorpus(text: string, layout: CorpusLayout): string {
  return text
    .replaceAll('<ROOTNAME>', path.basename(layout.root))
    .replaceAll('<ROOT>', layout.root)
    .replaceAll('<OUT>', layout.out)
    .replaceAll('<BASE>', layout.base)
}

/** The case's path as the model would send it. */
export function casePath(c: PathCase, layout: CorpusLayout): string {
  return fillCorpus(c.path ?? buildRepeated(c.path_build), layout)
}

/** A relative link location is inside the root; an absolute one is used as is. */
function at(layout: CorpusLayout, where: string): string {
  const filled = fillCorpus(where, layout)
  return path.isAbsolute(filled) ? filled : path.join(layout.root, filled)
}

/** Builds what a case's `setup_ops` describe; a `rootlink` changes `layout.configuredRoot`. */
export async function applyCorpusSetup(layout: CorpusLayout, ops: CorpusSetupOp[] = []): Promise<void> {
  for (const op of ops) {
    switch (op.op) {
      case 'symlink': {
        const link = at(layout, String(op.link))
        await fs.mkdir(path.dirname(link), { recursive: true })
        await fs.symlink(fillCorpus(String(op.target), layout), link)
        break
      }
      case 'hardlink': {
        const link = at(layout, String(op.link ?? op.path))
        await fs.mkdir(path.dirname(link), { recursive: true })
        await fs.link(at(layout, String(op.target ?? op.existing)), link)
        break
      }
      case 'mkdir':
        await fs.mkdir(at(layout, String(op.path ?? op.link ?? op.dir)), { recursive: true })
        break
      case 'rootlink': {
        const link = at(layout, String(op.link))
        await fs.symlink(layout.root, link)
        layout.configuredRoot = link
        break
      }
      case 'file': {
        const file = at(layout, String(op.path))
        await fs.mkdir(path.dirname(file), { recursive: true })
        await fs.writeFile(file, String(op.content ?? ''))
        break
      }
      default:
        throw new Error(
          `unknown setup op ${JSON.stringify(op)}: teach test-fixtures/path-corpus.ts to build it`,
        )
    }
  }
}

/**
 * One test per case for a tool run as the app runs it (on the real root): each case gets its own layout in a
 * new temp workspace (`removeWorkspaces` cleans up), then `check` runs the tool on the case's path.
 */
export function itHoldsForEachPathCase(
  layout: { rootFiles: Record<string, string>; secrets: { outside: string; evil: string } },
  check: (c: PathCase, run: { layout: CorpusLayout; workspace: string; input: string }) => Promise<void>,
): void {
  const cases = loadPathCases()
  it.each(cases.map((c, i) => [i, c.category, c.path ?? '(built)', c] as const))(
    'case %i (%s) %s',
    async (_i, _category, _label, c) => {
      const built = await makeCorpusLayout(path.dirname(await makeWorkspace('lanes-corpus-')), layout)
      await applyCorpusSetup(built, c.setup_ops)
      // The tool receives the real root, as DESIGN's ToolContext says.
      const workspace = await fs.realpath(built.configuredRoot)
      await check(c, { layout: built, workspace, input: casePath(c, built) })
    },
  )
}
