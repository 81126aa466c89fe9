import { createServer } from 'node:net'
import { describe, expect, it, vi } from 'vitest'
import { createModelClient } from './model'
import { failure, request, useScriptedModels } from './test-fixtures/model-client'

/** The model client's failures and retry policy (model-errors.ts), end to end over HTTP. */

const serve = useScriptedModels()

describe('model client: failures and retries', () => {
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
    const reasons: string[] = []
    const req = request({ onRetry: (info) => reasons.push(info.reason) })
    const result = await createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(req)
    expect(result.content).toEqual([{ type: 'text', text: 'third' }])
    // The dropped stream had a connection (the API answered), so it was lost; not "unreachable".
    expect(reasons[1]).toBe('connection_lost')
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
      { onRequest: () => answered++ },
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
      turns: [{ blocks: [], httpStatus: 400, errorMessage: 'max_tokens: must be at most 64000' }],
    })
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(request()),
    )
    expect(error.kind).toBe('bad_request')
    expect(error.message).toContain('must be at most 64000')
    expect(model.requests).toHaveLength(1)
  })

  it('names a request over the context window (context_full) so the engine compacts instead of failing', async () => {
    const model = await serve({
      turns: [
        { blocks: [], httpStatus: 400, errorMessage: 'prompt is too long: 210000 tokens > 200000 maximum' },
      ],
    })
    const error = await failure(
      createModelClient({ baseUrl: model.baseUrl, retryBaseDelayMs: 5 }).streamTurn(request()),
    )
    expect(error.kind).toBe('context_full')
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
    // No connection was ever made: none is said to be lost.
    expect(retries).toEqual(['2 of 3: unreachable', '3 of 3: unreachable'])
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
