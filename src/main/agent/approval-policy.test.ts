import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loadBashGrammar } from '../tools/bash/validate'
import { defineTool, ok, type PolicyOptions, type PreviewOptions, type ToolContext } from '../tools/tool'
import { createToolRegistry } from '../tools'
import { AlwaysAllowStore } from './always-allow-store'
import { buildPreview, decidePolicy } from './approval-policy'
import { GIT_WORKSPACE_RULES, isSecretPath, STRICT_RULES } from '../tools/sensitive-paths'
import { expectedProtected, SENSITIVE_PATH_TABLE } from '../tools/sensitive-paths.table'
import { makeToolContext } from '../tools/test-fixtures/tool-context'

const tools = createToolRegistry()
const policy = (name: string, input: unknown, opts: PolicyOptions) =>
  decidePolicy(tools.get(name), input, opts)
function preview(name: string, input: unknown, ctx: ToolContext, opts: PreviewOptions) {
  const tool = tools.get(name)
  if (!tool) throw new Error(`no tool ${name}`)
  return buildPreview(tool, input, ctx, opts)
}

describe('the approval policy', () => {
  let root: string
  let opts: PolicyOptions
  beforeAll(async () => {
    await loadBashGrammar()
    root = await realpath(await mkdtemp(join(tmpdir(), 'lanes-approvals-')))
    await mkdir(join(root, '.git'))
    await writeFile(join(root, 'a.ts'), 'one\ntwo\n')
    await writeFile(join(root, '.env'), 'TOKEN=x\n')
    opts = {
      workspace: root,
      pathRules: GIT_WORKSPACE_RULES,
      alwaysAllow: [],
      autoApproveEdits: false,
      sandbox: true,
    }
  })
  afterAll(async () => {
    await rm(root, { recursive: true, force: true })
  })

  it('allows reads and searches, and asks before reading a secret', async () => {
    expect(await policy('read_file', { path: 'a.ts' }, opts)).toEqual({ kind: 'allow' })
    expect(await policy('grep', { pattern: 'x' }, opts)).toEqual({ kind: 'allow' })
    expect(await policy('glob', { pattern: '**' }, opts)).toEqual({ kind: 'allow' })
    expect(await policy('read_file', { path: '.env' }, opts)).toEqual({ kind: 'ask', protected: true })
    expect(await policy('read_file', { path: '.git/config' }, opts)).toEqual({ kind: 'allow' })
  })

  it('asks for writes and edits; auto-approve never covers protected paths', async () => {
    expect(await policy('write_file', { path: 'b.ts', content: '' }, opts)).toEqual({
      kind: 'ask',
      protected: false,
    })
    const auto = { ...opts, autoApproveEdits: true }
    expect(await policy('edit_file', { path: 'a.ts', old_string: 'one', new_string: '1' }, auto)).toEqual({
      kind: 'allow',
    })
    expect(await policy('write_file', { path: '.git/hooks/pre-commit', content: 'x' }, auto)).toEqual({
      kind: 'ask',
      protected: true,
    })
    expect(await policy('write_file', { path: '.env', content: 'x' }, auto)).toEqual({
      kind: 'ask',
      protected: true,
    })
  })

  it('allows read-only commands, asks for others, denies what the validator refuses with its reason', async () => {
    expect(await policy('bash', { command: 'ls' }, opts)).toEqual({ kind: 'allow' })
    expect(await policy('bash', { command: 'git status' }, opts)).toEqual({ kind: 'allow' })
    expect(await policy('bash', { command: 'npm test' }, opts)).toEqual({
      kind: 'ask',
      protected: false,
    })
    const denied = await policy('bash', { command: 'ls | wc -l' }, opts)
    expect(denied.kind).toBe('deny')
    expect((denied as { reason: string }).reason.length).toBeGreaterThan(10)
    const always = { ...opts, alwaysAllow: [{ tool: 'bash' as const, command: 'npm test' }] }
    expect(await policy('bash', { command: 'npm test' }, always)).toEqual({
      kind: 'allow',
      byRule: true,
    })
    expect(await policy('bash', { command: 'npm test -- --bail' }, always)).toEqual({
      kind: 'ask',
      protected: false,
    })
  })

  it('runs nothing without asking where there is no sandbox', () => {
    const unsandboxed = { ...opts, sandbox: false }
    for (const command of ['ls', 'git status', 'cat a.ts'])
      expect(policy('bash', { command }, unsandboxed)).toEqual({ kind: 'ask', protected: false })
    // Not even a command the user marked "always allow" (given for a command that would run in the sandbox).
    const always = { ...unsandboxed, alwaysAllow: [{ tool: 'bash' as const, command: 'npm test' }] }
    expect(policy('bash', { command: 'npm test' }, always)).toEqual({ kind: 'ask', protected: false })
    // A command the validator refuses is still refused.
    expect(policy('bash', { command: 'ls | wc -l' }, unsandboxed).kind).toBe('deny')
  })

  it('judges paths by the name given, so deciding never waits for the disk', () => {
    expect(policy('read_file', { path: './src/../.env' }, opts)).toEqual({
      kind: 'ask',
      protected: true,
    })
    expect(policy('read_file', { path: join(root, '.ENV.local') }, opts)).toEqual({
      kind: 'ask',
      protected: true,
    })
    const auto = { ...opts, autoApproveEdits: true }
    expect(policy('write_file', { path: 'src/../.GIT/config', content: '' }, auto)).toEqual({
      kind: 'ask',
      protected: true,
    })
    // A name the tool will refuse anyway is decided on nothing more: the tool gives the reason.
    expect(policy('write_file', { path: '../outside.ts', content: '' }, auto)).toEqual({
      kind: 'allow',
    })
  })

  it.each([
    ['with', GIT_WORKSPACE_RULES, true],
    ['without', STRICT_RULES, false],
  ] as const)('judges every path of the shared table (a workspace %s .git)', (_label, pathRules, hasGit) => {
    const auto = { ...opts, pathRules, autoApproveEdits: true }
    for (const row of SENSITIVE_PATH_TABLE) {
      const read = policy('read_file', { path: row.path }, auto)
      expect(read, row.path).toEqual(row.secret ? { kind: 'ask', protected: true } : { kind: 'allow' })
      const isProtected = expectedProtected(row, hasGit)
      const expected = isProtected ? { kind: 'ask', protected: true } : { kind: 'allow' }
      expect(policy('write_file', { path: row.path, content: '' }, auto), row.path).toEqual(expected)
      const edit = { path: row.path, old_string: 'a', new_string: 'b' }
      expect(policy('edit_file', edit, auto), row.path).toEqual(expected)
    }
  })

  it('knows which files hold secrets', () => {
    for (const p of ['.env', 'app/.env.local', '.ssh/config', 'certs/server.pem', 'id_ed25519', '.npmrc'])
      expect(isSecretPath(p), p).toBe(true)
    for (const p of ['src/env.ts', '.github/workflows/ci.yml', 'README.md', 'keys.ts'])
      expect(isSecretPath(p), p).toBe(false)
  })

  it('previews an edit as a diff, and refuses to preview one that would not apply', async () => {
    const ctx = makeToolContext(root)
    const write = await preview('write_file', { path: 'new.ts', content: 'hello\n' }, ctx, {
      protected: false,
    })
    expect(write).toMatchObject({
      ok: true,
      preview: { kind: 'write', path: 'new.ts', before: null, after: 'hello\n' },
    })
    const bash = await preview('bash', { command: 'npm test', description: 'run the tests' }, ctx, {
      protected: false,
    })
    expect(bash).toEqual({
      ok: true,
      preview: { kind: 'bash', command: 'npm test', description: 'run the tests', cwd: root },
    })
  })

  it('asks for a tool that has no policy, and previews its arguments when it has no preview', async () => {
    const plain = defineTool({
      name: 'deploy',
      description: 'Deploys.',
      input: z.strictObject({ target: z.string() }),
      concurrencySafe: false,
      execute: async () => ok('deployed'),
    })
    expect(decidePolicy(plain, { target: 'prod' }, opts)).toEqual({ kind: 'ask', protected: false })
    expect(decidePolicy(undefined, {}, opts)).toEqual({ kind: 'ask', protected: false })
    const ctx = { workspace: root } as ToolContext
    expect(await buildPreview(plain, { target: 'prod' }, ctx, { protected: false })).toEqual({
      ok: true,
      preview: { kind: 'other', summary: 'deploy {"target":"prod"}' },
    })
    const allowing = { ...plain, policy: () => ({ kind: 'allow' as const }) }
    expect(decidePolicy(allowing, { target: 'prod' }, opts)).toEqual({ kind: 'allow' })
  })

  it('keeps always-allow rules per workspace on disk', async () => {
    const store = new AlwaysAllowStore(join(root, 'rules', 'always-allow.json'))
    await store.add('/w1', { tool: 'bash', command: 'npm test' })
    await store.add('/w1', { tool: 'bash', command: 'npm test' })
    await store.add('/w2', { tool: 'bash', command: 'make' })
    const again = new AlwaysAllowStore(join(root, 'rules', 'always-allow.json'))
    expect(await again.rules('/w1')).toEqual([{ tool: 'bash', command: 'npm test' }])
    expect(await again.rules('/w2')).toEqual([{ tool: 'bash', command: 'make' }])
    expect(await again.rules('/w3')).toEqual([])
  })
})
