import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEventDraft } from '../../shared/events'
import { DEFAULT_CONTEXT_WINDOW } from '../../shared/models'
import { startScriptedModel, type ScriptedModel } from '../agent/scripted-model'
import { DEFAULT_ENGINE_SETTINGS, launchSession, prepareEngine } from './engine'
import { useTempDir } from '../test-fixtures/temp-dir'
import { makeToolContext } from '../tools/test-fixtures/tool-context'
import { McpHub } from '../mcp/hub'
import { stdioServer } from '../mcp/test-fixtures/servers'

/**
 * A session's MCP servers start once its first model request is on the wire (issue 22: "a slow server never
 * blocks the first turn"): that request offers Lanes' own tools only, and the servers' tools join the requests
 * of the turns after they are ready.
 */

const toolNames = (request: unknown): string[] =>
  ((request as { tools?: { name: string }[] }).tools ?? []).map((t) => t.name)

describe('MCP servers and the first model request', () => {
  const dir = useTempDir('lanes-mcp-first-')
  const closers: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** By default only a request (or a call) starts the server: the time without one is far off. */
  function hub(startWithoutRequestMs = 600_000): { hub: McpHub; statuses: string[] } {
    const statuses: string[] = []
    const made = new McpHub({
      workspace: dir(),
      servers: [stdioServer('t')],
      trust: (s) => s.permissions,
      reserved: new Set(),
      contextWindowTokens: DEFAULT_CONTEXT_WINDOW,
      startWithoutRequestMs,
    })
    made.attach((draft: SessionEventDraft<'mcp.server'>) => statuses.push(draft.status))
    closers.push(() => made.close())
    return { hub: made, statuses }
  }

  it('does no work of a server before the first request; its tools are offered from the next turn', async () => {
    const { hub: made, statuses } = hub()
    const { registry: shared } = await prepareEngine()
    made.start()
    // What the hub had done when the session said its first request was on the wire: nothing.
    let atSent: string[] | undefined
    const requestSent = made.requestSent.bind(made)
    made.requestSent = () => {
      atSent ??= [...statuses]
      requestSent()
    }
    const registry = shared.withSource(made)
    let atArrival: string[] = []
    const model: ScriptedModel = await startScriptedModel({
      scenario: { turns: [] },
      respond: async () => {
        if (model.requests.length === 1) {
          atArrival = [...statuses]
          // The request is on the wire: the server starts while the model holds back its answer (a moment after
          // the body went out), and is ready before this turn's answer.
          const deadline = Date.now() + 30_000
          while (!registry.names().includes('mcp__t__wait') && Date.now() < deadline)
            await new Promise((r) => setTimeout(r, 20))
          return { blocks: [{ tool: 'mcp__t__wait', id: 'w1', input: { ms: 0 } }] }
        }
        return { blocks: [{ text: 'done' }] }
      },
    })
    closers.push(() => model.close())
    const launched = await launchSession({
      workspace: dir(),
      registry,
      model: { baseUrl: model.baseUrl, apiKey: 'test' },
      settings: { ...DEFAULT_ENGINE_SETTINGS, sessionsDir: join(dir(), '.sessions') },
      approvals: 'none',
      from: { task: 'hello' },
    })
    closers.push(
      () => launched.model.close(),
      () => launched.session.close(),
    )
    await launched.session.run('hello')
    const events = await launched.session.events()

    expect(atSent).toEqual([])
    expect(atArrival).toEqual([])
    const [first, second] = model.requests
    expect(toolNames(first)).toContain('grep')
    expect(toolNames(first).filter((n) => n.startsWith('mcp__'))).toEqual([])
    expect(toolNames(second)).toContain('mcp__t__wait')
    // The read-only tool ran as the server's own tool: in the turn after the server got ready, unasked.
    expect(events.find((e) => e.type === 'tool.finished' && e.callId === 'w1')).toMatchObject({
      isError: false,
      output: expect.stringContaining('waited'),
    })
    expect(statuses.slice(0, 2)).toEqual(['starting', 'ready'])
  })

  it('starts the servers when something waits for them, or after a while without a request', async () => {
    const { hub: waited, statuses } = hub()
    waited.start()
    await new Promise((r) => setTimeout(r, 100))
    expect(statuses).toEqual([])
    // A call resumed before any request (a continued session) starts its server and waits for it.
    const call = waited.pending('mcp__t__wait')
    const result = await call?.execute({ ms: 0 }, makeToolContext(dir()))
    expect(result).toMatchObject({ isError: false, output: expect.stringContaining('waited') })
    expect(statuses).toEqual(['starting', 'ready'])

    const { hub: late, statuses: seen } = hub(50)
    late.start()
    const deadline = Date.now() + 30_000
    while (!seen.includes('ready') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(seen).toEqual(['starting', 'ready'])
  })

  it('a hub closed before its servers started leaves nothing running and reports no start', async () => {
    const { hub: closed, statuses } = hub()
    closed.start()
    await closed.close()
    closed.requestSent()
    await closed.settled()
    expect(statuses).toEqual([])
  })
})
