import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseScenario } from './scenario'

describe('parseScenario', () => {
  it('accepts the example of DESIGN section 9', () => {
    const parsed = parseScenario(
      JSON.stringify({
        turns: [
          {
            blocks: [
              { text: 'Reading the sources.' },
              { tool: 'read_file', input: { path: 'src/a.ts' } },
              { tool: 'bash', rawInput: '{"command": "npm test",}' },
            ],
            stop: 'tool_use',
            tokensPerSecond: 80,
            firstTokenMs: 300,
            failAfterBlocks: null,
          },
        ],
      }),
    )
    expect(parsed).toMatchObject({ ok: true, warnings: [] })
  })

  it('names the field and the problem', () => {
    const cases: [unknown, RegExp][] = [
      [
        { turns: [{ blocks: [{ tool: 'bash', input: {}, rawInput: '{}' }] }] },
        /turns\[0\]\.blocks\[0\].*either "input" or "rawInput"/,
      ],
      [{ turns: [{ blocks: [{ text: 'a', tool: 'bash' }] }] }, /turns\[0\]\.blocks\[0\]/],
      [{ turns: [{ blocks: [], tokensPerSecond: -1 }] }, /turns\[0\]\.tokensPerSecond/],
      [{ turns: [{ blocks: [], failAfterBlocks: 1.5 }] }, /turns\[0\]\.failAfterBlocks/],
      [{ turns: [{ blocks: [], stop: 'max_tokens' }] }, /turns\[0\]\.stop: max_tokens needs a block/],
      [{ turn: [] }, /turns/],
    ]
    for (const [value, pattern] of cases) {
      const parsed = parseScenario(value)
      expect(parsed.ok).toBe(false)
      if (!parsed.ok) expect(parsed.error).toMatch(pattern)
    }
  })

  it('reports bad JSON with its position', () => {
    const parsed = parseScenario('{"turns": [', 'The scenario file s.json')
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(parsed.error).toMatch(/^The scenario file s\.json is not valid JSON/)
  })

  it('warns about unknown fields instead of failing', () => {
    const parsed = parseScenario({ turns: [{ blocks: [{ text: 'a', colour: 'red' }], tokensPerSec: 5 }] })
    expect(parsed.ok).toBe(true)
    if (parsed.ok) {
      expect(parsed.warnings).toEqual([
        'turns[0].tokensPerSec is not a known field; it is ignored.',
        'turns[0].blocks[0].colour is not a known field; it is ignored.',
      ])
    }
  })

  it('accepts every example scenario in e2e/scenarios', async () => {
    const folder = fileURLToPath(new URL('../../../e2e/scenarios/', import.meta.url))
    const files = (await readdir(folder)).filter((f) => f.endsWith('.json'))
    expect(files.length).toBeGreaterThanOrEqual(5)
    for (const file of files) {
      const parsed = parseScenario(await readFile(join(folder, file), 'utf8'), file)
      expect(parsed, file).toMatchObject({ ok: true, warnings: [] })
    }
  })
})
