import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createModelClient, DEFAULT_MODEL, type TurnRequest } from './model'
import { argsRaw, loadCorpus, type ArgsCase } from '../test-fixtures/corpus'
import { useTempDir } from '../test-fixtures/temp-dir'
import { request, useScriptedModels } from './test-fixtures/model-client'

const dir = useTempDir('lanes-model-', 'all')
const serve = useScriptedModels()

describe('model client', () => {
  it('reports text, tool starts, argument chunks and block stops in stream order', async () => {
    const raw = '{"command": "npm test",}'
    const model = await serve({
      turns: [
        {
          blocks: [
            { text: 'Reading the sources.' },
            { tool: 'read_file', input: { path: 'src/a.ts' } },
            { tool: 'bash', rawInput: raw },
          ],
          stop: 'tool_use',
        },
      ],
    })
    const client = createModelClient({ baseUrl: model.baseUrl })
    const req = request()
    const result = await client.streamTurn(req)

    // Collapse runs of the same event kind on the same block: the chunking itself is the server's business.
    const shape = req.events.map((e) => `${e.type}@${e.index}`).filter((s, i, all) => s !== all[i - 1])
    expect(shape).toEqual([
      'text@0',
      'block_stop@0',
      'tool_start@1',
      'tool_input@1',
      'block_stop@1',
      'tool_start@2',
      'tool_input@2',
      'block_stop@2',
    ])
    const text = req.events.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join('')
    expect(text).toBe('Reading the sources.')
    const stops = req.events.filter((e) => e.type === 'block_stop')
    expect(stops[0]).toEqual({ type: 'block_stop', index: 0 })
    expect(stops[1]).toMatchObject({ index: 1, name: 'read_file', rawInput: '{"path":"src/a.ts"}' })
    expect(stops[2]).toMatchObject({ index: 2, name: 'bash', rawInput: raw })
    const starts = req.events.filter((e) => e.type === 'tool_start')
    expect(stops[1]).toMatchObject({ id: (starts[0] as { id: string }).id })

    expect(result.stopReason).toBe('tool_use')
    expect(result.content).toEqual([
      { type: 'text', text: 'Reading the sources.' },
      {
        type: 'tool_use',
        id: expect.stringMatching(/^toolu_/),
        name: 'read_file',
        input: { path: 'src/a.ts' },
      },
      // Malformed: the conversation gets {}, the raw text stays in toolUses for the engine (DESIGN 3.1).
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'bash', input: {} },
    ])
    expect(result.toolUses).toEqual([
      { id: expect.any(String), name: 'read_file', rawInput: '{"path":"src/a.ts"}', index: 1, closed: true },
      { id: expect.any(String), name: 'bash', rawInput: raw, index: 2, closed: true },
    ])
    expect(result.usage.inputTokens).toBeGreaterThan(0)
    expect(result.usage.outputTokens).toBeGreaterThan(0)
  })

  it('keeps every hostile argument text exactly as sent, and never fails the turn', async () => {
    const own = [
      '{"path": "src/index.ts",}',
      "{'path': 'a.py', 'content': 'print(\"it's\")'}",
      '{"path": "a", "path": "b"}',
      '{"path": "trunc',
      '',
      'not json at all',
      '{"a": "\u0000\u001b[31m\u2028\ud800"}',
      `{"x": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
    ]
    const corpus = loadCorpus<ArgsCase>('args-sample').map(argsRaw)
    const raws = [...own, ...corpus]
    const model = await serve({
      turns: [{ blocks: raws.map((rawInput) => ({ tool: 'read_file', rawInput })) }],
    })
    const req = request()
    const result = await createModelClient({ baseUrl: model.baseUrl }).streamTurn(req)
    expect(result.toolUses.map((u) => u.rawInput)).toEqual(raws)
    expect(req.events.flatMap((e) => (e.type === 'block_stop' ? [e.rawInput] : []))).toEqual(raws)
    for (const block of result.content) {
      if (block.type !== 'tool_use') continue
      expect(typeof block.input === 'object' && !Array.isArray(block.input)).toBe(true)
      // Whatever was sent, the conversation content can be serialized again.
      expect(() => JSON.stringify(block)).not.toThrow()
    }
  })

  it('marks the system prompt, the last tool and the last user messages for prompt caching', async () => {
    const recordFile = join(dir(), 'cache.jsonl')
    const model = await serve({ turns: [] }, { recordFile })
    await createModelClient({ baseUrl: model.baseUrl }).streamTurn(
      request({
        messages: [
          { role: 'user', content: 'first task' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a' } }],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_a', content: 'text of a' },
              { type: 'text', text: 'and a note', cache_control: { type: 'ephemeral' } },
            ],
          },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'b' } }],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_b', content: 'text of b' }] },
        ],
      }),
    )
    const body = JSON.parse((await readFile(recordFile, 'utf8')).trim()) as {
      model: string
      stream: boolean
      system: { text: string; cache_control?: unknown }[]
      tools: { name: string; cache_control?: unknown }[]
      messages: { content: string | { cache_control?: unknown }[] }[]
    }
    expect(body.model).toBe(DEFAULT_MODEL)
    expect(body.stream).toBe(true)
    expect(body.system).toEqual([
      { type: 'text', text: 'You are a test.', cache_control: { type: 'ephemeral' } },
    ])
    expect(body.tools.map((t) => t.cache_control)).toEqual([undefined, { type: 'ephemeral' }])
    const marked = body.messages.flatMap((m, i) =>
      typeof m.content === 'string'
        ? []
        : m.content.flatMap((b, j) => (b.cache_control ? [`${i}.${j}`] : [])),
    )
    // The last two user messages, on their last block; the caller's own marker is replaced, not added.
    expect(marked).toEqual(['2.1', '4.0'])
  })

  it('leaves the caller’s messages untouched', async () => {
    const model = await serve({ turns: [] })
    const messages: TurnRequest['messages'] = [{ role: 'user', content: [{ type: 'text', text: 'task' }] }]
    const before = JSON.stringify(messages)
    await createModelClient({ baseUrl: model.baseUrl }).streamTurn(request({ messages }))
    expect(JSON.stringify(messages)).toBe(before)
  })

  it('reports a call cut by max_tokens as closed, with stop reason max_tokens and input {}', async () => {
    const model = await serve({
      turns: [
        { blocks: [{ tool: 'bash', input: { command: 'npm run lint -- --fix' } }], stop: 'max_tokens' },
      ],
    })
    const result = await createModelClient({ baseUrl: model.baseUrl }).streamTurn(request())
    expect(result.stopReason).toBe('max_tokens')
    expect(result.toolUses).toHaveLength(1)
    expect(result.toolUses[0]?.closed).toBe(true)
    expect(() => JSON.parse(result.toolUses[0]?.rawInput ?? '')).toThrow()
    expect(result.content).toEqual([{ type: 'tool_use', id: expect.any(String), name: 'bash', input: {} }])
  })

  it('records usage with cache reads and writes', async () => {
    const model = await serve({ turns: [{ blocks: [{ text: 'a' }] }, { blocks: [{ text: 'b' }] }] })
    const client = createModelClient({ baseUrl: model.baseUrl })
    const system = 'Rules. '.repeat(600)
    const first = await client.streamTurn(request({ system }))
    const second = await client.streamTurn(request({ system }))
    expect(first.usage.cacheCreationTokens).toBeGreaterThan(500)
    expect(second.usage.cacheReadTokens).toBeGreaterThan(500)
    expect(second.usage.outputTokens).toBeGreaterThan(0)
  })

  it('lets an exception from onEvent through as it is, without retrying', async () => {
    const model = await serve({ turns: [{ blocks: [{ text: 'boom' }] }, { blocks: [{ text: 'again' }] }] })
    const bug = new Error('listener bug')
    const req = request({
      onEvent: () => {
        throw bug
      },
    })
    await expect(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(req),
    ).rejects.toBe(bug)
    expect(model.requests).toHaveLength(1)
  })

  it('produces content that the API accepts back in the next request', async () => {
    const model = await serve({
      turns: [
        {
          blocks: [
            { text: '' },
            { tool: 'read_file', input: { path: 'a' } },
            { tool: 'bash', rawInput: '{oops' },
          ],
        },
        { blocks: [{ text: 'Done.' }] },
      ],
    })
    const client = createModelClient({ baseUrl: model.baseUrl })
    const first = await client.streamTurn(request())
    const messages: TurnRequest['messages'] = [
      { role: 'user', content: 'Do the task.' },
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: first.toolUses.map((u) => ({
          type: 'tool_result' as const,
          tool_use_id: u.id,
          content: 'result',
        })),
      },
    ]
    // The scripted model refuses what the real API refuses (empty text blocks, unpaired tool_use).
    const second = await client.streamTurn(request({ messages }))
    expect(second.content).toEqual([{ type: 'text', text: 'Done.' }])
  })
})

describe('model client: thinking, stop details and requests the API accepts', () => {
  it('keeps thinking blocks whole and in place, reports each as it closes, and ignores pings', async () => {
    const model = await serve({
      turns: [
        {
          blocks: [
            { thinking: 'First, the plan.', signature: 'sig-a' },
            { text: 'Reading.' },
            { redactedThinking: 'opaque-data' },
            { tool: 'read_file', input: { path: 'a.ts' } },
          ],
          ping: true,
        },
      ],
    })
    const req = request()
    const result = await createModelClient({ baseUrl: model.baseUrl }).streamTurn(req)
    expect(result.content.map((b) => b.type)).toEqual(['thinking', 'text', 'redacted_thinking', 'tool_use'])
    expect(result.content[0]).toEqual({ type: 'thinking', thinking: 'First, the plan.', signature: 'sig-a' })
    expect(result.content[2]).toEqual({ type: 'redacted_thinking', data: 'opaque-data' })
    const thinking = req.events.filter((e) => e.type === 'thinking')
    expect(thinking.map((e) => e.index)).toEqual([0, 2])
  })

  it('drops a thinking block that never got its signature (cut by the token limit)', async () => {
    const model = await serve({
      turns: [
        {
          blocks: [{ thinking: 'A long chain of thought that is cut', signature: 'sig' }],
          stop: 'max_tokens',
        },
      ],
    })
    const result = await createModelClient({ baseUrl: model.baseUrl }).streamTurn(request())
    expect(result.content).toEqual([])
    expect(result.stopReason).toBe('max_tokens')
  })

  it('reads a refusal’s stop_details, and passes a stop reason it does not know through by name', async () => {
    const model = await serve({
      turns: [
        {
          blocks: [{ text: 'Hello..' }],
          stop: 'refusal',
          stopDetails: { category: 'cyber', explanation: 'Declined: it could enable cyber harm.' },
        },
        { blocks: [{ text: 'x' }], rawStop: 'compaction' },
      ],
    })
    const client = createModelClient({ baseUrl: model.baseUrl })
    const refused = await client.streamTurn(request())
    expect(refused.stopReason).toBe('refusal')
    expect(refused.stopDetails).toEqual({
      category: 'cyber',
      explanation: 'Declined: it could enable cyber harm.',
    })
    const newer = await client.streamTurn(request())
    expect(newer.stopReason).toBe('compaction')
    expect(newer.stopDetails).toBeNull()
  })

  it('sends no whitespace-only text and maps invalid tool ids on both sides of a pair', async () => {
    const recordFile = join(dir(), 'sanitize.jsonl')
    const model = await serve({ turns: [{ blocks: [{ text: 'ok' }] }] }, { recordFile, strict: true })
    await createModelClient({ baseUrl: model.baseUrl }).streamTurn(
      request({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'go' },
              { type: 'text', text: ' \n ' },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: '\n' },
              { type: 'tool_use', id: 'call:1.2', name: 'read_file', input: { path: 'a' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call:1.2', content: 'a' }] },
        ],
      }),
    )
    const sent = JSON.parse(readFileSync(recordFile, 'utf8').trim()) as {
      messages: { content: { type: string; id?: string; tool_use_id?: string; text?: string }[] }[]
    }
    expect(sent.messages[0]!.content.map((b) => b.text)).toEqual(['go'])
    const use = sent.messages[1]!.content
    expect(use.map((b) => b.type)).toEqual(['tool_use'])
    expect(use[0]!.id).toMatch(/^call_1_2_[0-9a-f]{12}$/)
    expect(sent.messages[2]!.content[0]!.tool_use_id).toBe(use[0]!.id)
  })
})

describe('model client: streams the documentation allows but this client does not know', () => {
  it('ignores unknown events, unknown delta types and unknown blocks, and keeps the rest', async () => {
    const { createServer: createHttpServer } = await import('node:http')
    const sse = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`
    const server = createHttpServer((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(
        [
          sse('message_start', {
            type: 'message_start',
            message: {
              id: 'm',
              type: 'message',
              role: 'assistant',
              content: [],
              model: 'x',
              usage: { input_tokens: 3, output_tokens: 1 },
            },
          }),
          sse('compaction_notice', { type: 'compaction_notice', detail: 'newer than this client' }),
          sse('content_block_start', {
            type: 'content_block_start',
            index: 0,
            content_block: { type: 'text', text: '' },
          }),
          sse('content_block_delta', {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'text_delta', text: 'Kept.' },
          }),
          sse('content_block_delta', {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'citations_delta', citation: { type: 'char_location' } },
          }),
          sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
          sse('content_block_start', {
            type: 'content_block_start',
            index: 1,
            content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} },
          }),
          sse('content_block_stop', { type: 'content_block_stop', index: 1 }),
          sse('message_delta', {
            type: 'message_delta',
            delta: { stop_reason: 'end_turn' },
            usage: { output_tokens: 4 },
          }),
          sse('message_stop', { type: 'message_stop' }),
        ].join(''),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    try {
      const result = await createModelClient({ baseUrl: `http://127.0.0.1:${port}` }).streamTurn(request())
      expect(result.content).toEqual([{ type: 'text', text: 'Kept.' }])
      expect(result.stopReason).toBe('end_turn')
      expect(result.usage.outputTokens).toBe(4)
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
