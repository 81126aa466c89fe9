import { APIError, type Anthropic } from '@anthropic-ai/sdk'
import { describe, expect, it } from 'vitest'
import type { Scenario } from './scenario'

import { ask, useScriptedClients } from './test-fixtures/scripted-client'

/** The scripted model's --strict rules: it refuses, with a 400, what the real API refuses. */

const serve = useScriptedClients()

describe('scripted model --strict', () => {
  const thinkingTurn: Scenario = {
    turns: [
      {
        blocks: [
          { thinking: 'plan', signature: 'sig-1' },
          { tool: 'read_file', input: { path: 'a' } },
        ],
      },
      { blocks: [{ text: 'done' }] },
      { blocks: [{ text: 'again' }] },
    ],
  }

  const strictServe = (scenario: Scenario) => serve(scenario, { strict: true })

  /** The conversation after turn 1, with its assistant content as `edit` leaves it. */
  async function secondRequest(
    client: Anthropic,
    edit: (content: Record<string, unknown>[]) => Record<string, unknown>[],
  ): Promise<string> {
    const first = await client.messages.create(ask)
    const content = edit(first.content as unknown as Record<string, unknown>[])
    const id = (first.content[1] as { id: string }).id
    try {
      await client.messages.create({
        ...ask,
        messages: [
          ask.messages[0]!,
          { role: 'assistant', content: content as never },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'a' }] },
        ],
      })
      return 'accepted'
    } catch (e) {
      expect(e).toBeInstanceOf(APIError)
      expect((e as APIError).status).toBe(400)
      return (e as APIError).message
    }
  }

  it('accepts thinking sent back unchanged, and refuses it changed, dropped, moved or marked for caching', async () => {
    const { client } = await strictServe(thinkingTurn)
    expect(await secondRequest(client, (c) => c)).toBe('accepted')
    const cases: [string, (c: Record<string, unknown>[]) => Record<string, unknown>[]][] = [
      ['changed', (c) => [{ ...c[0], thinking: 'other plan' }, c[1]!]],
      ['dropped', (c) => [c[1]!]],
      ['moved', (c) => [c[1]!, c[0]!]],
      ['cached', (c) => [{ ...c[0], cache_control: { type: 'ephemeral' } }, c[1]!]],
    ]
    for (const [what, edit] of cases) {
      const { client: fresh } = await strictServe(thinkingTurn)
      expect(await secondRequest(fresh, edit), what).toMatch(/thinking/)
    }
  })

  it('refuses whitespace-only text and an assistant prefill, but takes a paused turn back', async () => {
    const { client } = await strictServe({
      turns: [{ blocks: [{ text: 'working' }], stop: 'pause_turn' }, { blocks: [{ text: 'done' }] }],
    })
    await expect(
      client.messages.create({
        ...ask,
        messages: [{ role: 'user', content: [{ type: 'text', text: ' ' }] }],
      }),
    ).rejects.toThrow(/non-whitespace/)
    await expect(
      client.messages.create({
        ...ask,
        messages: [ask.messages[0]!, { role: 'assistant', content: 'Sure, ' }],
      }),
    ).rejects.toThrow(/prefill/)
    const paused = await client.messages.create(ask)
    expect(paused.stop_reason).toBe('pause_turn')
    const next = await client.messages.create({
      ...ask,
      messages: [ask.messages[0]!, { role: 'assistant', content: paused.content as never }],
    })
    expect(next.content).toEqual([{ type: 'text', text: 'done' }])
  })

  it('without --strict, the same thinking change is accepted (the base rules only)', async () => {
    const { client } = await serve(thinkingTurn)
    expect(await secondRequest(client, (c) => [{ ...c[0], thinking: 'other plan' }, c[1]!])).toBe('accepted')
  })

  it('answers the first `times` requests of a turn with the scripted status and retry-after', async () => {
    const { client } = await serve({
      turns: [{ blocks: [{ text: 'finally' }], http: { status: 529, retryAfter: 3, times: 2 } }],
    })
    for (let i = 0; i < 2; i++) {
      const error = await client.messages.create(ask).catch((e: unknown) => e as APIError)
      expect(error).toBeInstanceOf(APIError)
      expect((error as APIError).status).toBe(529)
      expect((error as APIError).headers?.get('retry-after')).toBe('3')
    }
    const answer = await client.messages.create(ask)
    expect(answer.content).toEqual([{ type: 'text', text: 'finally' }])
  })
})
