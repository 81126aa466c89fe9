import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { beforeEach, describe, expect, it } from 'vitest'
import { useTempDir } from '../test-fixtures/temp-dir'
import { finished, runWithMcp, TEST_SERVER } from './test-fixtures/mcp-run'

/** An MCP server answering with 100 MB: slow (the server writes it all), so kept out of the unit run. */
describe('lanes run with an MCP server that answers with 100 MB', () => {
  const base = useTempDir('lanes-mcp-big-')
  let workspace: string
  let sessionsDir: string
  beforeEach(async () => {
    workspace = join(base(), 'ws')
    sessionsDir = join(base(), 'sessions')
    await mkdir(workspace)
    await mkdir(sessionsDir)
  })

  it('is refused within bounded memory, and the run goes on', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    // Each run in a sessions folder of its own: a turn waits for its server's readiness in the logs there.
    const run = async (mb: number) => {
      const dir = join(sessionsDir, String(mb))
      await mkdir(dir)
      return runWithMcp({
        workspace,
        sessionsDir: dir,
        config,
        turns: [
          { afterReady: { t: 1 }, blocks: [{ tool: 'mcp__t__big', id: 'b2', input: { mb } }] },
          { blocks: [{ text: 'ok' }] },
        ],
      })
    }
    // A first run over the limit (20 MB) loads every module and takes the process's memory as high as a refused
    // answer takes it; how much higher the 100 MB run takes it is what the answer's size costs. Peaks, not the
    // memory at one moment: that one falls and rises again with each collection, and swung by 100 MB under load.
    const peak = (): number => process.resourceUsage().maxRSS * 1024
    expect((await run(20)).code).toBe(0)
    const before = peak()
    const { code, events } = await run(100)
    expect(code).toBe(0)
    expect(finished(events, 'b2')).toMatchObject({ isError: true })
    expect(finished(events, 'b2')?.output).toContain('larger than 16 MiB')
    // Never the whole answer in memory: what the SDK reads is cut at 16 MiB.
    expect(peak() - before).toBeLessThan(64 * 1024 * 1024)
  }, 120_000)
})
