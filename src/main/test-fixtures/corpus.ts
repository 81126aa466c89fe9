import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The hostile-input samples (corpus/README.md says what each holds), copied byte for byte from the team's shared
 * folder into the repository so that a plain clone runs every test built on them. Prettier leaves them alone
 * (.prettierignore): refresh them by copying the shared files over them again.
 *
 * A missing or empty sample is an error, never a skipped test: a test that quietly runs no cases cannot fail.
 */
export type CorpusName = 'args-sample' | 'bash-sample' | 'path-sample'

export function corpusFile(name: CorpusName): string {
  return fileURLToPath(new URL(`./corpus/${name}.json`, import.meta.url))
}

export function loadCorpus<T>(name: CorpusName): T[] {
  const file = corpusFile(name)
  const cases = JSON.parse(readFileSync(file, 'utf8')) as unknown
  if (!Array.isArray(cases) || cases.length === 0) throw new Error(`the corpus ${file} holds no cases`)
  return cases as T[]
}

/** `[segment, count]` pairs, each segment repeated `count` times, joined: how a sample writes a huge input. */
export function buildRepeated(pieces: ReadonlyArray<readonly [string, number]> = []): string {
  return pieces.map(([segment, count]) => segment.repeat(count)).join('')
}

export interface BashCase {
  /** null: built from `cmd_prefix`, `cmd_repeat` and `cmd_suffix` (see `bashCommand`). */
  cmd: string | null
  cmd_prefix?: string
  cmd_repeat?: [string, number]
  cmd_suffix?: string
  expect: 'allow' | 'deny'
  why: string
  category: string
  debatable?: boolean
}

export function bashCommand(c: BashCase): string {
  if (c.cmd !== null) return c.cmd
  return (c.cmd_prefix ?? '') + buildRepeated(c.cmd_repeat ? [c.cmd_repeat] : []) + (c.cmd_suffix ?? '')
}

export interface ArgsCase {
  /** null: built from `raw_build`. */
  raw: string | null
  raw_build?: Array<[string, number]>
  tool: string
  expect: 'repair' | 'reject'
  parsed?: unknown
  why: string
  category: string
}

export function argsRaw(c: ArgsCase): string {
  return c.raw ?? buildRepeated(c.raw_build)
}
