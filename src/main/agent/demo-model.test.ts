import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { toolInputSchemas } from '../tools/index'
import { buildDemoScenario, demoResponder, taskWords } from './demo-model'
import { createModelClient, type TurnRequest } from './model'
import { parseScenario, Scenario, type ToolBlock } from './scenario'
import { startScriptedModel } from './scripted-model'

const folders: string[] = []
afterEach(async () => {
  await Promise.all(folders.splice(0).map((f) => rm(f, { recursive: true, force: true })))
})

async function workspace(files: Record<string, string> = {}): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'lanes-demo-'))
  folders.push(root)
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), content)
  }
  return root
}

function toolCalls(scenario: Scenario): ToolBlock[] {
  return scenario.turns.flatMap((t) => t.blocks.filter((b): b is ToolBlock => 'tool' in b))
}

function texts(scenario: Scenario): string {
  return scenario.turns.flatMap((t) => t.blocks.flatMap((b) => ('text' in b ? [b.text] : []))).join('\n')
}

/** Every call must be one the real tools accept, or the demo would show errors instead of the product. */
function expectValidCalls(scenario: Scenario): void {
  for (const call of toolCalls(scenario)) {
    const schema = toolInputSchemas[call.tool as keyof typeof toolInputSchemas]
    expect(schema, call.tool).toBeDefined()
    expect(schema.safeParse(call.input).success, JSON.stringify(call)).toBe(true)
  }
}

describe('demo model', () => {
  it('builds a valid scenario for an empty folder', async () => {
    const scenario = await buildDemoScenario(await workspace())
    expect(parseScenario(scenario)).toMatchObject({ ok: true })
    expectValidCalls(scenario)
    const first = scenario.turns[0]?.blocks[0]
    expect(first && 'text' in first ? first.text : '').toMatch(/built-in demo/)
    expect(texts(scenario)).toMatch(/Settings/)
    const calls = toolCalls(scenario)
    expect(calls.filter((c) => c.tool === 'read_file')).toEqual([])
    expect(calls.map((c) => c.tool)).toEqual(['glob', 'grep', 'write_file', 'bash'])
    expect(calls.find((c) => c.tool === 'bash')?.input).toMatchObject({ command: 'ls' })
    expect(scenario.turns.at(-1)?.stop).toBe('end_turn')
  })

  it('reads a small project’s README, manifest and a main source file in parallel, then writes a note', async () => {
    const root = await workspace({
      'README.md': '# Widget Factory\n\nMakes widgets.\n',
      'package.json': JSON.stringify({
        name: 'widget-factory',
        description: 'Widgets, fast',
        scripts: { test: 'vitest' },
      }),
      'src/index.ts': 'export const a = 1\n',
      'src/util/strings.ts': 'export const b = 2\n',
      'src/util/numbers.ts': 'export const c = 3\n',
      'node_modules/dep/index.js': 'module.exports = 1\n',
      'node_modules/dep/a.js': '',
      'node_modules/dep/b.js': '',
      'node_modules/dep/c.js': '',
      '.git/HEAD': 'ref: refs/heads/main\n',
    })
    const scenario = await buildDemoScenario(root)
    expect(parseScenario(scenario)).toMatchObject({ ok: true })
    expectValidCalls(scenario)

    const [explore, note, closing] = scenario.turns
    const exploreCalls = explore?.blocks.filter((b): b is ToolBlock => 'tool' in b) ?? []
    expect(exploreCalls.map((c) => [c.tool, (c.input as { path?: string }).path])).toEqual([
      ['read_file', 'README.md'],
      ['read_file', 'package.json'],
      ['read_file', 'src/index.ts'],
      ['glob', undefined],
      ['grep', 'src'],
    ])
    expect(exploreCalls[3]?.input).toEqual({ pattern: 'src/**/*.ts' })
    expect(explore?.stop).toBe('tool_use')

    const noteCalls = note?.blocks.filter((b): b is ToolBlock => 'tool' in b) ?? []
    expect(noteCalls.map((c) => c.tool)).toEqual(['write_file', 'bash'])
    const content = (noteCalls[0]?.input as { path: string; content: string }).content
    expect((noteCalls[0]?.input as { path: string }).path).toBe('LANES_DEMO.md')
    expect(content).toContain('Widget Factory')
    expect(content).toContain('widget-factory')
    expect(content).toContain('TypeScript')
    expect(noteCalls[1]?.input).toMatchObject({ command: 'git status' })
    expect(closing?.stop).toBe('end_turn')
    for (const turn of scenario.turns) {
      expect(turn.tokensPerSecond).toBeGreaterThanOrEqual(80)
      expect(turn.tokensPerSecond).toBeLessThanOrEqual(200)
      expect(turn.firstTokenMs).toBeGreaterThan(0)
    }
  })

  it('reads an existing note before overwriting it, and never picks a symlink', async () => {
    const root = await workspace({
      'LANES_DEMO.md': 'old note\n',
      'main.py': 'print(1)\n',
      'outside.txt': 'x',
    })
    await symlink(join(root, 'outside.txt'), join(root, 'README.md'))
    const scenario = await buildDemoScenario(root)
    const reads = toolCalls(scenario)
      .filter((c) => c.tool === 'read_file')
      .map((c) => (c.input as { path: string }).path)
    expect(reads).toEqual(['main.py', 'LANES_DEMO.md'])
    expect(toolCalls(scenario).find((c) => c.tool === 'write_file')?.input).toMatchObject({
      path: 'LANES_DEMO.md',
    })
  })

  it('returns a scenario even for a folder it cannot read', async () => {
    const scenario = await buildDemoScenario(join(tmpdir(), 'lanes-demo-does-not-exist', String(Date.now())))
    expect(Scenario.safeParse(scenario).success).toBe(true)
  })

  it('plays through the scripted model and the model client as a valid conversation', async () => {
    const root = await workspace({ 'README.md': '# Demo\n', 'src/app.js': 'console.log(1)\n' })
    const scenario = await buildDemoScenario(root)
    // Unpaced, so the test does not wait for the watchable speed.
    const fast = {
      ...scenario,
      turns: scenario.turns.map((t) => ({ ...t, tokensPerSecond: null, firstTokenMs: null })),
    }
    const server = await startScriptedModel({ scenario: fast })
    try {
      const client = createModelClient({ baseUrl: server.baseUrl })
      const messages: TurnRequest['messages'] = [{ role: 'user', content: 'Explore.' }]
      const stops: (string | null)[] = []
      for (let turn = 0; turn < scenario.turns.length; turn++) {
        const result = await client.streamTurn({
          system: 'demo',
          tools: [],
          messages,
          signal: new AbortController().signal,
          onEvent: () => undefined,
        })
        stops.push(result.stopReason)
        for (const use of result.toolUses) expect(() => JSON.parse(use.rawInput), use.name).not.toThrow()
        messages.push({ role: 'assistant', content: result.content })
        if (result.toolUses.length > 0) {
          messages.push({
            role: 'user',
            content: result.toolUses.map((u) => ({
              type: 'tool_result' as const,
              tool_use_id: u.id,
              content: 'ok',
            })),
          })
        }
      }
      expect(stops).toEqual(['tool_use', 'tool_use', 'end_turn'])
    } finally {
      await server.close()
    }
  })

  it('says how to switch to Claude in the mode the user is in', async () => {
    const root = await workspace()
    const app = texts(await buildDemoScenario(root, { host: 'app' }))
    const web = texts(await buildDemoScenario(root, { host: 'web' }))
    const cli = texts(await buildDemoScenario(root, { host: 'cli' }))
    expect(app).toMatch(/Settings/)
    expect(web).toMatch(/Settings/)
    expect(web).toMatch(/lanes web.*ANTHROPIC_API_KEY/)
    expect(cli).toMatch(/lanes run.*ANTHROPIC_API_KEY/)
    expect(cli).not.toMatch(/Settings/)
  })

  it('names the task and reads the files it mentions, searching for its words', async () => {
    const root = await workspace({
      'README.md': '# Shop\n',
      'src/cart.ts': 'export const cart = []\n',
      'src/checkout.ts': 'export const pay = 1\n',
      'src/index.ts': 'export {}\n',
    })
    expect(taskWords('Fix the rounding in the cart totals')).toEqual(['rounding', 'cart', 'totals'])
    const scenario = await buildDemoScenario(root, { task: 'Fix the rounding in the cart totals' })
    expectValidCalls(scenario)
    expect(texts(scenario)).toContain('You asked: “Fix the rounding in the cart totals”')
    const explore = scenario.turns[0]?.blocks.filter((b): b is ToolBlock => 'tool' in b) ?? []
    expect(
      explore.filter((c) => c.tool === 'read_file').map((c) => (c.input as { path: string }).path),
    ).toEqual(['src/cart.ts'])
    expect(explore.find((c) => c.tool === 'grep')?.input).toEqual({
      pattern: 'rounding|cart|totals',
      case_insensitive: true,
    })
    // The note records the task.
    const write = toolCalls(scenario).find((c) => c.tool === 'write_file')
    expect((write?.input as { content: string }).content).toContain('Fix the rounding in the cart totals')
  })

  it('does not ask to approve a note that would not change', async () => {
    const root = await workspace({ 'main.py': 'print(1)\n' })
    const first = await buildDemoScenario(root, { task: 'Explain main' })
    const content = (toolCalls(first).find((c) => c.tool === 'write_file')?.input as { content: string })
      .content
    await writeFile(join(root, 'LANES_DEMO.md'), content)
    const again = await buildDemoScenario(root, { task: 'Explain main' })
    expectValidCalls(again)
    expect(toolCalls(again).map((c) => c.tool)).not.toContain('write_file')
    expect(texts(again)).toContain('nothing for you to approve')
    // Another task changes the note, so that one is asked.
    const other = await buildDemoScenario(root, { task: 'Explain the tests' })
    expect(toolCalls(other).map((c) => c.tool)).toContain('write_file')
  })

  it('answers each task of a session, follow-ups included, from the conversation it is sent', async () => {
    const root = await workspace({ 'README.md': '# Demo\n', 'src/app.js': 'console.log(1)\n' })
    const respond = demoResponder(root, 'app')
    const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] })
    const assistant = { role: 'assistant', content: [{ type: 'text', text: '…' }] }
    const results = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'ok' }] }
    const first = await respond({ messages: [user('Look at the app')] })
    expect(JSON.stringify(first.blocks)).toContain('You asked: “Look at the app”')
    expect(JSON.stringify(first.blocks)).toContain('built-in demo')
    const closing = await respond({
      messages: [user('Look at the app'), assistant, results, assistant, results],
    })
    expect(closing.stop).toBe('end_turn')
    const followUp = await respond({
      messages: [
        user('Look at the app'),
        assistant,
        results,
        assistant,
        results,
        assistant,
        user('Now the readme'),
      ],
    })
    expect(followUp.stop).toBe('tool_use')
    expect(JSON.stringify(followUp.blocks)).toContain('You asked: “Now the readme”')
    // No introduction the second time.
    expect(JSON.stringify(followUp.blocks)).not.toContain('built-in demo')
    expect(JSON.stringify(followUp.blocks)).not.toContain('no more turns')
  })
})
