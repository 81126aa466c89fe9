import { APIError, type Anthropic } from '@anthropic-ai/sdk'
import type {
  MessageCreateParamsNonStreaming,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type Scenario } from './scenario'
import { startScriptedModel } from './scripted-model'
import { useTempDir } from '../test-fixtures/temp-dir'

import { ask, useScriptedClients } from './test-fixtures/scripted-client'
const dir = useTempDir('lanes-scripted-', 'all')
const serve = useScriptedClients()

/** Every raw event of one streamed request, and the error that ended it, if any. */
async function rawEvents(
  client: Anthropic,
  body: Omit<MessageCreateParamsNonStreaming, 'stream'> = ask,
): Promise<{ events: RawMessageStreamEvent[]; error?: unknown }> {
  const events: RawMessageStreamEvent[] = []
  try {
    const stream = await client.messages.create({ ...body, stream: true })
    for await (const event of stream) events.push(event)
    return { events }
  } catch (error) {
    return { events, error }
  }
}

function partialJsonOf(events: RawMessageStreamEvent[], index: number): string[] {
  return events.flatMap((e) =>
    e.type === 'content_block_delta' && e.index === index && e.delta.type === 'input_json_delta'
      ? [e.delta.partial_json]
      : [],
  )
}

describe('scripted model', () => {
  it('streams a tool_use turn and then a text turn that the real SDK assembles', async () => {
    const { client } = await serve({
      turns: [
        {
          blocks: [
            { text: 'Reading the sources.' },
            { tool: 'read_file', input: { path: 'src/a.ts', limit: 20 } },
          ],
          stop: 'tool_use',
        },
        { blocks: [{ text: 'All done.' }], stop: 'end_turn' },
      ],
    })
    const first = await client.messages.stream(ask).finalMessage()
    expect(first.stop_reason).toBe('tool_use')
    expect(first.content[0]).toMatchObject({ type: 'text', text: 'Reading the sources.' })
    expect(first.content[1]).toMatchObject({
      type: 'tool_use',
      name: 'read_file',
      input: { path: 'src/a.ts', limit: 20 },
    })
    const toolId = (first.content[1] as { id: string }).id
    expect(toolId).toMatch(/^toolu_[A-Za-z0-9_-]+$/)
    expect(first.usage.input_tokens).toBeGreaterThan(0)
    expect(first.usage.output_tokens).toBeGreaterThan(0)

    const second = await client.messages
      .stream({
        ...ask,
        messages: [
          ...ask.messages,
          {
            role: 'assistant',
            content: first.content.map((b) =>
              b.type === 'text' ? { type: 'text', text: b.text } : b,
            ) as never,
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolId, content: 'ok' }] },
        ],
      })
      .finalMessage()
    expect(second.stop_reason).toBe('end_turn')
    expect(second.content).toMatchObject([{ type: 'text', text: 'All done.' }])
  })

  it('sends the events in the order of the Messages API', async () => {
    const { client } = await serve({
      turns: [{ blocks: [{ text: 'hi' }, { tool: 'glob', input: { pattern: '**/*.ts' } }] }],
    })
    const { events, error } = await rawEvents(client)
    expect(error).toBeUndefined()
    const kinds = events
      .map((e) => e.type)
      .filter((t, i, all) => t !== 'content_block_delta' || all[i - 1] !== t)
    expect(kinds).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ])
    const start = events[0] as Extract<RawMessageStreamEvent, { type: 'message_start' }>
    expect(start.message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [],
    })
    expect(start.message.id).toMatch(/^msg_/)
    const delta = events.find((e) => e.type === 'message_delta') as Extract<
      RawMessageStreamEvent,
      { type: 'message_delta' }
    >
    // No stop given: a turn that calls a tool stops on tool_use.
    expect(delta.delta.stop_reason).toBe('tool_use')
  })

  it('answers a short end_turn text once the script is exhausted', async () => {
    const { client, model } = await serve({ turns: [{ blocks: [{ text: 'only turn' }], stop: 'end_turn' }] })
    await client.messages.stream(ask).finalMessage()
    const after = await client.messages.stream(ask).finalMessage()
    const again = await client.messages.stream(ask).finalMessage()
    for (const message of [after, again]) {
      expect(message.stop_reason).toBe('end_turn')
      expect(message.content).toHaveLength(1)
      expect(message.content[0]?.type).toBe('text')
    }
    expect(model.requests).toHaveLength(3)
  })

  it('streams rawInput verbatim, over several input_json_delta chunks', async () => {
    const raw = '{"command": "npm test",} // ünïcödé 🚀 \r\n "\\q" \ud800 {\'single\': 1}'
    const { client } = await serve({
      turns: [{ blocks: [{ tool: 'bash', rawInput: raw }], stop: 'tool_use' }],
    })
    const { events, error } = await rawEvents(client)
    expect(error).toBeUndefined()
    const chunks = partialJsonOf(events, 0)
    expect(chunks.length).toBeGreaterThan(3)
    expect(chunks.join('')).toBe(raw)
  })

  it('serializes input and splits it by tokens', async () => {
    const input = { path: 'notes/todo.md', content: 'line one\nline two\n', replace_all: false }
    const { client } = await serve({ turns: [{ blocks: [{ tool: 'write_file', input }] }] })
    const { events } = await rawEvents(client)
    const chunks = partialJsonOf(events, 0)
    expect(chunks.length).toBeGreaterThan(3)
    expect(JSON.parse(chunks.join(''))).toEqual(input)
  })

  it('cuts the last tool block mid-JSON on max_tokens, closes it as the real API does, and says max_tokens', async () => {
    const input = { path: 'big.txt', content: 'x'.repeat(400) }
    const { client } = await serve({
      turns: [{ blocks: [{ text: 'Writing.' }, { tool: 'write_file', input }], stop: 'max_tokens' }],
    })
    const { events, error } = await rawEvents(client)
    expect(error).toBeUndefined()
    const received = partialJsonOf(events, 1).join('')
    expect(JSON.stringify(input).startsWith(received)).toBe(true)
    expect(received.length).toBeGreaterThan(10)
    expect(received.length).toBeLessThan(JSON.stringify(input).length)
    expect(() => JSON.parse(received)).toThrow()
    expect(events.some((e) => e.type === 'content_block_stop' && e.index === 1)).toBe(true)
    const delta = events.find((e) => e.type === 'message_delta') as Extract<
      RawMessageStreamEvent,
      { type: 'message_delta' }
    >
    expect(delta.delta.stop_reason).toBe('max_tokens')
  })

  it('never cuts tool arguments into a prefix that parses as JSON', async () => {
    // Half of this is `{"a":1}`: valid JSON, which would look like a complete call.
    const raw = '{"a":1}       '
    const { client } = await serve({
      turns: [{ blocks: [{ tool: 'read_file', rawInput: raw }], stop: 'max_tokens' }],
    })
    const received = partialJsonOf((await rawEvents(client)).events, 0).join('')
    expect(raw.startsWith(received)).toBe(true)
    expect(() => JSON.parse(received)).toThrow()
  })

  it('cuts a last text block mid-text on max_tokens', async () => {
    const text = 'The quick brown fox jumps over the lazy dog and keeps running.'
    const { client } = await serve({ turns: [{ blocks: [{ text }], stop: 'max_tokens' }] })
    const message = await client.messages.stream(ask).finalMessage()
    expect(message.stop_reason).toBe('max_tokens')
    const got = (message.content[0] as { text: string }).text
    expect(text.startsWith(got)).toBe(true)
    expect(got.length).toBeGreaterThan(0)
    expect(got.length).toBeLessThan(text.length)
  })

  it('breaks the stream with an SSE overloaded_error after failAfterBlocks blocks', async () => {
    const { client } = await serve({
      turns: [
        {
          blocks: [
            { text: 'one' },
            { tool: 'read_file', input: { path: 'a' } },
            { tool: 'read_file', input: { path: 'b' } },
          ],
          stop: 'tool_use',
          failAfterBlocks: 1,
        },
      ],
    })
    const { events, error } = await rawEvents(client)
    expect(error).toBeInstanceOf(APIError)
    expect((error as APIError).type).toBe('overloaded_error')
    expect(events.filter((e) => e.type === 'content_block_stop')).toHaveLength(1)
    expect(events.some((e) => e.type === 'content_block_start' && e.index === 1)).toBe(false)
    expect(events.some((e) => e.type === 'message_stop')).toBe(false)
  })

  it('with failMidBlock, breaks halfway through the next block, which never closes', async () => {
    const { client } = await serve({
      turns: [
        {
          blocks: [
            { text: 'one' },
            { tool: 'bash', input: { command: 'npm run build --workspace packages/app' } },
          ],
          failAfterBlocks: 1,
          failMidBlock: true,
        },
      ],
    })
    const { events, error } = await rawEvents(client)
    expect(error).toBeInstanceOf(APIError)
    expect(events.some((e) => e.type === 'content_block_start' && e.index === 1)).toBe(true)
    expect(partialJsonOf(events, 1).join('').length).toBeGreaterThan(0)
    expect(events.some((e) => e.type === 'content_block_stop' && e.index === 1)).toBe(false)
  })

  it('drops the connection after closeAfterBlocks blocks, with what came before delivered', async () => {
    const { client } = await serve({
      turns: [{ blocks: [{ text: 'first block' }, { text: 'second block' }], closeAfterBlocks: 1 }],
    })
    const { events, error } = await rawEvents(client)
    expect(error).toBeDefined()
    expect(error).not.toBeInstanceOf(APIError)
    expect(events.filter((e) => e.type === 'content_block_stop')).toHaveLength(1)
  })

  it('answers a scripted HTTP status with an Anthropic error body and retry-after', async () => {
    const { client, model } = await serve({
      turns: [{ blocks: [], httpStatus: 529, retryAfter: 2 }, { blocks: [{ text: 'back' }] }],
    })
    const failed = await rawEvents(client)
    expect(failed.error).toBeInstanceOf(APIError)
    const err = failed.error as APIError
    expect(err.status).toBe(529)
    expect(err.type).toBe('overloaded_error')
    expect(err.headers?.get('retry-after')).toBe('2')
    // The failed request consumed its turn: the next one plays turn 2.
    const next = await client.messages.stream(ask).finalMessage()
    expect(next.content[0]).toMatchObject({ text: 'back' })
    expect(model.requests).toHaveLength(2)
  })

  it('records every request body as one JSON line, on disk before the answer starts', async () => {
    const recordFile = join(dir(), 'nested', 'record.jsonl')
    const { client } = await serve(
      { turns: [{ blocks: [{ text: 'a' }] }, { blocks: [{ text: 'b' }] }] },
      { recordFile },
    )
    const bodies = [
      { ...ask, system: 'sys', messages: [{ role: 'user' as const, content: 'first ünïcödé' }] },
      { ...ask, messages: [{ role: 'user' as const, content: 'second' }], temperature: 0 },
    ]
    const firstStream = await client.messages.create({ ...bodies[0]!, stream: true })
    // The response has started: the line is already there.
    const early = (await readFile(recordFile, 'utf8')).split('\n').filter(Boolean)
    expect(early).toHaveLength(1)
    for await (const _event of firstStream) {
      // drain
    }
    await client.messages.stream(bodies[1]!).finalMessage()
    const lines = (await readFile(recordFile, 'utf8')).split('\n').filter(Boolean)
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { ...bodies[0], stream: true },
      { ...bodies[1], stream: true },
    ])
  })

  it('refuses to start when the record file cannot be written', async () => {
    const blocker = join(dir(), 'a-file')
    await writeFile(blocker, '')
    await expect(
      startScriptedModel({ scenario: { turns: [] }, recordFile: join(blocker, 'under-a-file.jsonl') }),
    ).rejects.toThrow(/Cannot open the record file .*under-a-file\.jsonl/)
  })

  it('keeps the requests in memory, in arrival order', async () => {
    const { client, model } = await serve({ turns: [{ blocks: [{ text: 'a' }] }] })
    await client.messages.stream({ ...ask, system: 'one' }).finalMessage()
    await client.messages.stream({ ...ask, system: 'two' }).finalMessage()
    expect(model.requests.map((r) => (r as { system: string }).system)).toEqual(['one', 'two'])
  })

  it('paces the stream by tokensPerSecond after firstTokenMs', async () => {
    // 100 tokens of 4 characters at 250 tokens/s: about 0.4 s, after a 200 ms first-token wait.
    const text = 'abcd'.repeat(100)
    const { client } = await serve({
      turns: [{ blocks: [{ text }], tokensPerSecond: 250, firstTokenMs: 200 }],
    })
    const startedAt = performance.now()
    let firstTextAt = 0
    const { events } = await (async () => {
      const events: RawMessageStreamEvent[] = []
      const stream = await client.messages.create({ ...ask, stream: true })
      for await (const event of stream) {
        if (event.type === 'content_block_delta' && firstTextAt === 0) firstTextAt = performance.now()
        events.push(event)
      }
      return { events }
    })()
    const total = performance.now() - startedAt
    expect(firstTextAt - startedAt).toBeGreaterThanOrEqual(180)
    expect(total).toBeGreaterThanOrEqual(550)
    // Generous: a loaded CI machine may be slow, but not ten times slower.
    expect(total).toBeLessThan(6000)
    expect(events.filter((e) => e.type === 'content_block_delta').length).toBeGreaterThan(5)
    const out = events.find((e) => e.type === 'message_delta') as Extract<
      RawMessageStreamEvent,
      { type: 'message_delta' }
    >
    expect(out.usage.output_tokens).toBe(100)
  })

  it('streams an unpaced turn without waiting', async () => {
    const { client } = await serve({ turns: [{ blocks: [{ text: 'abcd'.repeat(2000) }] }] })
    const startedAt = performance.now()
    await client.messages.stream(ask).finalMessage()
    // 2000 tokens at 250 tokens/s would take 8 s.
    expect(performance.now() - startedAt).toBeLessThan(4000)
  })

  it('gives every tool call a distinct, stable id, and honours a scripted id', async () => {
    const scenario: Scenario = {
      turns: [
        {
          blocks: [
            { tool: 'read_file', input: { path: 'a' } },
            { tool: 'read_file', input: { path: 'b' } },
          ],
        },
        {
          blocks: [
            { tool: 'read_file', input: { path: 'c' } },
            { tool: 'glob', input: { pattern: '*' }, id: 'toolu_custom' },
          ],
        },
      ],
    }
    const idsOf = async (): Promise<string[]> => {
      const { client } = await serve(scenario, {})
      const ids: string[] = []
      const first = await client.messages.create({ ...ask, stream: false })
      const second = await client.messages.create({ ...ask, stream: false })
      for (const m of [first, second]) for (const b of m.content) if (b.type === 'tool_use') ids.push(b.id)
      return ids
    }
    const ids = await idsOf()
    expect(new Set(ids).size).toBe(4)
    expect(ids[3]).toBe('toolu_custom')
    expect(await idsOf()).toEqual(ids)
  })

  it('answers stream: false with the whole message', async () => {
    const { client } = await serve({
      turns: [
        {
          blocks: [
            { text: 'Hi.' },
            { tool: 'grep', input: { pattern: 'TODO' } },
            { tool: 'bash', rawInput: '{bad' },
          ],
        },
      ],
    })
    const message = await client.messages.create({ ...ask, stream: false })
    expect(message.stop_reason).toBe('tool_use')
    expect(message.content).toMatchObject([
      { type: 'text', text: 'Hi.' },
      { type: 'tool_use', name: 'grep', input: { pattern: 'TODO' } },
      { type: 'tool_use', name: 'bash', input: {} },
    ])
  })

  it('refuses, as the real API does, a tool_use without its tool_result, without consuming a turn', async () => {
    const { client, model } = await serve({ turns: [{ blocks: [{ text: 'turn one' }] }] })
    const bad = {
      ...ask,
      messages: [
        { role: 'user' as const, content: 'go' },
        {
          role: 'assistant' as const,
          content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'glob', input: {} }],
        },
        { role: 'user' as const, content: [{ type: 'text' as const, text: 'forgot the result' }] },
      ],
    }
    const { error } = await rawEvents(client, bad)
    expect(error).toBeInstanceOf(APIError)
    expect((error as APIError).status).toBe(400)
    expect((error as APIError).message).toContain('toolu_1')
    expect(model.requests).toHaveLength(1)
    const ok = await client.messages.stream(ask).finalMessage()
    expect(ok.content[0]).toMatchObject({ text: 'turn one' })
  })

  it('refuses empty text blocks and more than four cache_control blocks', async () => {
    const { client } = await serve({ turns: [] })
    const empty = await rawEvents(client, {
      ...ask,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'text', text: '' }] as never },
        { role: 'user', content: 'again' },
      ],
    } as never)
    expect((empty.error as APIError).message).toContain('non-empty')
    const marker = { cache_control: { type: 'ephemeral' } }
    const tooMany = await rawEvents(client, {
      ...ask,
      system: [1, 2, 3, 4, 5].map((n) => ({ type: 'text', text: `part ${n}`, ...marker })),
    } as never)
    expect((tooMany.error as APIError).message).toContain('maximum of 4')
  })

  it('reports prompt caching: the marked prefix is written once, then read', async () => {
    const { client } = await serve({ turns: [{ blocks: [{ text: 'a' }] }, { blocks: [{ text: 'b' }] }] })
    const body = {
      ...ask,
      system: [
        { type: 'text' as const, text: 'S'.repeat(4000), cache_control: { type: 'ephemeral' as const } },
      ],
    }
    const first = await client.messages.stream(body).finalMessage()
    const second = await client.messages.stream(body).finalMessage()
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(900)
    expect(first.usage.cache_read_input_tokens).toBe(0)
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens)
    expect(second.usage.cache_creation_input_tokens).toBe(0)
  })

  it('answers unknown paths with a not_found_error', async () => {
    const { model } = await serve({ turns: [] })
    const res = await fetch(`${model.baseUrl}/v1/models`)
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('not_found_error')
  })

  it('stops streaming when the client goes away, and close() ends a stream in progress', async () => {
    const { client, model } = await serve({
      turns: [{ blocks: [{ text: 'abcd'.repeat(2000) }], tokensPerSecond: 50 }],
    })
    const controller = new AbortController()
    const stream = await client.messages.create({ ...ask, stream: true }, { signal: controller.signal })
    let deltas = 0
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && ++deltas === 2) controller.abort()
    }
    expect(deltas).toBe(2)
    const startedAt = performance.now()
    await model.close()
    await model.close()
    expect(performance.now() - startedAt).toBeLessThan(2000)
  })

  it('refuses an invalid scenario with a clear message', async () => {
    await expect(
      startScriptedModel({ scenario: { turns: [{ blocks: [], stop: 'sideways' }] } as never }),
    ).rejects.toThrow(/turns\[0\]\.stop/)
  })
})
