import { existsSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  createModelClient,
  DEFAULT_MODEL,
  ModelError,
  type StreamEvent,
  type ToolDefinition,
  type TurnRequest,
} from './model'
import type { Scenario } from './scenario'
import { startScriptedModel, type ScriptedModel } from './scripted-model'
import { useTempDir } from '../test-fixtures/temp-dir'
import { rejectionOf } from '../test-fixtures/rejection'

const dir = useTempDir('lanes-model-', 'all')
const servers: ScriptedModel[] = []

afterEach(async () => {
  vi.unstubAllEnvs()
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const tools: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Read a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'bash',
    description: 'Run a command.',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
]

async function serve(scenario: Scenario, onRequest?: () => void): Promise<ScriptedModel> {
  const model = await startScriptedModel({ scenario, ...(onRequest ? { onRequest } : {}) })
  servers.push(model)
  return model
}

function request(overrides: Partial<TurnRequest> = {}): TurnRequest & { events: StreamEvent[] } {
  const events: StreamEvent[] = []
  return {
    system: 'You are a test.',
    tools,
    messages: [{ role: 'user', content: 'Do the task.' }],
    signal: new AbortController().signal,
    onEvent: (e) => events.push(e),
    events,
    ...overrides,
  }
}

const failure = (promise: Promise<unknown>): Promise<ModelError> => rejectionOf(promise, ModelError)

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
    const corpusFile = fileURLToPath(new URL('../../../../shared/corpus/args-sample.json', import.meta.url))
    const corpus = existsSync(corpusFile)
      ? (
          JSON.parse(readFileSync(corpusFile, 'utf8')) as {
            raw: string | null
            raw_build?: [string, number][]
          }[]
        ).map((c) => c.raw ?? (c.raw_build ?? []).map(([segment, count]) => segment.repeat(count)).join(''))
      : []
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

  it('retries 529, 500 and 429 before any content, then succeeds', async () => {
    const model = await serve({
      turns: [
        { blocks: [], httpStatus: 529 },
        { blocks: [], httpStatus: 500 },
        { blocks: [], httpStatus: 429 },
        { blocks: [{ text: 'finally' }], stop: 'end_turn' },
      ],
    })
    const retries: string[] = []
    const client = createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 })
    const result = await client.streamTurn(request({ onRetry: (info) => retries.push(info.error.kind) }))
    expect(result.content).toEqual([{ type: 'text', text: 'finally' }])
    expect(model.requests).toHaveLength(4)
    expect(retries).toEqual(['overloaded', 'server', 'rate_limit'])
  })

  it('retries an SSE error and a dropped connection that come before any content', async () => {
    const model = await serve({
      turns: [
        { blocks: [{ text: 'never seen' }], failAfterBlocks: 0 },
        { blocks: [{ text: 'never seen either' }], closeAfterBlocks: 0 },
        { blocks: [{ text: 'third' }] },
      ],
    })
    const req = request()
    const result = await createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(req)
    expect(result.content).toEqual([{ type: 'text', text: 'third' }])
    expect(
      req.events
        .filter((e) => e.type === 'text')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('third')
    expect(model.requests).toHaveLength(3)
  })

  it('waits as long as retry-after says', async () => {
    const model = await serve({
      turns: [{ blocks: [], httpStatus: 429, retryAfter: 1 }, { blocks: [{ text: 'ok' }] }],
    })
    const startedAt = performance.now()
    const delays: number[] = []
    await createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(
      request({ onRetry: (info) => delays.push(info.delayMs) }),
    )
    expect(delays).toEqual([1000])
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(950)
  })

  it('gives up after maxRetries with an error that says the API is overloaded', async () => {
    const model = await serve({ turns: [1, 2, 3, 4].map(() => ({ blocks: [], httpStatus: 529 })) })
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, maxRetries: 2, retryBaseDelayMs: 5 }).streamTurn(request()),
    )
    expect(error.kind).toBe('overloaded')
    expect(error.status).toBe(529)
    expect(error.message).toMatch(/overloaded/i)
    expect(error.message).toMatch(/Tried 3 times/)
    expect(model.requests).toHaveLength(3)
  })

  it('does not retry once content began: the error carries what was received', async () => {
    const model = await serve({
      turns: [
        {
          blocks: [
            { text: 'Starting.' },
            { tool: 'read_file', input: { path: 'a.ts' } },
            { tool: 'bash', input: { command: 'npm run build' } },
          ],
          failAfterBlocks: 2,
          failMidBlock: true,
        },
        { blocks: [{ text: 'a retry would have played this' }] },
      ],
    })
    const req = request()
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(req),
    )
    expect(model.requests).toHaveLength(1)
    expect(error.kind).toBe('overloaded')
    expect(error.message).toMatch(/broke off/)
    expect(error.partial?.content[0]).toEqual({ type: 'text', text: 'Starting.' })
    expect(error.partial?.toolUses.map((u) => [u.name, u.closed])).toEqual([
      ['read_file', true],
      ['bash', false],
    ])
    // The engine saw the first call close, and never a stop for the cut one.
    expect(req.events.filter((e) => e.type === 'block_stop').map((e) => e.index)).toEqual([0, 1])
  })

  it('reports a connection dropped mid-answer as a network error with the partial turn', async () => {
    const model = await serve({
      turns: [
        { blocks: [{ text: 'Partial answer' }, { text: 'lost' }], closeAfterBlocks: 1 },
        { blocks: [{ text: 'x' }] },
      ],
    })
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(request()),
    )
    expect(error.kind).toBe('network')
    expect(error.partial?.content).toEqual([{ type: 'text', text: 'Partial answer' }])
    expect(model.requests).toHaveLength(1)
  })

  it('stops at once when aborted mid-stream, and the HTTP request is cancelled', async () => {
    let answered = 0
    const model = await serve(
      { turns: [{ blocks: [{ text: 'word '.repeat(400) }], tokensPerSecond: 20 }] },
      () => answered++,
    )
    const controller = new AbortController()
    const req = request({
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'text') controller.abort()
      },
    })
    const startedAt = performance.now()
    const error = await failure(createModelClient({ baseUrl: model.baseUrl }).streamTurn(req))
    expect(error.kind).toBe('aborted')
    expect(error.name).toBe('AbortError')
    // The stream would take 25 s.
    expect(performance.now() - startedAt).toBeLessThan(3000)
    // The server's stream ended because the client went away.
    await vi.waitFor(() => expect(answered).toBe(1), { timeout: 3000 })
  })

  it('stops at once when aborted while waiting to retry', async () => {
    const model = await serve({ turns: [{ blocks: [], httpStatus: 529, retryAfter: 30 }] })
    const controller = new AbortController()
    const req = request({
      signal: controller.signal,
      onRetry: () => setTimeout(() => controller.abort(), 20),
    })
    const startedAt = performance.now()
    const error = await failure(createModelClient({ baseUrl: model.baseUrl }).streamTurn(req))
    expect(error.kind).toBe('aborted')
    expect(performance.now() - startedAt).toBeLessThan(3000)
  })

  it('says the API key was refused on 401, without retrying', async () => {
    const model = await serve({ turns: [{ blocks: [], httpStatus: 401 }, { blocks: [{ text: 'no' }] }] })
    const error = await failure(
      createModelClient({ apiKey: 'sk-wrong', baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(
        request(),
      ),
    )
    expect(error.kind).toBe('auth')
    expect(error.message).toMatch(/API key was refused/)
    expect(model.requests).toHaveLength(1)
  })

  it('does not retry a bad request, and passes on what the API said', async () => {
    const model = await serve({
      turns: [
        { blocks: [], httpStatus: 400, errorMessage: 'prompt is too long: 210000 tokens > 200000 maximum' },
      ],
    })
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(request()),
    )
    expect(error.kind).toBe('bad_request')
    expect(error.message).toContain('prompt is too long')
    expect(model.requests).toHaveLength(1)
  })

  it('explains that no API key is set, without sending anything', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', '')
    vi.stubEnv('ANTHROPIC_BASE_URL', '')
    const error = await failure(createModelClient({}).streamTurn(request()))
    expect(error.kind).toBe('auth')
    expect(error.message).toMatch(/ANTHROPIC_API_KEY/)
    expect(error.message).toMatch(/Settings/)
  })

  it('reports an unreachable server as a network error after retrying', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    await new Promise<void>((resolve) => blocker.close(() => resolve()))
    const retries: string[] = []
    const error = await failure(
      createModelClient({
        baseUrl: `http://127.0.0.1:${port}`,
        maxRetries: 2,
        retryBaseDelayMs: 5,
      }).streamTurn(
        request({ onRetry: (info) => retries.push(`${info.attempt} of ${info.of}: ${info.reason}`) }),
      ),
    )
    expect(error.kind).toBe('network')
    expect(error.message).toMatch(/Could not reach the model API at http:\/\/127\.0\.0\.1/)
    expect(error.message).toMatch(/connection refused/)
    // Numbered as the user reads them: the attempt about to be made, of how many in all.
    expect(retries).toEqual(['2 of 3: connection_lost', '3 of 3: connection_lost'])
  })

  it('marks the system prompt, the last tool and the last user messages for prompt caching', async () => {
    const recordFile = join(dir(), 'cache.jsonl')
    const model = await startScriptedModel({ scenario: { turns: [] }, recordFile })
    servers.push(model)
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
    const model = await startScriptedModel({
      scenario: { turns: [{ blocks: [{ text: 'ok' }] }] },
      recordFile,
      strict: true,
    })
    servers.push(model)
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

  it('tells each retry with the attempt about to be made and why; an error event before content counts', async () => {
    const model = await serve({
      turns: [{ blocks: [{ text: 'back' }], http: { status: 429, times: 1 }, errorBeforeContent: true }],
    })
    const retries: string[] = []
    const result = await createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 1 }).streamTurn(
      request({ onRetry: (i) => retries.push(`${i.attempt}/${i.of} ${i.reason}`) }),
    )
    expect(result.content).toEqual([{ type: 'text', text: 'back' }])
    expect(retries).toEqual(['2/6 rate_limited', '3/6 overloaded'])
  })

  it('does not wait out a long retry-after: the error says when to try again', async () => {
    const model = await serve({ turns: [{ blocks: [], http: { status: 529, retryAfter: 7200 } }] })
    const before = Date.now()
    const error = await failure(createModelClient({ baseUrl: model.baseUrl }).streamTurn(request()))
    expect(error.kind).toBe('overloaded')
    expect(error.retryAt).toBeGreaterThanOrEqual(before + 7_200_000)
    expect(error.message).toMatch(/try again after \d\d:\d\d \(continue the run then\)/)
  })
})

describe('model client: a spent monthly limit', () => {
  it('is not retried: waiting does not lift it', async () => {
    const model = await serve({
      turns: [
        { blocks: [{ text: 'never' }], http: { status: 429, errorCode: 'enforced_spend_limit_reached' } },
      ],
    })
    const retries: unknown[] = []
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 1 }).streamTurn(
        request({ onRetry: (info) => retries.push(info) }),
      ),
    )
    expect(error.retryable).toBe(false)
    expect(error.message).toMatch(/spend limit/)
    expect(retries).toEqual([])
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
