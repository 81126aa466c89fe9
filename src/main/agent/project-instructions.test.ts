import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Redactor } from '../secrets/redactor'
import { foldersOf, MAX_INSTRUCTION_CHARS, readInstructions } from './project-instructions'

let root: string
beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'lanes-instr-')))
})
afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

describe('readInstructions', () => {
  it('reads AGENTS.md, CLAUDE.md and .lanes/instructions.md at the root into one marked section', async () => {
    await writeFile(join(root, 'AGENTS.md'), '\ufeffUse tabs.\n')
    await writeFile(join(root, 'CLAUDE.md'), 'Run the tests.\n')
    await mkdir(join(root, '.lanes'))
    await writeFile(join(root, '.lanes', 'instructions.md'), 'Lanes only.\n')
    const loaded = await readInstructions(root, '')
    expect(loaded.files.map((f) => f.path)).toEqual(['AGENTS.md', 'CLAUDE.md', '.lanes/instructions.md'])
    expect(loaded.text).toMatch(/^<project-instructions>\n/)
    expect(loaded.text).toContain('<file path="AGENTS.md">\nUse tabs.\n\n</file>')
    expect(loaded.text).toContain('Lanes only.')
    expect(loaded.files[0]!.tokens).toBeGreaterThan(0)
  })

  it('caps a 5 MB file and says so, in the section and in the file list', async () => {
    await writeFile(join(root, 'AGENTS.md'), 'rule\n'.repeat(1_000_000))
    const loaded = await readInstructions(root, '')
    const [file] = loaded.files
    expect(file!.bytes).toBe(5_000_000)
    expect(file!.note).toMatch(/capped: the file is 4\.8 MB; only its first 32 KB are used/)
    expect(loaded.text.length).toBeLessThan(MAX_INSTRUCTION_CHARS + 1000)
    expect(loaded.text).toContain('[Lanes: capped')
  })

  it('leaves out a binary file and a file that is not UTF-8, naming why', async () => {
    await writeFile(join(root, 'AGENTS.md'), Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00]))
    await writeFile(join(root, 'CLAUDE.md'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]))
    const loaded = await readInstructions(root, '')
    expect(loaded.files.map((f) => f.note)).toEqual([
      'it is a binary file, so it is not used',
      'it is not UTF-8 text, so it is not used',
    ])
    expect(loaded.text).toBe('')
  })

  it('never reads a secret through a link, nor anything outside the workspace', async () => {
    await writeFile(join(root, '.env'), 'API_KEY=sk-live-123\n')
    await symlink(join(root, '.env'), join(root, 'AGENTS.md'))
    const outside = await mkdtemp(join(tmpdir(), 'lanes-outside-'))
    await writeFile(join(outside, 'x.md'), 'outside secret\n')
    await symlink(join(outside, 'x.md'), join(root, 'CLAUDE.md'))
    const loaded = await readInstructions(root, '')
    await rm(outside, { recursive: true, force: true })
    expect(loaded.text).toBe('')
    expect(JSON.stringify(loaded)).not.toContain('sk-live')
    expect(JSON.stringify(loaded)).not.toContain('outside secret')
    expect(loaded.files).toEqual([
      { path: 'AGENTS.md', bytes: 0, tokens: 0, note: expect.stringMatching(/secret/) },
    ])
  })

  it('a FIFO or a folder named AGENTS.md is passed over without blocking', async () => {
    execFileSync('mkfifo', [join(root, 'AGENTS.md')])
    await mkdir(join(root, 'CLAUDE.md'))
    const loaded = await readInstructions(root, '')
    expect(loaded).toEqual({ files: [], text: '' })
  })

  it('passes every text through the redactor seam', async () => {
    await writeFile(join(root, 'AGENTS.md'), 'token: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n')
    const loaded = await readInstructions(
      root,
      '',
      async () => (text) => text.replace(/ghp_\w+/g, '[REDACTED]'),
    )
    expect(loaded.text).toContain('token: [REDACTED]')
    expect(loaded.text).not.toContain('ghp_')
  })

  it('caps a file only after redaction: a value running past the cap shows no start of itself', async () => {
    const value = 'ghp_Straddles0123456789abcdefXYZ'
    await writeFile(join(root, 'AGENTS.md'), `${'a'.repeat(MAX_INSTRUCTION_CHARS - 8)}${value}\nmore\n`)
    const redactor = new Redactor([{ value, source: '.env' }])
    const loaded = await readInstructions(root, '', async () => (t) => redactor.redactText(t))
    expect(loaded.text).not.toContain('ghp_')
    expect(loaded.files[0]?.note).toMatch(/^capped/)
  })

  it('asks for the redactor only when there is a file to read (a workspace without any does not wait for it)', async () => {
    let asked = 0
    const redactor = async () => {
      asked++
      return (text: string) => text
    }
    expect((await readInstructions(root, '', redactor)).files).toEqual([])
    expect(asked).toBe(0)
    await writeFile(join(root, 'AGENTS.md'), 'one\n')
    await writeFile(join(root, 'CLAUDE.md'), 'two\n')
    expect((await readInstructions(root, '', redactor)).files).toHaveLength(2)
    expect(asked).toBe(1)
  })

  it('a folder has only AGENTS.md and CLAUDE.md, and says where they apply', async () => {
    await mkdir(join(root, 'pkg'))
    await writeFile(join(root, 'pkg', 'AGENTS.md'), 'pkg rules\n')
    await mkdir(join(root, 'pkg', '.lanes'))
    await writeFile(join(root, 'pkg', '.lanes', 'instructions.md'), 'not read\n')
    const loaded = await readInstructions(root, 'pkg')
    expect(loaded.files.map((f) => f.path)).toEqual(['pkg/AGENTS.md'])
    expect(loaded.text).toContain('the folder pkg/')
    expect(loaded.text).not.toContain('not read')
  })
})

describe('foldersOf', () => {
  it('lists the folders between the root and a file, outermost first', () => {
    expect(foldersOf('src/a/b.ts')).toEqual(['src', 'src/a'])
    expect(foldersOf('b.ts')).toEqual([])
    expect(foldersOf('../x/y.ts')).toEqual([])
  })
})
