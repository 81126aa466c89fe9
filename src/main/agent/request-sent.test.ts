import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { SENT_GRACE_MS, sentSignal } from './request-sent'

/** When a model request counts as gone out (what waits for it, the MCP servers' start, then begins). */
describe('sentSignal', () => {
  let server: Server | undefined
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())))

  /** A server that reads each request and never answers it: only the body's sending can tell. */
  async function silent(): Promise<{ url: string; got: Promise<number> }> {
    let gotAt!: (t: number) => void
    const got = new Promise<number>((resolve) => (gotAt = resolve))
    server = createServer((req) => {
      req.resume()
      req.on('end', () => gotAt(performance.now()))
    })
    server.keepAliveTimeout = 1
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got }
  }

  it('tells once, a moment after the body went out, when no answer comes', async () => {
    const { url, got } = await silent()
    const told: number[] = []
    const signal = sentSignal(url, () => told.push(performance.now()))
    const controller = new AbortController()
    const request = fetch(`${url}/v1/messages`, { method: 'POST', body: '{}', signal: controller.signal })
    const arrived = await got
    expect(told).toEqual([])
    await new Promise((r) => setTimeout(r, SENT_GRACE_MS * 3))
    expect(told).toHaveLength(1)
    expect(told[0]).toBeGreaterThanOrEqual(arrived)
    signal.answered()
    signal.ended()
    expect(told).toHaveLength(1)
    controller.abort()
    await request.catch(() => undefined)
  })

  it('tells at once when the API answers or the attempt ends; a request elsewhere does not count', async () => {
    const { url, got } = await silent()
    const told: string[] = []
    const signal = sentSignal('http://127.0.0.1:1', () => told.push('other'))
    const controller = new AbortController()
    const request = fetch(`${url}/v1/messages`, { method: 'POST', body: '{}', signal: controller.signal })
    await got
    await new Promise((r) => setTimeout(r, SENT_GRACE_MS * 2))
    expect(told).toEqual([])
    signal.ended()
    expect(told).toEqual(['other'])
    const answered = sentSignal(url, () => told.push('answered'))
    answered.answered()
    expect(told).toEqual(['other', 'answered'])
    controller.abort()
    await request.catch(() => undefined)
  })
})
