import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bashTool } from './bash/bash'
import { sandboxSupport } from './bash/sandbox/launch'
import { isReadOnlyCommand, loadBashGrammar, validateBashCommand } from './bash/validate'
import { editFileTool } from './edit-file'
import { globTool } from './glob'
import { grepTool } from './grep'
import { translateRegex } from './grep/rust-regex'
import { readFileTool } from './read-file'
import { SnapshotStore } from './snapshots'
import type { ToolContext, ToolResult } from './tool'
import { writeFileTool } from './write-file'
import { makeToolContext } from './test-fixtures/tool-context'

/**
 * Every name a plain JavaScript object answers without holding it (`constructor`, `toString`, `__proto__`,
 * ...) as the name of folders, files, extensions, programs and git subcommands. A lookup with `in` or `[]` on
 * a plain object keyed by such a name finds `Object.prototype`'s member: once, a folder named `constructor`
 * anywhere in the workspace made every command fail ("names.map is not a function").
 */
const NAMES = Object.getOwnPropertyNames(Object.prototype)

const support = sandboxSupport()
const noSandbox = support.available ? null : support.reason
if (noSandbox !== null && (process.env.CI || process.env.LANES_REQUIRE_SANDBOX))
  throw new Error(`The sandbox tests need bubblewrap on CI: ${noSandbox}`)
if (noSandbox !== null) console.warn(`Skipping the sandboxed part of the prototype-name tests: ${noSandbox}`)

let base: string
let workspace: string
let outputDir: string
const snapshots = new SnapshotStore()

const context = (overrides: Partial<ToolContext> = {}): ToolContext =>
  makeToolContext(workspace, {
    outputDir,
    snapshots,
    callId: `toolu_${Math.random().toString(36).slice(2)}`,
    ...overrides,
  })

beforeAll(async () => {
  expect(NAMES).toEqual(
    expect.arrayContaining(['constructor', 'toString', 'valueOf', '__proto__', 'hasOwnProperty']),
  )
  await loadBashGrammar()
  // Not under /tmp: the sandbox puts a private tmpfs there.
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  base = await realpath(await mkdtemp(join(cache, 'lanes-proto-names-')))
  workspace = join(base, 'ws')
  outputDir = join(base, 'session')
  await mkdir(outputDir, { recursive: true })
  await mkdir(join(workspace, 'src'), { recursive: true })
  for (const name of NAMES) {
    // A folder and a file of the name, nested both ways, a file with it as extension, and one in `.git`.
    await mkdir(join(workspace, name, name), { recursive: true })
    await writeFile(join(workspace, name, name, 'leaf.txt'), `proto-marker ${name}\n`)
    await writeFile(join(workspace, 'src', name), `proto-marker file ${name}\n`)
    await writeFile(join(workspace, `file.${name}`), `proto-marker ext ${name}\n`)
  }
  execFileSync('git', ['init', '-q'], { cwd: workspace })
  for (const name of NAMES) await mkdir(join(workspace, '.git', name), { recursive: true })
})

afterAll(async () => {
  await rm(base, { recursive: true, force: true })
})

/** The result's output, failing the test with it when the call failed. */
function succeeded(result: ToolResult): string {
  expect(result.isError, result.output).toBe(false)
  return result.output
}

describe('names every object has, as file, folder and program names', () => {
  it.skipIf(noSandbox !== null)(
    'runs bash in the sandbox, auto-run and approved, over such folders',
    async () => {
      const listing = succeeded(await bashTool.execute({ command: 'ls -R' }, context()))
      for (const name of NAMES) expect(listing).toContain(name)
      const approved = { approval: { network: false, outsideSandbox: false } }
      for (const name of NAMES) {
        succeeded(await bashTool.execute({ command: `touch ${name}/made.txt` }, context(approved)))
        expect(await readFile(join(workspace, name, 'made.txt'), 'utf8')).toBe('')
      }
      // `.git` is pinned in part (its config, hooks and info stay read-only): folders beside them are not.
      const git = succeeded(await bashTool.execute({ command: 'git status --short' }, context()))
      expect(git).toContain('src/')
    },
  )

  it('reads, searches, lists, writes and edits them with the file tools', async () => {
    for (const name of NAMES) {
      const read = succeeded(await readFileTool.execute({ path: `${name}/${name}/leaf.txt` }, context()))
      expect(read).toContain(`proto-marker ${name}`)
      expect(succeeded(await readFileTool.execute({ path: `src/${name}` }, context()))).toContain(name)
    }
    const found = succeeded(await grepTool.execute({ pattern: 'proto-marker' }, context()))
    for (const name of NAMES) {
      expect(found).toContain(`${name}/${name}/leaf.txt`)
      expect(found).toContain(`file.${name}`)
    }
    const listed = succeeded(await globTool.execute({ pattern: '**/*' }, context()))
    for (const name of NAMES) expect(listed).toContain(`src/${name}`)
    for (const name of NAMES) {
      const listedOne = succeeded(await globTool.execute({ pattern: `${name}/**` }, context()))
      expect(listedOne).toContain(`${name}/${name}/leaf.txt`)
    }
    for (const name of NAMES) {
      const path = `${name}/${name}/written.txt`
      succeeded(await writeFileTool.execute({ path, content: `one ${name}\n` }, context()))
      succeeded(await editFileTool.execute({ path, old_string: 'one', new_string: 'two' }, context()))
      expect(await readFile(join(workspace, path), 'utf8')).toBe(`two ${name}\n`)
      // An existing file named after it: read first, then overwritten.
      const file = `src/${name}`
      succeeded(await readFileTool.execute({ path: file }, context()))
      succeeded(await writeFileTool.execute({ path: file, content: `new ${name}\n` }, context()))
      expect(await readFile(join(workspace, file), 'utf8')).toBe(`new ${name}\n`)
    }
  })

  it('judges commands, programs and subcommands of such names with a reason, never by what Object holds', () => {
    for (const name of NAMES) {
      for (const command of [name, `${name} x`, `git ${name}`, `npm ${name}`, `cargo ${name}`]) {
        const verdict = validateBashCommand(command)
        if (!verdict.ok) expect(typeof verdict.reason, command).toBe('string')
        // Unknown programs are never read-only, whatever Object.prototype holds under their name.
        expect(isReadOnlyCommand(command), command).toBe(false)
      }
      expect(validateBashCommand(`ls ${name}`)).toEqual({ ok: true })
      expect(isReadOnlyCommand(`ls ${name}`)).toBe(true)
      const git = validateBashCommand(`git ${name}`)
      expect(git.ok).toBe(false)
      if (!git.ok) expect(git.reason).toContain('not a built-in git command')
    }
  })

  it('refuses a POSIX class of such a name in a search pattern', () => {
    for (const name of NAMES) {
      const translated = translateRegex(`[[:${name}:]]`, false)
      expect(translated.ok, name).toBe(false)
    }
  })
})
